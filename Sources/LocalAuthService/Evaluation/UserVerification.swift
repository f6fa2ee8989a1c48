import DBusCore
import LocalAuthShared

// VerifyUser: the PAM module's way in (pam_localauth, docs/PAM.md). sudo,
// login and lock screens run PAM as root on a user's behalf, so the caller is
// root and the finger is the user's: the one method where the two differ.
// Everything else is EvaluatePolicy's policy 1: the same reader queue, scan
// loop, lockout, remote-session, lid, sleep and password-after-boot rules.
extension Evaluator {
    /// VerifyUser(s user, a{sv} options): `user`'s fingerprint, for a root
    /// caller. Returns the uid whose finger matched (its row records a
    /// login-secret ticket for it).
    @discardableResult
    func verifyUser(_ request: Request, _ arguments: VerifyUserArguments) async throws(ServiceError) -> UInt32 {
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
        // The caller is the PAM transaction's own process (pam_localauth
        // connects from inside sudo, su, login), which runs in the session of
        // the person who typed: only the active local session on a seat is at
        // the reader. Root skips polkit's active-session check, so this is
        // what keeps user A, looping `su victim` in a session switched away
        // from, from queueing scans that the victim's next touch would answer.
        guard let uid = Users.uid(of: arguments.user) else {
            throw ServiceErrors.invalidArgs("there is no user named \(ServiceErrors.echo(arguments.user))")
        }
        let presence = await verifier.environment.presence(of: request.caller)
        try request.record.checkNotEnded()
        if let refusal = Presence.refusal(presence) { throw refusal }
        try checkBiometricsUsable(for: uid)
        try verifier.refuseWhileCooling(uid)

        let evaluation = Evaluation(requestID: arguments.options.requestID ?? Posix.randomID(), caller: request.caller,
                                    uid: uid, queue: verifier.gate.queue,
                                    prompt: .init(reason: "Authenticate as \(arguments.user)", fallbackTitle: "",
                                                  cancelTitle: nil))
        request.record.work = evaluation
        try request.record.checkNotEnded()
        _ = try await fingerprint(evaluation)
        Log.info("fingerprint of uid \(uid) verified for a PAM module")
        return uid
    }
}
