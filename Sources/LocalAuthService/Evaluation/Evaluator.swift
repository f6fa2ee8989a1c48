import DBusCore
import LocalAuthShared

/// The evaluator, LocalAuth's front-end of the one verify (the `Verifier`):
/// preflight (CanEvaluatePolicy), evaluation (EvaluatePolicy, and
/// AuthorizeRight's through `evaluate`), VerifyUser, the calls that end an
/// evaluation early, and ResetLockout. It owns the last match a
/// `reuse-duration` may accept; the lockout, the last finger, the rotation
/// and the reader fairness are the Verifier's, which fprintd's Devices share.
///
/// This file: preflight, the evaluation's plan and the calls.
/// FingerprintScan.swift: the evaluation's request to the Verifier, its
/// statuses and errors. OwnerPolicy.swift: policy 2. UserVerification.swift:
/// VerifyUser. The rest of the service is reached through the seams of
/// EvaluatorSeams.swift only, held by the Verifier (readers, prints,
/// presence, clock) or given here (the owner's password, the observers).
@ServiceActor
final class Evaluator {
    let configuration: Configuration
    /// Every call in flight: what Cancel and EndEvaluation end.
    let registry: CallRegistry
    /// The one verify, and what verifies leave behind (Verifier.swift). The
    /// readers, prints, presence, queue and clock are the Verifier's seams:
    /// the Evaluator reaches them through it, so the bag is stated once.
    let verifier: Verifier
    /// Policy 2's account password (OwnerPolicy.swift).
    let ownerPassword: any OwnerPassword
    /// The caller's EvaluationStatus and the system sheet of its session.
    let observers: any EvaluationObservers

    /// The last fingerprint match of each user, with the enrolled set it was
    /// made against: what `reuse-duration` may accept (docs/SECURITY.md).
    private var lastFingerprintMatch: [UInt32: EvaluationPlan.LastMatch] = [:]
    init(
        configuration: Configuration, registry: CallRegistry, verifier: Verifier, ownerPassword: any OwnerPassword,
        observers: any EvaluationObservers
    ) {
        self.configuration = configuration
        self.registry = registry
        self.verifier = verifier
        self.ownerPassword = ownerPassword
        self.observers = observers
    }

    // MARK: Preflight

    /// The user's prints on the reader that serves them, or why biometrics cannot be used.
    func usablePrints(for uid: UInt32) throws(ServiceError) -> [EnrolledPrint] {
        let reader = try readerServing(uid)
        let stored = verifier.prints.prints(of: uid, on: reader)
        guard !stored.isEmpty else { throw Self.notEnrolled }
        return stored
    }

    /// Why biometrics cannot be used by `uid` now, if they cannot: the
    /// preflights' form of `usablePrints`, which only counts the prints (a
    /// preflight is the hot path: BENCHMARKS.md).
    func checkBiometricsUsable(for uid: UInt32) throws(ServiceError) {
        let reader = try readerServing(uid)
        guard verifier.prints.hasPrints(of: uid, on: reader) else { throw Self.notEnrolled }
    }

    /// The reader that serves `uid`, unless there is none, the user is
    /// locked out or must give the password first.
    private func readerServing(_ uid: UInt32) throws(ServiceError) -> Readers.Identity {
        guard let identity = verifier.readers.reader(for: uid) else { throw verifier.readers.noReaderError }
        if verifier.isLockedOut(uid) {
            throw ServiceErrors.la(.biometryLockout, "biometry is locked after too many failed attempts")
        }
        if let needed = verifier.environment.passwordNeeded(uid) { throw needed }
        return identity
    }

    private static let notEnrolled = ServiceErrors.la(.biometryNotEnrolled, "no fingerprints are enrolled for this user")

    /// Why biometrics cannot be used by this caller now, or nil: a remote or
    /// seatless session first (Presence.refusal), then the reader,
    /// lockout and prints (`checkBiometricsUsable`).
    func biometricsRefusal(_ request: Request) async -> ServiceError? {
        let presence = await verifier.environment.presence(of: request.caller)
        if let refusal = Presence.refusal(presence) { return refusal }
        do {
            try checkBiometricsUsable(for: request.uid)
            return nil
        } catch {
            return error
        }
    }

    /// CanEvaluatePolicy(u policy).
    func canEvaluatePolicy(_ request: Request, _ arguments: CanEvaluatePolicyArguments) async throws(ServiceError) -> [DBusValue] {
        try await canEvaluate(arguments.policy, request)
        return [.boolean(true)]
    }

    func canEvaluate(_ policy: PolicyValue, _ request: Request) async throws(ServiceError) {
        let refusal = if let refused = request.record.contextRefusal { refused } else { await biometricsRefusal(request) }
        try request.record.checkNotEnded()
        switch policy {
        case .deviceOwnerAuthenticationWithBiometrics:
            if let refusal { throw refusal }
        case .deviceOwnerAuthentication:
            // Biometrics, or else the account password.
            if refusal != nil, !verifier.environment.hasPassword(request.uid) {
                throw ServiceErrors.la(.passcodeNotSet, "the account has no password, and biometrics cannot be used")
            }
        }
    }

    // MARK: Evaluation

    /// EvaluatePolicy(u policy, s localized_reason, a{sv} options).
    func evaluatePolicy(_ request: Request, _ arguments: EvaluatePolicyArguments) async throws(ServiceError) -> [DBusValue] {
        try await evaluate(request, policy: arguments.policy, reason: arguments.reason, options: arguments.options)
        return [.boolean(true)]
    }

    /// The evaluation of a call that asks for one (EvaluatePolicy, and
    /// AuthorizeRight with its right's policy: Rights/RightsPolicy.swift): returns once the
    /// person is verified, or throws why not.
    func evaluate(
        _ request: Request, policy: PolicyValue, reason: String,
        options: EvaluationOptions
    ) async throws(ServiceError) {
        let uid = request.uid
        let presence = await verifier.environment.presence(of: request.caller)
        try request.record.checkNotEnded()
        // What this evaluation can use, decided before anything waits.
        let biometrics: ServiceError?
        var enrolledSet: [[UInt8]] = []
        do throws(ServiceError) {
            if let refused = request.record.contextRefusal { throw refused }  // ContextPolicy/
            if let refusal = Presence.refusal(presence) { throw refusal }
            enrolledSet = Verifier.enrolledSet(try usablePrints(for: uid))
            try verifier.refuseWhileCooling(uid)
            biometrics = nil
        } catch {
            biometrics = error
        }
        let plan = EvaluationPlan.decide(
            policy: policy, biometrics: biometrics, enrolledSet: enrolledSet,
            hasPassword: policy == .deviceOwnerAuthentication && biometrics != nil && verifier.environment.hasPassword(uid),
            interactionNotAllowed: options.interactionNotAllowed, reuseDuration: options.reuseDuration,
            lastMatch: lastFingerprintMatch[uid], now: verifier.clock.now)
        switch plan {
        case .reuse: return
        case .fail(let error): throw error
        case .run: break
        }

        let evaluation = Evaluation(
            requestID: options.requestID ?? Posix.randomID(), caller: request.caller,
            uid: uid, queue: verifier.gate.queue,
            prompt: .init(
                reason: reason, fallbackTitle: options.fallbackTitle,
                cancelTitle: options.cancelTitle, appName: options.appName))
        // An evaluation whose call already ended (Cancel right after the
        // call, the caller gone) is interrupted here and never touches the reader.
        request.record.work = evaluation
        try request.record.checkNotEnded()

        // The system sheet, if the caller's session has a prompt agent (PromptAgents.swift).
        await observers.evaluationStarted(evaluation, record: request.record, policy: policy)
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
            lastFingerprintMatch[uid] = EvaluationPlan.LastMatch(time: verifier.clock.now, enrolledSet: matchedSet)
        }
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
    func end(_ requestID: String, of sender: String, _ interruption: Interruption) {
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
        try verifier.resetLockout(of: uid, by: request.uid)
        return []
    }

    /// Policy 2's password was accepted: it unlocks biometrics after a
    /// lockout (Apple's rule), and counts as the password given
    /// (`--require-password-after`).
    func ownerPasswordAccepted(_ uid: UInt32) {
        verifier.passwordAccepted(uid)
        verifier.environment.passwordGiven(uid)
    }
}
