import DBusCore
import LocalAuthShared

// VerifyUser: the PAM module's way in (pam_localauth, docs/PAM.md). sudo,
// login and lock screens run PAM as root on a user's behalf, so the caller is
// root and the finger is the user's: the one method where the two differ.
// Everything else is EvaluatePolicy's policy 1: the same reader queue, scan
// loop, lockout, remote-session, lid, sleep and password-after-boot rules.
extension LocalAuthService {
    /// VerifyUser(s user, a{sv} options): `user`'s fingerprint, for a root caller.
    func verifyUser(_ request: Request) async throws(ServiceError) -> [DBusValue] {
        // polkit always authorizes root (before any rule runs), so the
        // action cannot turn VerifyUser off; `--no-verify-user` can. Only
        // root may ask at all: a user who could name another user would
        // probe their prints and lockout.
        guard configuration.verifyUserAllowed else {
            throw ServiceErrors.permissionDenied("VerifyUser is turned off on this machine (localauthd --no-verify-user)")
        }
        guard request.uid == 0 else {
            throw ServiceErrors.permissionDenied("VerifyUser is for root callers (PAM modules acting for a user)")
        }
        let target = try Self.verifiedUser(request.arguments[0])
        let options = try Self.evaluationOptions(request.arguments[1])
        // The caller is the PAM transaction's own process (pam_localauth
        // connects from inside sudo, su, login), which runs in the session of
        // the person who typed: only the active local session on a seat is at
        // the reader. Root skips polkit's active-session check, so this is
        // what keeps user A, looping `su victim` in a session switched away
        // from, from queueing scans that the victim's next touch would answer.
        let presence = await presence(of: request)
        try request.record.checkNotEnded()
        if let refusal = EnvironmentRules.refusal(presence) { throw refusal }
        _ = try usablePrints(for: target.uid)
        try refuseWhileCooling(target.uid)

        let evaluation = Evaluation(requestID: options.requestID ?? Posix.randomID(), sender: request.sender,
                                    uid: target.uid, queue: queue,
                                    prompt: .init(reason: "Authenticate as \(target.name)", fallbackTitle: "",
                                                  cancelTitle: nil))
        request.record.evaluation = evaluation
        try request.record.checkNotEnded()
        _ = try await fingerprint(evaluation)
        Log.info("fingerprint of uid \(target.uid) verified for a PAM module")
        return []
    }

    /// The `user` argument: an existing account's name.
    static func verifiedUser(_ value: DBusValue) throws(ServiceError) -> (name: String, uid: UInt32) {
        guard let name = value.string, !name.isEmpty, name.utf8.count <= LocalAuthBus.maximumTextLength else {
            throw ServiceErrors.invalidArgs("user must be an account name of 1 to \(LocalAuthBus.maximumTextLength) bytes")
        }
        guard let uid = Users.uid(of: name) else {
            throw ServiceErrors.invalidArgs("there is no user named \(ServiceErrors.echo(name))")
        }
        return (name, uid)
    }
}
