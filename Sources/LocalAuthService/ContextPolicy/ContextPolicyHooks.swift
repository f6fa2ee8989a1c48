import LocalAuthShared

// The hooks: one line at the start of each call that may scan a finger,
// each naming its context (docs/POLICY.md). Nothing here waits: a refused
// context is answered before the reader, presence or polkit's rules for the
// finger are looked at.
extension ContextPolicy {
    /// EvaluatePolicy, CanEvaluatePolicy: the `apps` context of the caller's
    /// own account. Recorded on the call, not thrown: the evaluator treats it
    /// as biometrics unusable, so policy 1 fails at once with
    /// BiometryNotAvailable and policy 2 offers the password alone (Apple's
    /// deviceOwnerAuthentication when biometry is not available).
    static func markApps(_ request: Request, method: String) {
        guard let policy = current else { return }
        request.record.contextRefusal = policy.refusal(
            [.apps], uid: request.uid, caller: request.caller, method: method,
            logged: method != LocalAuthBus.Method.canEvaluatePolicy)
    }

    /// AuthorizeRight: the `app-secrets` context, the same way as `markApps`.
    static func markAppSecrets(_ request: Request) {
        guard let policy = current else { return }
        request.record.contextRefusal = policy.refusal(
            [.appSecrets], uid: request.uid, caller: request.caller, method: LocalAuthRightsBus.Method.authorizeRight)
    }

    /// VerifyUser (pam_localauth): the contexts of the PAM service name it
    /// sends and of the proven program, for the user whose finger it asks
    /// for. Thrown: the module answers PAM_AUTHINFO_UNAVAIL at once, and the
    /// stack goes on to the password. An unknown user is VerifyUser's own
    /// error, answered after this.
    static func admitVerifyUser(_ request: Request, user: String, pamService: String?) throws(ServiceError) {
        guard let policy = current, let uid = Users.uid(of: user) else { return }
        let contexts = AuthContext.ofPAM(service: pamService, executable: policy.executable(of: request.caller))
        if let refusal = policy.refusal(contexts, uid: uid, caller: request.caller, method: LocalAuthBus.Method.verifyUser) {
            throw refusal
        }
    }

    /// fprintd's VerifyStart, for the claimed user: the context of the
    /// proven program (pam_fprintd runs inside sudo, polkit's helper, a
    /// display manager's worker). fprintd's contract names the refusal
    /// NoSuchDevice, as when there is no reader: its clients go to the password.
    static func admitFprintdVerify(_ request: Request, uid: UInt32) throws(ServiceError) {
        guard let policy = current else { return }
        let context = AuthContext.ofFprintdClient(executable: policy.executable(of: request.caller))
        if let refusal = policy.refusal([context], uid: uid, caller: request.caller, method: "VerifyStart") { throw refusal }
    }
}
