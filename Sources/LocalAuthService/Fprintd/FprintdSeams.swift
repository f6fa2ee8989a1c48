import DBusCore
import LocalAuthShared

// fprintd's seams: everything a Device object needs from the rest of the
// service, as small protocols it declares itself (as the Evaluator's in
// Evaluation/EvaluatorSeams.swift). The service's adapters are in
// FprintdWiring.swift; the unit tests' fakes in Tests/LocalAuthServiceTests/Fakes.
// The reader queue (`SensorQueue`) is given as it is: it touches no device.

/// One reader as fprintd's Device object shows it.
@ServiceActor
protocol FprintdReader: AnyObject {
    var identity: Readers.Identity { get }
    /// It can compare a scan with many prints at once ("any", the duplicate check).
    var supportsIdentify: Bool { get }
    /// It keeps prints on its chip (deleting one frees a slot there first).
    var storesPrints: Bool { get }
    /// libfprint's name, enroll stages and scan type ("press" or "swipe").
    var name: String { get }
    var enrollStages: Int { get }
    var scanType: String { get }
    /// Calls `changed(present, needed)` on each change of libfprint's finger status.
    func followFingerStatus(_ changed: @escaping @ServiceActor (Bool, Bool) -> Void)
}

/// A reader kept open for a Claim (one of `Readers.acquire`'s holders)
/// until `release`: fprintd opens the device at Claim and closes it at Release.
@ServiceActor
protocol FprintdHold: AnyObject {
    /// Gives the reader back (it closes after the linger once nothing else
    /// holds it). Again is nothing.
    func release()
}

/// Everything else a Device object uses.
@ServiceActor
protocol FprintdSeams: ReaderLookup {
    // Readers.
    /// The one enroll operation (Enrollment/Enrollment.swift).
    var enrollment: Enrollment { get }
    /// Opens `reader` for a Claim and keeps it open until the hold is
    /// released: one attempt, as fprintd's Claim makes one (its errors: the
    /// reader gone, or `readerInUse` with libfprint's reason), and no turn in
    /// the queue (the service's own operations share the open reader). Nil
    /// while the readers are closed for sleep.
    func hold(_ reader: Readers.Identity, cancellable: Cancellable) async throws(ServiceError) -> (any FprintdHold)?
    /// The one way to hold a reader for an operation that is not a verify
    /// or an enroll (a delete on the chip: `ReaderGate.withReader`).
    var gate: ReaderGate { get }
    var asleep: Bool { get }

    // Prints, in fprintd's layout (PrintStore, FprintdPrints.swift).
    /// What `reader` is offered for `uid` (`location` set).
    func prints(of uid: UInt32, on reader: Readers.Identity) -> [EnrolledPrint]
    /// Every print of `uid` made on `reader`, from both layouts (one print is one print).
    func allPrints(of uid: UInt32, on reader: Readers.Identity) -> [EnrolledPrint]
    /// Every account's prints on `reader` (the duplicate check).
    func everyPrint(on reader: Readers.Identity) -> [EnrolledPrint]
    func save(_ print: any PrintTemplate, finger: FingerName, username: String, uid: UInt32, reader: Readers.Identity) throws
    func remove(_ print: EnrolledPrint) throws

    // The rules shared with LocalAuth.
    func presence(of caller: CallerRecord) async -> Presence
    func passwordNeeded(_ uid: UInt32) -> ServiceError?
    /// The one verify operation and the lockout every client shares
    /// (Evaluation/Verifier.swift): a Device is its other front-end.
    var verifier: Verifier { get }
    /// The duplicate check before an enrollment: one a day per uid, shared with Enroll's.
    var duplicateChecks: DuplicateCheckBudget { get }
    /// A match of `uid` for the connection `sender` (pam_fprintd): a ticket for
    /// that process's login-secret release (LoginSecret/, docs/KEYRING.md).
    func matchSeen(uid: UInt32, sender: String)

    // Who hears.
    /// `uid`'s prints or lockout changed: its LAEnvironment subscribers hear it now.
    func userChanged(_ uid: UInt32)
    /// A signal of the Device object at `path`.
    func emit(_ member: String, _ arguments: [DBusValue], from path: String, interface: String, to destination: String?)
}

extension FprintdSeams {
    /// No login secret (the unit tests' fakes).
    func matchSeen(uid: UInt32, sender: String) {}
}
