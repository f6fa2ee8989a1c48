import DBusCore
import LocalAuthShared

/// What the Enroller uses of the readers (Enroller.swift, EnrollerChips.swift)
/// beyond the one enroll operation (Enrollment.swift): which reader serves a
/// user, holding one for a chip's maintenance (the gate, whose session
/// does libfprint's operations on the chip), and the EnrollStatus signal. The service gives the real
/// ones (EnrollmentWiring.swift); the unit tests give fakes.
@ServiceActor
protocol EnrollerSeams: ReaderLookup {
    /// The usable readers that keep prints on their chip.
    var chipReaders: [Readers.Identity] { get }
    func storesPrints(_ reader: Readers.Identity) -> Bool
    /// The reader refuses a finger it holds already (its enroll fails "duplicate").
    func checksDuplicates(_ reader: Readers.Identity) -> Bool

    // The reader queue (SensorQueue) and holding a reader.
    /// Whether `sender` is enrolling now.
    func isEnrolling(_ sender: String) -> Bool
    /// The one way to hold a reader: a chip's maintenance (`withReader`) goes through it.
    var gate: ReaderGate { get }

    // The bus.
    /// EnrollStatus(progress, stage, stages), unicast to the enrolling caller.
    func emitEnrollStatus(to destination: String, _ progress: EnrollProgress, stage: UInt32, stages: UInt32)
}

/// The enrolled prints the Enroller reads, writes and deletes (PrintStore).
@ServiceActor
protocol EnrollerPrints {
    /// The prints of `uid` offered on `reader` (both sources).
    func prints(of uid: UInt32, for reader: Readers.Identity) -> [PrintStore.StoredPrint]
    /// Every print of `uid`, each source and reader.
    func allPrints(of uid: UInt32) -> [PrintStore.StoredPrint]
    /// Every account's prints on `reader`.
    func everyPrint(on reader: Readers.Identity) -> [PrintStore.StoredPrint]
    /// Whether this service wrote `stored` and may delete it.
    func isOurs(_ stored: PrintStore.StoredPrint) -> Bool
    func save(_ print: GObjectRef, finger: FingerName, uid: UInt32, reader: Readers.Identity) throws -> PrintFile
    /// Deletes our files of `finger` of `uid`; false: there were none.
    func delete(_ finger: FingerName, uid: UInt32) throws -> Bool
    func deleteAll(uid: UInt32) throws -> Int
}
