import DBusCore
import LocalAuthShared

// The fingerprint way of an evaluation: the wait for the reader queue, the
// scan timeout, the scan loop with its attempts and the lockout count, and
// the reader-fairness rule. Every reader, print and clock goes through the
// Evaluator's seams (EvaluatorSeams.swift); the state it leaves behind
// through Evaluator.swift's methods.
extension Evaluator {
    /// Waits for the reader (at most `readerQueueWait`), opens it, then scans.
    func fingerprint(_ evaluation: Evaluation) async throws(ServiceError) -> Way {
        evaluation.ticket.reader = readers.reader(for: evaluation.uid)
        let waitLimit = clock.after(ServiceLimits.readerQueueWait) { evaluation.stopBiometrics(.queueTimedOut) }
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
        let timeout = clock.after(configuration.scanTimeout) { [weak self] in
            evaluation.stopBiometrics(.timedOut)
            // A wait that timed out on a warm reader: this user waits before the next one.
            self?.waitTimedOut(evaluation.uid)
        }
        defer { timeout.cancel() }
        guard let identity = readers.reader(for: evaluation.uid) else { throw readers.noReaderError }
        evaluation.ticket.reader = identity
        let session = try await readers.open(
            identity, cancellable: evaluation.cancellable,
            interruption: { evaluation.biometricInterruption },
            busy: { [weak self] in self?.observers.status(evaluation, .readerBusy) })
        defer { session.release() }
        _ = try await scan(evaluation, on: session)
        return .fingerprint
    }

    /// Holds the reader: scans until a match, too many failures, or an interruption.
    func scan(_ evaluation: Evaluation, on session: any ReaderSession) async throws(ServiceError) -> Bool {
        if let interruption = evaluation.biometricInterruption { throw interruption.error }
        var failures = 0
        observers.status(evaluation, .placeFinger)
        while true {
            // Re-read after every await: prints may have changed, the reader may be gone.
            let usable = try usablePrints(for: evaluation.uid)
            // The user's prints are all on the reader that serves them: the one held.
            guard readers.reader(for: evaluation.uid) == session.identity else { throw readers.noReaderError }
            // A reader that can only verify compares a scan with one print:
            // the finger that matched last time (the one the person usually
            // uses) first, then one more of the user's prints after each
            // judged no-match, counted since the last match and not per
            // evaluation, so the next evaluation goes on where this one
            // stops and every enrolled finger is reached (docs/SECURITY.md,
            // "A verify-only reader"). A scan to repeat tries the same print.
            let offset = Self.galleryStart(
                usable.map(\.finger), lastMatched: lastMatchedFinger(of: evaluation.uid),
                missesSinceMatch: missesSinceMatch(of: evaluation.uid))
            let gallery = Array(usable[offset...] + usable[..<offset])
            let result: ScanOutcome
            do {
                result = try await session.scan(gallery, cancellable: evaluation.cancellable)
            } catch {
                throw scanError(error, evaluation, session)
            }
            ServiceActor.assertOnLoop()
            switch result {
            case .match(let index):
                evaluation.matchedSet = Self.enrolledSet(usable)
                scanMatched(evaluation.uid, finger: index.flatMap { gallery.indices.contains($0) ? gallery[$0].finger : nil })
                return true
            case .noMatch:
                failures += 1
                // A completed no-match always counts, whatever ends the
                // evaluation next; one that cannot be written ends it.
                let lockedOut: Bool
                do {
                    lockedOut = try scanDidNotMatch(evaluation.uid)
                } catch {
                    throw ServiceError(
                        .storageFailed,
                        "the failed attempt could not be recorded; try again later")
                }
                Log.notice(
                    "failed fingerprint match for uid \(evaluation.uid) on \(session.identity) "
                        + "(\(failedMatches(of: evaluation.uid)) of \(LockoutStore.limit) in a row)")
                switch Self.afterNoMatch(
                    failures: failures, lockedOut: lockedOut,
                    attemptsPerEvaluation: configuration.attemptsPerEvaluation)
                {
                case .lockedOut:
                    Log.warning("biometry locked out for uid \(evaluation.uid) after \(LockoutStore.limit) failed matches")
                    throw ServiceErrors.la(.biometryLockout, "too many failed attempts; biometry is locked")
                case .failed:
                    throw ServiceErrors.la(.authenticationFailed, "the fingerprint did not match")
                case .scanAgain:
                    observers.status(evaluation, .noMatch)
                }
            case .retry(let kind):
                observers.status(evaluation, kind.progress)
            }
        }
    }

    /// Where in the user's prints a scan starts (a verify-only reader tries
    /// only that one), as pure logic: the last matched finger first, then
    /// round the list, one step per judged no-match since the last match.
    nonisolated static func galleryStart(_ fingers: [FingerName], lastMatched: FingerName?, missesSinceMatch: Int) -> Int {
        guard !fingers.isEmpty else { return 0 }
        let first = lastMatched.flatMap { fingers.firstIndex(of: $0) } ?? 0
        return (first + missesSinceMatch % fingers.count) % fingers.count
    }

    /// What a judged no-match means, as pure logic: the persisted lockout
    /// wins over this evaluation's own attempts; until either is reached,
    /// the person scans again.
    enum AfterNoMatch: Equatable { case lockedOut, failed, scanAgain }

    nonisolated static func afterNoMatch(failures: Int, lockedOut: Bool, attemptsPerEvaluation: Int) -> AfterNoMatch {
        if lockedOut { return .lockedOut }
        return failures >= attemptsPerEvaluation ? .failed : .scanAgain
    }

    /// The caller's error for a scan that failed: the evaluation's own end
    /// first (a cancelled scan fails too), then what the reader said.
    func scanError(_ error: GLibError, _ evaluation: Evaluation, _ session: any ReaderSession) -> ServiceError {
        if let interruption = evaluation.biometricInterruption { return interruption.error }
        if let unusable = session.unusable(error) { return unusable }
        Log.warning("scan failed: \(error)")
        return ServiceErrors.la(.systemCancel, "the fingerprint reader failed: \(error.message)")
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
