import DBusCore
import LocalAuthShared

// The seams of the verify (the Verifier, which holds them) and of its
// LocalAuth front-end (the Evaluator, given the last two): everything they
// need from the rest of the service beyond the ReaderGate, as small
// protocols declared here. The service's adapters are in
// EvaluatorWiring.swift; the unit tests' fakes in Tests/LocalAuthServiceTests/Fakes.

/// The fingerprint readers, as an evaluation uses them.
@ServiceActor
protocol EvaluationReaders: ReaderLookup {
    /// Whether `reader` has been working lately (libfprint's temperature).
    func isWarm(_ reader: Readers.Identity) -> Bool
}

/// The enrolled prints.
@ServiceActor
protocol EvaluationPrints {
    /// The prints `reader` is offered for `uid` (PrintStore.prints(of:for:)).
    func prints(of uid: UInt32, on reader: Readers.Identity) -> [EnrolledPrint]
    /// Whether `prints(of:on:)` would give any (the preflight's question, asked without building them).
    func hasPrints(of uid: UInt32, on reader: Readers.Identity) -> Bool
}

/// Who is at the reader, and the account's password rules.
@ServiceActor
protocol EvaluationEnvironment {
    /// Whether the caller's session is at the reader (Callers/Presence.swift).
    func presence(of caller: CallerRecord) async -> Presence
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
protocol OwnerPassword {
    /// polkit's verdict on org.example.LocalAuth.authenticate-owner for `sender`.
    func check(
        sender: String, details: [String: String], timeout: Double,
        cancellable: Cancellable
    ) async -> Authorizer.Decision
}

/// Who hears how an evaluation goes: the caller (EvaluationStatus) and the
/// system sheet of its session (PromptAgents.swift).
@ServiceActor
protocol EvaluationObservers {
    func evaluationStarted(_ evaluation: Evaluation, record: CallRecord, policy: PolicyValue) async
    func evaluationEnded(_ evaluation: Evaluation, error: ServiceError?)
    /// The EvaluationStatus signal to the caller, and the sheet's status line.
    func status(_ evaluation: Evaluation, _ progress: EvaluationProgress)
}
