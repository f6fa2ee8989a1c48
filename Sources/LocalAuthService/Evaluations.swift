internal import CGLib
import DBusCore
import LocalAuthShared

// Preflight and evaluation: which policy, which prints, reuse, the reader
// queue, the scan loop and the lockout, policy 2's race of the fingerprint
// and the password, and the calls that end an evaluation early.
extension LocalAuthService {
    // MARK: Preflight

    static func policy(_ value: DBusValue?) throws(ServiceError) -> PolicyValue {
        guard let raw = value?.uint32, let policy = PolicyValue(rawValue: raw) else {
            throw ServiceErrors.invalidArgs("unknown policy \(value?.uint32.map(String.init) ?? "?"); "
                + "1 is deviceOwnerAuthenticationWithBiometrics, 2 deviceOwnerAuthentication")
        }
        return policy
    }

    /// The user's prints on the current reader, or why biometrics cannot be used.
    func usablePrints(for uid: UInt32) throws(ServiceError) -> [PrintStore.StoredPrint] {
        guard let identity = reader(for: uid) else { throw noReaderError }
        if lockout.isLockedOut(uid) {
            throw ServiceErrors.la(.biometryLockout, "biometry is locked after too many failed attempts")
        }
        if let needed = passwordNeeded(uid) { throw needed }
        let stored = prints.prints(of: uid, for: identity)
        guard !stored.isEmpty else {
            throw ServiceErrors.la(.biometryNotEnrolled, "no fingerprints are enrolled for this user")
        }
        return stored
    }

    /// Why biometrics cannot be used by this caller now, or nil: a remote or
    /// seatless session first (EnvironmentRules.refusal), then the reader,
    /// lockout and prints (`usablePrints`).
    func biometricsRefusal(_ request: Request) async -> ServiceError? {
        let presence = await presence(of: request)
        if let refusal = EnvironmentRules.refusal(presence) { return refusal }
        do {
            _ = try usablePrints(for: request.uid)
            return nil
        } catch {
            return error
        }
    }

    func canEvaluatePolicy(_ request: Request) async throws(ServiceError) -> [DBusValue] {
        let policy = try Self.policy(request.arguments[0])
        let refusal = await biometricsRefusal(request)
        try request.record.checkNotEnded()
        switch policy {
        case .deviceOwnerAuthenticationWithBiometrics:
            if let refusal { throw refusal }
        case .deviceOwnerAuthentication:
            // Biometrics, or else the account password.
            if refusal != nil, !Accounts.hasPassword(uid: request.uid) {
                throw ServiceErrors.la(.passcodeNotSet, "the account has no password, and biometrics cannot be used")
            }
        }
        return [.boolean(true)]
    }

    // MARK: Evaluation

    struct EvaluationOptions {
        var requestID: String?
        var reuseDuration: Double = 0
        var interactionNotAllowed = false
        /// The app's prompt labels, kept with the evaluation for a prompt to show.
        var fallbackTitle: String?
        var cancelTitle: String?
    }

    static func evaluationOptions(_ value: DBusValue) throws(ServiceError) -> EvaluationOptions {
        guard let entries = value.stringKeyedDictionary else { throw ServiceErrors.invalidArgs("options must be a{sv}") }
        var options = EvaluationOptions()
        for (key, value) in entries {
            switch key {
            case LocalAuthBus.Option.requestID:
                guard let id = value.string else { throw ServiceErrors.invalidArgs("request-id must be a string") }
                guard !id.isEmpty, id.utf8.count <= LocalAuthBus.maximumTextLength else {
                    throw ServiceErrors.invalidArgs("request-id must be 1 to \(LocalAuthBus.maximumTextLength) bytes")
                }
                options.requestID = id
            case LocalAuthBus.Option.fallbackTitle, LocalAuthBus.Option.cancelTitle:
                guard let title = value.string else { throw ServiceErrors.invalidArgs("\(key) must be a string") }
                guard title.utf8.count <= LocalAuthBus.maximumTextLength else {
                    throw ServiceErrors.invalidArgs("\(key) is longer than \(LocalAuthBus.maximumTextLength) bytes")
                }
                if key == LocalAuthBus.Option.fallbackTitle { options.fallbackTitle = title } else { options.cancelTitle = title }
            case LocalAuthBus.Option.reuseDuration:
                guard let seconds = value.double, seconds.isFinite, seconds >= 0 else {
                    throw ServiceErrors.invalidArgs("reuse-duration must be a non-negative double (seconds)")
                }
                options.reuseDuration = min(seconds, LocalAuthBus.maximumReuseDuration)
            case LocalAuthPrompt.appNameOption:
                // Shown by the system sheet (PromptAgents.swift), which reads it from the call.
                guard let name = value.string, name.utf8.count <= LocalAuthBus.maximumTextLength else {
                    throw ServiceErrors.invalidArgs("app-name must be a string of at most \(LocalAuthBus.maximumTextLength) bytes")
                }
            case LocalAuthBus.Option.interactionNotAllowed:
                guard let flag = value.bool else { throw ServiceErrors.invalidArgs("interaction-not-allowed must be a boolean") }
                options.interactionNotAllowed = flag
            default:
                continue   // forward compatibility: unknown options are ignored
            }
        }
        return options
    }

    func evaluatePolicy(_ request: Request) async throws(ServiceError) -> [DBusValue] {
        let arguments = request.arguments
        let policy = try Self.policy(arguments[0])
        guard let reason = arguments[1].string, !reason.trimmed.isEmpty else {
            throw ServiceErrors.invalidArgs("the localized reason must not be empty")
        }
        guard reason.utf8.count <= LocalAuthBus.maximumTextLength else {
            throw ServiceErrors.invalidArgs("the localized reason is longer than \(LocalAuthBus.maximumTextLength) bytes")
        }
        let options = try Self.evaluationOptions(arguments[2])
        try await evaluate(request, policy: policy, reason: reason, options: options)
        return [.boolean(true)]
    }

    /// The evaluation of a call that asks for one (EvaluatePolicy, and
    /// AuthorizeRight with its right's policy: Rights.swift): returns once the
    /// person is verified, or throws why not.
    func evaluate(_ request: Request, policy: PolicyValue, reason: String,
                  options: EvaluationOptions) async throws(ServiceError) {
        let uid = request.uid
        let presence = await presence(of: request)
        try request.record.checkNotEnded()
        // What this evaluation can use, decided before anything waits.
        let biometrics: ServiceError?
        var enrolledSet: [[UInt8]] = []
        do throws(ServiceError) {
            if let refusal = EnvironmentRules.refusal(presence) { throw refusal }
            enrolledSet = Self.enrolledSet(try usablePrints(for: uid))
            try refuseWhileCooling(uid)
            biometrics = nil
        } catch {
            biometrics = error
        }
        let plan = EvaluationPlan.decide(
            policy: policy, biometrics: biometrics, enrolledSet: enrolledSet,
            hasPassword: policy == .deviceOwnerAuthentication && biometrics != nil && Accounts.hasPassword(uid: uid),
            interactionNotAllowed: options.interactionNotAllowed, reuseDuration: options.reuseDuration,
            lastMatch: lastFingerprintMatch[uid], now: .now)
        switch plan {
        case .reuse: return
        case .fail(let error): throw error
        case .run: break
        }

        let evaluation = Evaluation(requestID: options.requestID ?? Posix.randomID(), sender: request.sender,
                                    uid: uid, queue: queue,
                                    prompt: .init(reason: reason, fallbackTitle: options.fallbackTitle,
                                                  cancelTitle: options.cancelTitle))
        // An evaluation whose call already ended (Cancel right after the
        // call, the caller gone) is interrupted here and never touches the reader.
        request.record.evaluation = evaluation
        try request.record.checkNotEnded()

        // The system sheet, if the caller's session has a prompt agent (PromptAgents.swift).
        await promptEvaluationStarted(evaluation, record: request.record, policy: policy)
        let way: Way
        do throws(ServiceError) {
            switch policy {
            case .deviceOwnerAuthenticationWithBiometrics:
                way = try await fingerprint(evaluation)
            case .deviceOwnerAuthentication:
                way = try await fingerprintOrPassword(evaluation, biometrics: biometrics == nil)
            }
        } catch {
            promptEvaluationEnded(evaluation, error: error)
            throw error
        }
        promptEvaluationEnded(evaluation, error: nil)
        if way == .fingerprint, let matchedSet = evaluation.matchedSet {
            lastFingerprintMatch[uid] = EvaluationPlan.LastMatch(time: .now, enrolledSet: matchedSet)
        }
    }

    /// What a reused match is tied to: each usable print's finger, source and
    /// enrollment stamp (new on every enrollment). Cheap, since the scan loop
    /// and the preflight have the prints at hand already.
    static func enrolledSet(_ prints: [PrintStore.StoredPrint]) -> [[UInt8]] {
        prints.map { Array("\($0.finger.rawValue) \($0.source.rawValue) ".utf8) + $0.stamp }
    }

    /// Waits for the reader (at most `readerQueueWait`), opens it, then scans.
    func fingerprint(_ evaluation: Evaluation) async throws(ServiceError) -> Way {
        evaluation.ticket.reader = reader(for: evaluation.uid)
        let waitLimit = EventLoopTimers.after(ServiceLimits.readerQueueWait) { evaluation.stopBiometrics(.queueTimedOut) }
        let acquired = await queue.acquire(evaluation.ticket)
        waitLimit.cancel()
        guard acquired else {
            throw evaluation.biometricInterruption?.error ?? ServiceErrors.la(.systemCancel, "cancelled while waiting")
        }
        defer { queue.release() }
        // The evaluation may have ended while it waited.
        if let interruption = evaluation.biometricInterruption { throw interruption.error }
        // The scan timeout bounds opening (another program may hold the
        // reader) and scanning together: the caller waits at most that long.
        let timeout = EventLoopTimers.after(configuration.scanTimeout) { [weak self] in
            evaluation.stopBiometrics(.timedOut)
            // A wait that timed out on a warm reader: this user waits before the next one.
            if let self {
                let warm = self.reader(for: evaluation.uid).map(self.readers.isWarm) ?? false
                self.fairness.waitTimedOut(evaluation.uid, at: .now, readerWarm: warm)
            }
        }
        defer { timeout.cancel() }
        guard let identity = reader(for: evaluation.uid) else { throw noReaderError }
        evaluation.ticket.reader = identity
        let device = try await openReader(identity, cancellable: evaluation.cancellable,
                                          interruption: { evaluation.biometricInterruption },
                                          busy: { [weak self] in self?.emitEvaluationStatus(evaluation, .readerBusy) })
        defer { readers.relinquish(device) }
        _ = try await scan(evaluation, on: device)
        return .fingerprint
    }

    /// Holds the reader: scans until a match, too many failures, or an interruption.
    func scan(_ evaluation: Evaluation, on device: Readers.Reader) async throws(ServiceError) -> Bool {
        if let interruption = evaluation.biometricInterruption { throw interruption.error }
        var failures = 0
        var scans = 0
        emitEvaluationStatus(evaluation, .placeFinger)
        while true {
            // Re-read after every await: prints may have changed, the reader may be gone.
            let usable = try usablePrints(for: evaluation.uid)
            // The user's prints are all on the reader that serves them: the one held.
            guard reader(for: evaluation.uid) == device.identity else { throw noReaderError }
            let gallery = usable.map(\.print)
            // A reader that can only verify compares a scan with one print: the
            // first scan tries the finger that matched last time (the one the
            // person usually uses), each new scan the next of the user's
            // prints, so every enrolled finger gets its turn within one
            // evaluation (docs/SECURITY.md: each no-match counts).
            let offset = Self.galleryStart(usable.map(\.finger), lastMatched: lastFinger.finger(of: evaluation.uid),
                                           scansSoFar: scans)
            scans += 1
            let result: Readers.ScanResult
            do {
                result = try await readers.identify(Array(gallery[offset...] + gallery[..<offset]), on: device,
                                                   cancellable: evaluation.cancellable)
            } catch {
                throw scanError(error, evaluation, device)
            }
            ServiceActor.assertOnLoop()
            switch result {
            case .match(let matched):
                evaluation.matchedSet = Self.enrolledSet(usable)
                if let finger = usable.first(where: { $0.print.pointer == matched.pointer })?.finger {
                    lastFinger.remember(finger, for: evaluation.uid)
                }
                fairness.scanJudged(evaluation.uid)
                try? lockout.reset(evaluation.uid)   // logged; the count stays (fails closed)
                return true
            case .noMatch:
                failures += 1
                fairness.scanJudged(evaluation.uid)
                // A completed no-match always counts, whatever ends the
                // evaluation next; one that cannot be written ends it.
                let lockedOut: Bool
                do {
                    lockedOut = try lockout.recordFailure(evaluation.uid)
                } catch {
                    throw ServiceError(.storageFailed,
                                              "the failed attempt could not be recorded; try again later")
                }
                let reader = gallery.first.map { "\(PrintCodec.driver(of: $0))/\(PrintCodec.deviceID(of: $0))" } ?? "?"
                Log.notice("failed fingerprint match for uid \(evaluation.uid) on \(reader) "
                           + "(\(lockout.failures(of: evaluation.uid)) of \(LockoutStore.limit) in a row)")
                switch Self.afterNoMatch(failures: failures, lockedOut: lockedOut,
                                         attemptsPerEvaluation: configuration.attemptsPerEvaluation) {
                case .lockedOut:
                    Log.warning("biometry locked out for uid \(evaluation.uid) after \(LockoutStore.limit) failed matches")
                    throw ServiceErrors.la(.biometryLockout, "too many failed attempts; biometry is locked")
                case .failed:
                    throw ServiceErrors.la(.authenticationFailed, "the fingerprint did not match")
                case .scanAgain:
                    emitEvaluationStatus(evaluation, .noMatch)
                }
            case .retry(let kind):
                emitEvaluationStatus(evaluation, kind.progress)
            }
        }
    }

    /// Where in the user's prints a scan starts (a verify-only reader tries
    /// only that one), as pure logic: the last matched finger first, then
    /// round the list, one step per scan.
    nonisolated static func galleryStart(_ fingers: [FingerName], lastMatched: FingerName?, scansSoFar: Int) -> Int {
        guard !fingers.isEmpty else { return 0 }
        let first = lastMatched.flatMap { fingers.firstIndex(of: $0) } ?? 0
        return (first + scansSoFar) % fingers.count
    }

    /// What a judged no-match means, as pure logic: the persisted lockout
    /// wins over this evaluation's own attempts; until either is reached,
    /// the person scans again.
    enum AfterNoMatch: Equatable { case lockedOut, failed, scanAgain }

    nonisolated static func afterNoMatch(failures: Int, lockedOut: Bool, attemptsPerEvaluation: Int) -> AfterNoMatch {
        if lockedOut { return .lockedOut }
        return failures >= attemptsPerEvaluation ? .failed : .scanAgain
    }

    func scanError(_ error: GLibError, _ evaluation: Evaluation, _ device: Readers.Reader) -> ServiceError {
        if let interruption = evaluation.biometricInterruption { return interruption.error }
        if let unusable = readerUnusable(error, device) { return unusable }
        Log.warning("scan failed: \(error)")
        return ServiceErrors.la(.systemCancel, "the fingerprint reader failed: \(error.message)")
    }

    func emitEvaluationStatus(_ evaluation: Evaluation, _ progress: EvaluationProgress) {
        try? bus.emit(path: ObjectPath(stringLiteral: LocalAuthBus.objectPath), interface: LocalAuthBus.interface,
                      member: LocalAuthBus.Signal.evaluationStatus,
                      arguments: [.string(evaluation.requestID), .string(progress.rawValue)],
                      destination: evaluation.sender)
        promptStatus(evaluation, progress)
    }

    /// The reader-fairness rule (ReaderFairness.swift): a user whose waits for
    /// a finger keep timing out on a warm reader waits before the next one.
    /// The password of policy 2 is never held back.
    func refuseWhileCooling(_ uid: UInt32) throws(ServiceError) {
        let warm = reader(for: uid).map(readers.isWarm) ?? false
        let remaining = fairness.remaining(uid, at: .now, readerWarm: warm)
        guard remaining > 0 else { return }
        throw ServiceError(.readerCoolingDown,
                                  "the fingerprint reader is cooling down; try again in about \(Int(remaining.rounded(.up))) s")
    }

    func cancel(_ request: Request) throws(ServiceError) -> [DBusValue] {
        guard let id = request.arguments[0].string else { throw ServiceErrors.invalidArgs("request id must be a string") }
        registry.end(requestID: id, of: request.sender, .appCancelled)
        return []
    }

    /// EndEvaluation: the app ends an evaluation as the person's cancel or fallback.
    func endEvaluation(_ request: Request) throws(ServiceError) -> [DBusValue] {
        guard let id = request.arguments[0].string, let reason = request.arguments[1].string else {
            throw ServiceErrors.invalidArgs("EndEvaluation takes (ss)")
        }
        let interruption: Evaluation.Interruption
        switch reason {
        case "user-cancel": interruption = .userCancelled
        case "user-fallback": interruption = .userFallback
        case "app-cancel": interruption = .appCancelled
        default:
            throw ServiceErrors.invalidArgs("unknown reason \(ServiceErrors.echo(reason)); "
                                            + "use user-cancel, user-fallback or app-cancel")
        }
        registry.end(requestID: id, of: request.sender, interruption)
        return []
    }

    /// ResetLockout: an administrator lifts a user's biometry lockout.
    func resetLockout(_ request: Request) throws(ServiceError) -> [DBusValue] {
        guard let name = request.arguments[0].string else { throw ServiceErrors.invalidArgs("ResetLockout takes (s)") }
        let uid: UInt32
        if name.isEmpty {
            uid = request.uid
        } else {
            guard let found = Users.uid(of: name) else {
                throw ServiceErrors.invalidArgs("no user named \(ServiceErrors.echo(name))")
            }
            uid = found
        }
        do {
            try lockout.reset(uid)
        } catch {
            throw ServiceError(.storageFailed, "could not save the lockout count")
        }
        Log.info("biometry lockout of uid \(uid) reset by uid \(request.uid)")
        return []
    }
}

extension RetryKind {
    var progress: EvaluationProgress {
        switch self {
        case .general: .retryScan
        case .tooShort: .swipeTooShort
        case .centerFinger: .fingerNotCentered
        case .removeFinger: .removeAndRetry
        }
    }

    /// The same advice during an enrollment: the contract names each
    /// enrollment status after the evaluation one, with `enroll-` before it.
    var enrollProgress: EnrollProgress {
        EnrollProgress(rawValue: "enroll-" + progress.rawValue) ?? .retryScan
    }
}
