import DBusCore
import LocalAuthShared

/// The evaluator: preflight (CanEvaluatePolicy), evaluation (EvaluatePolicy,
/// and AuthorizeRight's through `evaluate`), VerifyUser, the calls that end
/// an evaluation early, and ResetLockout. It owns what evaluations leave
/// behind: the lockout counts, the finger each user matched with last, the
/// last match a `reuse-duration` may accept, and the reader-fairness streaks.
///
/// This file: the state, preflight, the evaluation's plan and the calls.
/// FingerprintScan.swift: the reader queue, the scan loop, attempts and the
/// lockout. OwnerPolicy.swift: policy 2. UserVerification.swift: VerifyUser.
/// The rest of the service is reached through EvaluatorSeams.swift only.
@ServiceActor
final class Evaluator {
    let configuration: Configuration
    /// Who holds the reader and who waits (shared with enrollment).
    let queue: SensorQueue
    /// Every call in flight: what Cancel and EndEvaluation end.
    let registry: CallRegistry
    let readers: any EvaluationReaders
    let prints: any EvaluationPrints
    let environment: any EvaluationEnvironment
    let ownerPassword: any OwnerPassword
    let observers: any EvaluationObservers
    let clock: any ServiceClock

    // The state evaluations leave behind: private, so that only the methods
    // below (and no other file, component or fake) change it.
    /// Consecutive failed matches of each user, on disk (LockoutStore.swift).
    private let lockout: LockoutStore
    /// The finger each user matched with last: a verify-only reader tries it first.
    private let lastFinger: LastFingerStore
    /// Judged no-matches of each user since their last match: where a
    /// verify-only reader's rotation through the prints has got to
    /// (FingerprintScan.swift). Unlike the lockout count, the password and
    /// ResetLockout leave it, so the rotation goes on to the fingers not yet
    /// tried; in memory only (a restart starts again at the last matched).
    private var missesSinceMatch: [UInt32: Int] = [:]
    /// The last fingerprint match of each user, with the enrolled set it was
    /// made against: what `reuse-duration` may accept (docs/SECURITY.md).
    private var lastFingerprintMatch: [UInt32: EvaluationPlan.LastMatch] = [:]
    /// Who has kept the warm reader waiting lately (Readers/ReaderFairness.swift).
    private var fairness = ReaderFairness()
    /// The verifies queued or scanning now, with whose presence each needs
    /// (Verification.swift: a switch of the session in front ends them).
    var inFlight: [ObjectIdentifier: VerifyInFlight] = [:]

    init(configuration: Configuration, queue: SensorQueue, registry: CallRegistry, seams: EvaluatorSeams) {
        self.configuration = configuration
        self.queue = queue
        self.registry = registry
        readers = seams.readers
        prints = seams.prints
        environment = seams.environment
        ownerPassword = seams.ownerPassword
        observers = seams.observers
        clock = seams.clock
        lockout = LockoutStore(stateDirectory: configuration.stateDirectory)
        lastFinger = LastFingerStore(stateDirectory: configuration.stateDirectory)
    }

    /// Who asks for an evaluation: the connection (its uid, its session) and the call.
    struct Caller {
        let connection: CallerRecord
        /// The call's registration: what ends it early.
        let record: CallRecord
        var uid: UInt32 { connection.uid }
        var sender: String { record.sender }

        init(connection: CallerRecord, record: CallRecord) {
            self.connection = connection
            self.record = record
        }

        init(_ request: Request) { self.init(connection: request.caller, record: request.record) }
    }

    // MARK: Preflight

    /// The user's prints on the reader that serves them, or why biometrics cannot be used.
    func usablePrints(for uid: UInt32) throws(ServiceError) -> [EnrolledPrint] {
        let reader = try readerServing(uid)
        let stored = prints.prints(of: uid, on: reader)
        guard !stored.isEmpty else { throw Self.notEnrolled }
        return stored
    }

    /// Why biometrics cannot be used by `uid` now, if they cannot: the
    /// preflights' form of `usablePrints`, which only counts the prints (a
    /// preflight is the hot path: BENCHMARKS.md).
    func checkBiometricsUsable(for uid: UInt32) throws(ServiceError) {
        let reader = try readerServing(uid)
        guard prints.hasPrints(of: uid, on: reader) else { throw Self.notEnrolled }
    }

    /// The reader that serves `uid`, unless there is none, the user is
    /// locked out or must give the password first.
    private func readerServing(_ uid: UInt32) throws(ServiceError) -> Readers.Identity {
        guard let identity = readers.reader(for: uid) else { throw readers.noReaderError }
        if lockout.isLockedOut(uid) {
            throw ServiceErrors.la(.biometryLockout, "biometry is locked after too many failed attempts")
        }
        if let needed = environment.passwordNeeded(uid) { throw needed }
        return identity
    }

    private static let notEnrolled = ServiceErrors.la(.biometryNotEnrolled, "no fingerprints are enrolled for this user")

    /// Why biometrics cannot be used by this caller now, or nil: a remote or
    /// seatless session first (EnvironmentRules.refusal), then the reader,
    /// lockout and prints (`checkBiometricsUsable`).
    func biometricsRefusal(_ caller: Caller) async -> ServiceError? {
        let presence = await environment.presence(of: caller.connection)
        if let refusal = EnvironmentRules.refusal(presence) { return refusal }
        do {
            try checkBiometricsUsable(for: caller.uid)
            return nil
        } catch {
            return error
        }
    }

    /// CanEvaluatePolicy(u policy).
    func canEvaluatePolicy(_ request: Request, _ arguments: CanEvaluatePolicyArguments) async throws(ServiceError) -> [DBusValue] {
        try await canEvaluate(arguments.policy, Caller(request))
        return [.boolean(true)]
    }

    func canEvaluate(_ policy: PolicyValue, _ caller: Caller) async throws(ServiceError) {
        let refusal = if let refused = caller.record.contextRefusal { refused } else { await biometricsRefusal(caller) }
        try caller.record.checkNotEnded()
        switch policy {
        case .deviceOwnerAuthenticationWithBiometrics:
            if let refusal { throw refusal }
        case .deviceOwnerAuthentication:
            // Biometrics, or else the account password.
            if refusal != nil, !environment.hasPassword(caller.uid) {
                throw ServiceErrors.la(.passcodeNotSet, "the account has no password, and biometrics cannot be used")
            }
        }
    }

    // MARK: Evaluation

    /// EvaluatePolicy(u policy, s localized_reason, a{sv} options).
    func evaluatePolicy(_ request: Request, _ arguments: EvaluatePolicyArguments) async throws(ServiceError) -> [DBusValue] {
        try await evaluate(Caller(request), policy: arguments.policy, reason: arguments.reason, options: arguments.options)
        return [.boolean(true)]
    }

    /// The evaluation of a call that asks for one (EvaluatePolicy, and
    /// AuthorizeRight with its right's policy: Rights/RightsPolicy.swift): returns once the
    /// person is verified, or throws why not.
    func evaluate(
        _ request: Request, policy: PolicyValue, reason: String,
        options: EvaluationOptions
    ) async throws(ServiceError) {
        try await evaluate(Caller(request), policy: policy, reason: reason, options: options)
    }

    func evaluate(
        _ caller: Caller, policy: PolicyValue, reason: String,
        options: EvaluationOptions
    ) async throws(ServiceError) {
        let uid = caller.uid
        let presence = await environment.presence(of: caller.connection)
        try caller.record.checkNotEnded()
        // What this evaluation can use, decided before anything waits.
        let biometrics: ServiceError?
        var enrolledSet: [[UInt8]] = []
        do throws(ServiceError) {
            if let refused = caller.record.contextRefusal { throw refused }  // ContextPolicy/
            if let refusal = EnvironmentRules.refusal(presence) { throw refusal }
            enrolledSet = Self.enrolledSet(try usablePrints(for: uid))
            try refuseWhileCooling(uid)
            biometrics = nil
        } catch {
            biometrics = error
        }
        let plan = EvaluationPlan.decide(
            policy: policy, biometrics: biometrics, enrolledSet: enrolledSet,
            hasPassword: policy == .deviceOwnerAuthentication && biometrics != nil && environment.hasPassword(uid),
            interactionNotAllowed: options.interactionNotAllowed, reuseDuration: options.reuseDuration,
            lastMatch: lastFingerprintMatch[uid], now: clock.now)
        switch plan {
        case .reuse: return
        case .fail(let error): throw error
        case .run: break
        }

        let evaluation = Evaluation(
            requestID: options.requestID ?? Posix.randomID(), caller: caller.connection,
            uid: uid, queue: queue,
            prompt: .init(
                reason: reason, fallbackTitle: options.fallbackTitle,
                cancelTitle: options.cancelTitle, appName: options.appName))
        // An evaluation whose call already ended (Cancel right after the
        // call, the caller gone) is interrupted here and never touches the reader.
        caller.record.evaluation = evaluation
        try caller.record.checkNotEnded()

        // The system sheet, if the caller's session has a prompt agent (PromptAgents.swift).
        await observers.evaluationStarted(evaluation, record: caller.record, policy: policy)
        let way: Way
        do throws(ServiceError) {
            switch policy {
            case .deviceOwnerAuthenticationWithBiometrics:
                way = try await fingerprint(evaluation)
            case .deviceOwnerAuthentication:
                way = try await fingerprintOrPassword(evaluation, biometrics: biometrics == nil)
            }
        } catch {
            observers.evaluationEnded(evaluation, error: error)
            throw error
        }
        observers.evaluationEnded(evaluation, error: nil)
        if way == .fingerprint, let matchedSet = evaluation.matchedSet {
            lastFingerprintMatch[uid] = EvaluationPlan.LastMatch(time: clock.now, enrolledSet: matchedSet)
        }
    }

    /// What a reused match is tied to: each usable print's finger, source and
    /// enrollment stamp (new on every enrollment). Cheap, since the scan loop
    /// and the preflight have the prints at hand already.
    static func enrolledSet(_ prints: [EnrolledPrint]) -> [[UInt8]] {
        prints.map { Array("\($0.finger.rawValue) \($0.source.rawValue) ".utf8) + $0.stamp }
    }

    // MARK: Ending evaluations early

    /// Cancel(s request_id): the app cancels its own evaluation.
    func cancel(_ request: Request, _ arguments: CancelArguments) throws(ServiceError) -> [DBusValue] {
        end(arguments.requestID, of: request.sender, .appCancelled)
        return []
    }

    /// EndEvaluation(s request_id, s reason): the app ends an evaluation as
    /// the person's cancel or fallback.
    func endEvaluation(_ request: Request, _ arguments: EndEvaluationArguments) throws(ServiceError) -> [DBusValue] {
        end(arguments.requestID, of: request.sender, arguments.interruption)
        return []
    }

    /// Ends `sender`'s own call with that request id, wherever it waits.
    func end(_ requestID: String, of sender: String, _ interruption: Evaluation.Interruption) {
        registry.end(requestID: requestID, of: sender, interruption)
    }

    // MARK: The lockout

    /// ResetLockout(s user): an administrator lifts a user's biometry lockout.
    func resetLockout(_ request: Request, _ arguments: ResetLockoutArguments) throws(ServiceError) -> [DBusValue] {
        var uid = request.uid
        if let name = arguments.user {
            guard let found = Users.uid(of: name) else {
                throw ServiceErrors.invalidArgs("no user named \(ServiceErrors.echo(name))")
            }
            uid = found
        }
        try resetLockout(of: uid, by: request.uid)
        return []
    }

    func resetLockout(of uid: UInt32, by administrator: UInt32) throws(ServiceError) {
        defer { environment.lockoutChanged(uid) }
        do {
            try lockout.reset(uid)
        } catch {
            throw ServiceError(.storageFailed, "could not save the lockout count")
        }
        Log.info("biometry lockout of uid \(uid) reset by uid \(administrator)")
    }

    /// Whether `uid`'s biometry is locked (the domain state, fprintd's refusal).
    func isLockedOut(_ uid: UInt32) -> Bool { lockout.isLockedOut(uid) }

    /// `uid`'s failed matches in a row.
    func failedMatches(of uid: UInt32) -> Int { lockout.failures(of: uid) }

    /// The reader judged a scan of `uid`'s a match, here or through fprintd's
    /// Verify: the lockout count is reset, the finger tried first next time.
    func scanMatched(_ uid: UInt32, finger: FingerName?) {
        if let finger { lastFinger.remember(finger, for: uid) }
        missesSinceMatch[uid] = nil
        fairness.scanJudged(uid)
        try? lockout.reset(uid)  // logged; the count stays (fails closed)
        environment.lockoutChanged(uid)
    }

    /// The reader judged a scan of `uid`'s no match: one more failure in a row
    /// (one lockout for every client). True: the user is now locked out.
    /// Throws if the count could not be written.
    func scanDidNotMatch(_ uid: UInt32) throws(FileError) -> Bool {
        fairness.scanJudged(uid)
        // Bounded: the rotation needs it only modulo the user's number of
        // prints (at most 10 on a reader), and 2,520 is a multiple of each.
        missesSinceMatch[uid] = ((missesSinceMatch[uid] ?? 0) + 1) % 2_520
        defer { environment.lockoutChanged(uid) }
        return try lockout.recordFailure(uid)
    }

    /// The finger `uid` matched with last, if known.
    func lastMatchedFinger(of uid: UInt32) -> FingerName? { lastFinger.finger(of: uid) }

    /// `uid`'s judged no-matches since its last match (the rotation's step).
    func missesSinceMatch(of uid: UInt32) -> Int { missesSinceMatch[uid] ?? 0 }

    /// Policy 2's password was accepted: it unlocks biometrics after a
    /// lockout (Apple's rule), and counts as the password given
    /// (`--require-password-after`).
    func ownerPasswordAccepted(_ uid: UInt32) {
        try? lockout.reset(uid)  // logged; the count stays (fails closed)
        environment.lockoutChanged(uid)
        environment.passwordGiven(uid)
    }

    // MARK: Reader fairness

    /// The reader-fairness rule (ReaderFairness.swift): a user whose waits for
    /// a finger keep timing out on a warm reader waits before the next one.
    /// The password of policy 2 is never held back.
    func refuseWhileCooling(_ uid: UInt32) throws(ServiceError) {
        let remaining = fairness.remaining(uid, at: clock.now, readerWarm: readerIsWarm(for: uid))
        guard remaining > 0 else { return }
        throw ServiceError(
            .readerCoolingDown,
            "the fingerprint reader is cooling down; try again in about \(Int(remaining.rounded(.up))) s")
    }

    /// A wait for `uid`'s finger timed out, on a warm reader or not.
    func waitTimedOut(_ uid: UInt32) {
        fairness.waitTimedOut(uid, at: clock.now, readerWarm: readerIsWarm(for: uid))
    }

    private func readerIsWarm(for uid: UInt32) -> Bool {
        guard let reader = readers.reader(for: uid) else { return false }
        return readers.isWarm(reader)
    }
}
