import DBusCore
import LocalAuthShared

// The Evaluator's seams: everything it needs from the rest of the service,
// as small protocols it declares itself. The service's adapters are in
// EvaluatorWiring.swift; the unit tests' fakes in Tests/LocalAuthServiceTests/Fakes.

/// The fingerprint readers, as an evaluation uses them.
@ServiceActor
protocol EvaluationReaders: ReaderLookup {
    /// Whether `reader` has been working lately (libfprint's temperature).
    func isWarm(_ reader: Readers.Identity) -> Bool
    /// Opens `reader` for one operation, by `deadline` (nil: within the scan
    /// timeout); throws the caller's error when it cannot (`interruption`
    /// wins over the reader's). `busy` hears that another program holds the device.
    func open(
        _ reader: Readers.Identity, until deadline: ContinuousClock.Instant?, cancellable: Cancellable,
        interruption: @escaping @ServiceActor () -> Interruption?,
        busy: @escaping @ServiceActor () -> Void
    ) async throws(ServiceError) -> any ReaderSession
}

/// One reader, opened for one operation until `release`.
@ServiceActor
protocol ReaderSession: AnyObject {
    var identity: Readers.Identity { get }
    /// One scan against `gallery` (all made on this reader): which of its
    /// prints matched, none, or a scan to repeat. Throws libfprint's error.
    func scan(_ gallery: [EnrolledPrint], cancellable: Cancellable) async throws(GLibError) -> ScanOutcome
    /// The caller's error when `error` means the reader cannot be used now
    /// (removed, too hot), or nil for any other failure.
    func unusable(_ error: GLibError) -> ServiceError?
    /// What libfprint's `error` means for fprintd's statuses (a removed reader is forgotten).
    func failure(_ error: GLibError) -> ReaderFailure
    /// The operation is over: the reader may close.
    func release()
}

/// libfprint's errors, as fprintd's statuses tell them apart (fprintd 1.94's
/// verify_result_to_name and enroll_result_to_name; the statuses:
/// Fprintd/FprintdOperations.swift, the classification: ReaderFailure.init,
/// Enrollment/EnrollmentWiring.swift).
enum ReaderFailure: Equatable {
    /// FP_DEVICE_ERROR_REMOVED: unplugged (the reader is forgotten).
    case removed
    /// FP_DEVICE_ERROR_PROTO: the reader stopped making sense: fprintd's "disconnected".
    case protocolError
    case cancelled
    /// FP_DEVICE_ERROR_DATA_FULL: the chip has no room for another print.
    case dataFull
    /// FP_DEVICE_ERROR_DATA_DUPLICATE: the chip's own duplicate check.
    case duplicate
    /// FP_DEVICE_ERROR_DATA_NOT_FOUND: the chip does not hold a print it was given.
    case notFound
    /// FP_DEVICE_ERROR_TOO_HOT: the reader must cool down (fprintd 1.94.5's
    /// "disconnected"; the caller of an evaluation hears "cooling down").
    case overheated
    /// Every other error (GENERAL, BUSY, …): fprintd's "unknown-error".
    case other
}

/// What one scan found.
enum ScanOutcome: Equatable, Sendable {
    /// The print at this index of the gallery passed to `scan` matched
    /// (nil: the reader did not say which).
    case match(Int?)
    case noMatch
    case retry(RetryKind)
}

/// One usable print, as the evaluator sees it.
struct EnrolledPrint {
    let finger: FingerName
    let source: PrintSource
    /// New on every enrollment (PrintStore.StoredPrint.stamp).
    let stamp: [UInt8]
    /// The print the reader compares with: libfprint's FpPrint for the real
    /// readers, anything for a fake one. Only a ReaderSession looks inside.
    let template: any PrintTemplate
    /// Where it is kept, for a component that deletes it (fprintd's Device).
    var location = ""
}

/// The reader's own form of a print (see EnrolledPrint.template).
protocol PrintTemplate: AnyObject {}

/// The enrolled prints.
@ServiceActor
protocol EvaluationPrints: AnyObject {
    /// The prints `reader` is offered for `uid` (PrintStore.prints(of:for:)).
    func prints(of uid: UInt32, on reader: Readers.Identity) -> [EnrolledPrint]
    /// Whether `prints(of:on:)` would give any (the preflight's question, asked without building them).
    func hasPrints(of uid: UInt32, on reader: Readers.Identity) -> Bool
}

/// Who is at the reader, and the account's password rules.
@ServiceActor
protocol EvaluationEnvironment: AnyObject {
    /// Whether the caller's session is at the reader (Callers/Presence.swift).
    func presence(of caller: CallerRecord) async -> EnvironmentRules.Presence
    /// Counts the changes of the session in front that logind signalled (a
    /// session's `Active`, logind leaving or coming back): a scan read
    /// across one is thrown away.
    var frontChanges: UInt64 { get }
    /// `--require-password-after`: the error while `uid` must give the password first.
    func passwordNeeded(_ uid: UInt32) -> ServiceError?
    /// `uid` gave the account password now.
    func passwordGiven(_ uid: UInt32)
    /// `uid`'s lockout count changed (a judged scan, a reset): its
    /// LAEnvironment subscribers may have a new state to hear.
    func lockoutChanged(_ uid: UInt32)
    /// Whether the account has a usable password (Apple's "passcode set").
    func hasPassword(_ uid: UInt32) -> Bool
    /// Who the connection `sender` is, if it is still known.
    func identity(of sender: String) -> CallerIdentity?
}

/// Policy 2's account password, asked by the caller's polkit agent.
@ServiceActor
protocol OwnerPassword: AnyObject {
    /// polkit's verdict on org.example.LocalAuth.authenticate-owner for `sender`.
    func check(
        sender: String, details: [String: String], timeout: Double,
        cancellable: Cancellable
    ) async -> Authorizer.Decision
}

/// Who hears how an evaluation goes: the caller (EvaluationStatus) and the
/// system sheet of its session (PromptAgents.swift).
@ServiceActor
protocol EvaluationObservers: AnyObject {
    func evaluationStarted(_ evaluation: Evaluation, record: CallRecord, policy: PolicyValue) async
    func evaluationEnded(_ evaluation: Evaluation, error: ServiceError?)
    /// The EvaluationStatus signal to the caller, and the sheet's status line.
    func status(_ evaluation: Evaluation, _ progress: EvaluationProgress)
}
