import DBusCore
import LocalAuthShared
import LocalAuthSystem

/// The history of approvals (docs/HISTORY.md): every decision about a finger
/// becomes one journal entry, whichever path asked. Two hooks feed it, placed
/// where a decision is final: the router's, around the handler of
/// org.example.LocalAuth's EvaluatePolicy, AuthorizeRight, VerifyUser and
/// ReleaseLoginSecret (`recording`: it sees the answer the caller gets), and
/// fprintd's verify, whose decision comes after VerifyStart's answer, as its
/// final VerifyStatus (`fprintdVerified`). The service keeps nothing: the
/// journal holds the history, under journald's retention and permissions.
@ServiceActor
final class ApprovalHistory {
    /// The service's one history, set when the service is made (like `Log`,
    /// one journal per process, so the hooks need no wiring through the
    /// components). nil: nothing is recorded (the unit tests of other components).
    static var current: ApprovalHistory?

    private let identity: @ServiceActor (CallerRecord) -> CallerIdentity
    private let reader: @ServiceActor (UInt32) -> Readers.Identity?
    private let writer: JournalWriter

    init(
        identity: @escaping @ServiceActor (CallerRecord) -> CallerIdentity,
        reader: @escaping @ServiceActor (UInt32) -> Readers.Identity?,
        writer: JournalWriter = JournalWriter()
    ) {
        self.identity = identity
        self.reader = reader
        self.writer = writer
    }

    // MARK: The hooks

    /// org.example.LocalAuth's watch on its answers (`BusContract.answers`).
    nonisolated static let watch: AnswerWatch = { member, request, arguments, errors, handler throws(ServiceError) in
        try await recording(member, request, arguments, errors: errors, handler)
    }

    /// The router's hook: runs the row's handler (after polkit's yes) and,
    /// for a method that decides about a finger, records how it ended.
    static func recording(
        _ member: String, _ request: Request, _ arguments: any CallArguments, errors: ErrorTable,
        _ handler: () async throws(ServiceError) -> [DBusValue]
    ) async throws(ServiceError) -> [DBusValue] {
        guard let history = current, let asked = Asked(member, arguments) else {
            return try await handler()
        }
        do {
            let answer = try await handler()
            history.answered(asked, request, error: nil, errors: errors)
            return answer
        } catch {
            history.answered(asked, request, error: error, errors: errors)
            throw error
        }
    }

    /// fprintd's hook: a VerifyStart's verify ended, judged by the reader
    /// (`result`) or not (`failure`; `timedOut`: fprintd's own timeout).
    func fprintdVerified(
        _ request: Verifier.Job, on reader: Readers.Identity, result: Verifier.Verdict?, failure: Verifier.Failure?,
        interruption: Interruption?, timedOut: Bool
    ) {
        var entry = HistoryEntry(
            outcome: .granted, context: .fprintd, method: "VerifyStart", program: identity(request.caller).program,
            userUID: request.uid, callerUID: request.caller.uid, reader: reader.description)
        switch (result, failure) {
        case (.matched?, _): entry.outcome = .granted
        case (.noMatch(let lockedOut)?, _):
            entry.outcome = lockedOut ? .lockedOut : .refused
            entry.error = lockedOut ? "verify-no-match (locked out)" : "verify-no-match"
        case (nil, let failure):
            (entry.outcome, entry.error) = Self.fprintdOutcome(failure, interruption: interruption, timedOut: timedOut)
        }
        writer.write(entry)
    }

    /// A verify fprintd's reader did not judge, as an outcome and what went wrong.
    static func fprintdOutcome(
        _ failure: Verifier.Failure?, interruption: Interruption?, timedOut: Bool
    ) -> (HistoryEntry.Outcome, String) {
        switch failure {
        case .refused(let error)?, .notOpened(let error)?:
            return (HistoryEntry.outcome(error: error, interruption: nil), error.message)
        case .interrupted?, .readerFailed(_, .cancelled, _)?:
            if timedOut { return (.timedOut, "no finger in time") }
            let outcome = HistoryEntry.outcome(error: ServiceErrors.la(.systemCancel, ""), interruption: interruption)
            return (outcome, "stopped")
        case .readerFailed(let error, _, _)?:
            return (.unavailable, "the reader failed: \(error.message)")
        case .notRecorded?:
            return (.unavailable, "the failed attempt could not be recorded")
        case nil:
            return (.unavailable, "unknown")
        }
    }

    // MARK: The calls of org.example.LocalAuth

    /// What a recorded method asked, from its arguments (decoded once by the router).
    struct Asked {
        let method: String
        var context: HistoryEntry.Context
        var declaredName: String?
        /// The account a root caller named (VerifyUser, ReleaseLoginSecret).
        var namedUser: String?
        var pamService: String?
        var right: String?

        /// The methods that decide about a finger: every other call (a
        /// preflight, the most frequent) passes with one set lookup, no cast.
        static let decidingMethods: Set<String> = [
            LocalAuthBus.Method.evaluatePolicy, LocalAuthRightsBus.Method.authorizeRight,
            LocalAuthBus.Method.verifyUser, LocalAuthLoginSecretBus.Method.release,
        ]

        init?(_ member: String, _ arguments: any CallArguments) {
            guard Self.decidingMethods.contains(member) else { return nil }
            method = member
            switch arguments {
            case let arguments as EvaluatePolicyArguments:
                context = .app
                declaredName = arguments.options.appName
            case let arguments as AuthorizeRightArguments:
                context = .right
                declaredName = arguments.app.declaredAppID ?? arguments.evaluation.appName
                right = arguments.identifier
            case let arguments as VerifyUserArguments:
                context = LocalAuthHistory.pamContext(service: arguments.pamService)
                namedUser = arguments.user
                pamService = arguments.pamService
            case let arguments as ReleaseLoginSecretArguments:
                context = .loginSecret
                namedUser = arguments.user
            default:
                return nil
            }
        }
    }

    private func answered(_ asked: Asked, _ request: Request, error: ServiceError?, errors: ErrorTable) {
        // The error the caller gets: the call's own end first, as the router answers it.
        let interruption = request.record.interruption ?? (request.record.work as? Evaluation)?.biometricInterruption
        let final = error.map { request.record.interruption?.error ?? $0 }
        // Whose finger: the evaluation's if one started, else the account named
        // (looked up now: polkit said yes), else the call's target.
        let user: UInt32?
        if let evaluation = request.record.work as? Evaluation {
            user = evaluation.uid
        } else if let name = asked.namedUser {
            user = Users.uid(of: name)
        } else {
            user = request.target
        }
        let entry = HistoryEntry(
            outcome: HistoryEntry.outcome(error: final, interruption: interruption), context: asked.context, method: asked.method,
            program: identity(request.caller).program, declaredName: asked.declaredName, userUID: user,
            callerUID: request.uid, pamService: asked.pamService, right: asked.right,
            reader: user.flatMap { reader($0) }?.description, error: final.map { errors.name(of: $0.kind) })
        writer.write(entry)
    }
}
