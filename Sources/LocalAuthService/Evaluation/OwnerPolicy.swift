import DBusCore
import LocalAuthShared

// Policy 2 (deviceOwnerAuthentication): the fingerprint and the account
// password, offered at the same time as two children of one task group; the
// first to succeed wins and cancels the other. The password is asked by the
// caller's polkit agent and checked by PAM; localauthd never sees it.
extension Evaluator {
    /// Policy 2: the fingerprint and the account password (through polkit's
    /// agent) are offered at the same time; the first to succeed wins, so nobody
    /// waits for a fingerprint timeout to type a password. The evaluation fails
    /// only when both ways have failed.
    func fingerprintOrPassword(_ evaluation: Evaluation, biometrics: Bool) async throws(ServiceError) -> Way {
        let outcome = await firstSuccess(evaluation, biometrics: biometrics)
        switch outcome {
        case .success(.password):
            ownerPasswordAccepted(evaluation.uid)
            return .password
        case .success(.fingerprint):
            return .fingerprint
        case .failure(let error):
            throw evaluation.interruption?.error ?? error
        }
    }

    /// Runs the ways of policy 2 at once; the first success, or the failures.
    func firstSuccess(_ evaluation: Evaluation, biometrics: Bool) async -> Result<Way, ServiceError> {
        // A task group: both ways run as children on the service's actor (the
        // loop); the first success cancels the other way's C operation (its
        // GCancellable), and the group returns once both have ended.
        return await withTaskGroup(of: WayOutcome.self) { group in
            if biometrics {
                group.addTask { [self] in
                    let failure = await self.fingerprintFailure(evaluation)
                    return WayOutcome(way: .fingerprint, failure: failure)
                }
            }
            group.addTask { [self] in
                let failure = await self.password(evaluation)
                return WayOutcome(way: .password, failure: failure)
            }
            var failures: [Way: ServiceError] = [:]
            while let outcome = await group.next() {
                ServiceActor.assertOnLoop()
                guard let failure = outcome.failure else {
                    evaluation.stopBiometrics(.superseded)
                    evaluation.passwordCancellable.cancel()
                    group.cancelAll()
                    return .success(outcome.way)
                }
                failures[outcome.way] = failure
            }
            // Both failed: the password's verdict is the evaluation's.
            return .failure(failures[.password] ?? failures[.fingerprint]
                            ?? ServiceErrors.la(.systemCancel, "the evaluation ended"))
        }
    }

    /// Policy 2's fingerprint way; nil on success.
    func fingerprintFailure(_ evaluation: Evaluation) async -> ServiceError? {
        do throws(ServiceError) {
            _ = try await fingerprint(evaluation)
            return nil
        } catch {
            return error
        }
    }

    /// Policy 2's password, asked by the caller's polkit agent; nil on success.
    func password(_ evaluation: Evaluation) async -> ServiceError? {
        guard verifier.environment.hasPassword(evaluation.uid) else {
            return ServiceErrors.la(.passcodeNotSet, "the account has no password")
        }
        // The person's password dialog says who asks and why: the program the
        // service sees (not a name the app chose) and the app's reason.
        let identity = verifier.environment.identity(of: evaluation.sender)
        let name = identity?.name ?? "An unidentified program"
        let program = identity?.program ?? ""
        let message = "\(name) asks you to confirm that you are the owner of this account: \(evaluation.prompt.reason)"
        let decision = await ownerPassword.check(sender: evaluation.sender,
                                                 details: ["polkit.message": message,
                                                           "org.example.LocalAuth.program": program,
                                                           "org.example.LocalAuth.reason": evaluation.prompt.reason],
                                                 timeout: configuration.passwordTimeout,
                                                 cancellable: evaluation.passwordCancellable)
        switch decision {
        case .authorized: return nil
        case .dismissed: return ServiceErrors.la(.userCancel, "the user dismissed the password prompt")
        case .denied(let why):
            if let interruption = evaluation.interruption { return interruption.error }
            return ServiceErrors.la(.authenticationFailed, "the password was not accepted: \(why)")
        }
    }
}

/// The ways an evaluation can succeed.
enum Way: Sendable { case fingerprint, password }

/// How one way of policy 2 ended: nil failure is success.
struct WayOutcome: Sendable {
    let way: Way
    let failure: ServiceError?
}
