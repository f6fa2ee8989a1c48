import DBusCore
import LocalAuthShared

// The fingerprint way of an evaluation, as a front-end of the one verify
// operation (the Verifier, Verification.swift): an evaluation's request (any
// of the user's prints on the reader that serves them, `--attempts` judged
// scans, the scan timeout from the turn bounding opening and scanning
// together), its statuses, and its LAError.
extension Evaluator {
    /// Waits for the reader (at most `readerQueueWait`), opens it, then scans.
    func fingerprint(_ evaluation: Evaluation) async throws(ServiceError) -> Way {
        let request = Verifier.Job(
            uid: evaluation.uid, caller: evaluation.caller, attempts: configuration.attemptsPerEvaluation,
            queueWait: ServiceLimits.readerQueueWait, fingerWait: .fromTurn(configuration.scanTimeout))
        let result: Verifier.Verdict
        do {
            result = try await verifier.verify(request, for: evaluation) { [observers] progress in
                switch progress {
                case .readerBusy: observers.status(evaluation, .readerBusy)
                case .readerReady: observers.status(evaluation, .placeFinger)
                case .retry(let kind): observers.status(evaluation, kind.progress)
                case .noMatchScanAgain: observers.status(evaluation, .noMatch)
                }
            }
        } catch {
            throw evaluationError(error, evaluation)
        }
        switch result {
        case .matched(_, let enrolledSet):
            evaluation.matchedSet = enrolledSet
            return .fingerprint
        case .noMatch(lockedOut: true):
            throw ServiceErrors.la(.biometryLockout, "too many failed attempts; biometry is locked")
        case .noMatch(lockedOut: false):
            throw ServiceErrors.la(.authenticationFailed, "the fingerprint did not match")
        }
    }

    /// The caller's error for a verify that the reader did not judge: the
    /// evaluation's own end first (a cancelled scan fails too), then why.
    func evaluationError(_ failure: Verifier.Failure, _ evaluation: Evaluation) -> ServiceError {
        switch failure {
        case .refused(let error), .notOpened(let error):
            return error
        case .interrupted:
            return evaluation.biometricInterruption?.error ?? ServiceErrors.la(.systemCancel, "cancelled while waiting")
        case .readerFailed(let error, _, let unusable):
            if let interruption = evaluation.biometricInterruption { return interruption.error }
            if let unusable { return unusable }
            Log.warning("scan failed: \(error)")
            return ServiceErrors.la(.systemCancel, "the fingerprint reader failed: \(error.message)")
        case .notRecorded:
            return ServiceError(.storageFailed, "the failed attempt could not be recorded; try again later")
        }
    }
}

extension RetryKind {
    var progress: EvaluationProgress {
        switch self {
        case .general: .retryScan
        case .tooShort: .swipeTooShort
        case .centerFinger: .fingerNotCentered
        case .removeFinger: .removeAndRetry
        case .tooFast: .tooFast
        }
    }

    /// The same advice during an enrollment: the contract names each
    /// enrollment status after the evaluation one, with `enroll-` before it.
    var enrollProgress: EnrollProgress {
        EnrollProgress(rawValue: "enroll-" + progress.rawValue) ?? .retryScan
    }
}
