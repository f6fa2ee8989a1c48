import DBusCore
@testable import LocalAuthService
import LocalAuthShared
import XCTest

/// The readers as the Enroller and the one enroll operation see them, for
/// the paths that must end before a reader is touched: one reader serves
/// everyone, opening never gives one, and every use of a reader is logged.
@ServiceActor
final class FakeEnrollerSeams: EnrollerSeams, ReaderOpener {
    static let reader = Readers.Identity(driver: "virtual_device", deviceID: "0")

    var serving: Readers.Identity? = FakeEnrollerSeams.reader
    var enrolling: Set<String> = []
    /// The readers that keep prints on their chip.
    var chips: Set<Readers.Identity> = []
    /// What the Enroller asked of the queue and the readers.
    private(set) var used: [String] = []

    func reader(for uid: UInt32) -> Readers.Identity? { serving }
    var noReaderError: ServiceError { ServiceErrors.noReader }
    func isReachable(_ reader: Readers.Identity) -> Bool { reader == serving }
    var chipReaders: [Readers.Identity] { Array(chips) }
    func storesPrints(_ reader: Readers.Identity) -> Bool { chips.contains(reader) }
    func checksDuplicates(_ reader: Readers.Identity) -> Bool { false }
    func isEnrolling(_ sender: String) -> Bool { enrolling.contains(sender) }
    /// The one gate, over a queue of its own: every operation opens through this fake.
    lazy var gate = ReaderGate(queue: SensorQueue(), opener: self)
    /// Why opening gives no reader.
    var openError = ServiceErrors.la(.systemCancel, "the fake gives no reader")
    /// Opening never gives a reader.
    func open(_ reader: Readers.Identity, _ opening: ReaderOpening) async throws(ServiceError) -> any ReaderSession {
        used.append("open")
        throw openError
    }
    func emitEnrollStatus(to destination: String, _ progress: EnrollProgress, stage: UInt32, stages: UInt32) {
        used.append("status \(progress.rawValue)")
    }
}

/// The print store in memory: prints by uid, from either source; ours are
/// the service's own (fprintd's are read-only, as without `--fprintd`).
@ServiceActor
final class FakeEnrollerPrints: EnrollerPrints {
    private var byUID: [UInt32: [PrintStore.StoredPrint]] = [:]

    func add(
        _ finger: FingerName, of uid: UInt32, source: PrintSource,
        on reader: Readers.Identity = FakeEnrollerSeams.reader
    ) {
        // Any GObject stands for the print: the fake never hands it to libfprint.
        byUID[uid, default: []].append(
            PrintStore.StoredPrint(
                finger: finger, print: Cancellable().ref, bytes: [], source: source, reader: reader, created: nil,
                path: "/prints/\(uid)/\(source.rawValue)/\(finger.rawValue)", stamp: []))
    }

    func prints(of uid: UInt32, for reader: Readers.Identity) -> [PrintStore.StoredPrint] {
        PrintStore.offered(byUID[uid, default: []], on: reader)
    }
    func allPrints(of uid: UInt32) -> [PrintStore.StoredPrint] { byUID[uid, default: []] }
    func everyPrint(on reader: Readers.Identity) -> [PrintStore.StoredPrint] {
        byUID.values.flatMap { $0 }.filter { $0.reader == reader }
    }
    func isOurs(_ stored: PrintStore.StoredPrint) -> Bool { stored.source == .localauth }
    func save(_ print: GObjectRef, finger: FingerName, uid: UInt32, reader: Readers.Identity) throws -> PrintFile {
        throw ServiceError(.failed, "the fake stores nothing")
    }
    func delete(_ finger: FingerName, uid: UInt32) throws -> Bool {
        let before = byUID[uid, default: []].count
        byUID[uid]?.removeAll { $0.finger == finger && $0.source == .localauth }
        return byUID[uid, default: []].count < before
    }
    func deleteAll(uid: UInt32) throws -> Int {
        let ours = byUID[uid, default: []].filter { $0.source == .localauth }.count
        byUID[uid]?.removeAll { $0.source == .localauth }
        return ours
    }
}
