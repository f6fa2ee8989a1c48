import DBusCore
import LocalAuthShared

// The rules of an LAContext evaluation, applied to fprintd's VerifyStart and
// answered in fprintd's vocabulary (docs/FPRINTD.md): fprintd has no error
// for "locked out", so every refusal is PermissionDenied with a message that
// says which (a client can tell it from a no-match, which is a VerifyStatus).
/// Messages start with these words, so that a lock screen can tell them apart.
enum FprintdRefusal {
    static let lockedOut = "Locked out"
    static let passwordRequired = "Password required"
    static let notAtTheReader = "Not at the reader"
    static let readerUnavailable = "Reader unavailable"
}

extension FprintdDevice {
    /// Why the person behind `caller` may not scan `uid`'s finger on `reader`
    /// now, or nil. Presence is the same function as an evaluation's
    /// (Callers/Presence.swift: the active local session, or the user's display session).
    func refusal(_ caller: CallerRecord, uid: UInt32, reader: Readers.Identity) async -> ServiceError? {
        let presence = await seams.presence(of: caller)
        if let refusal = Presence.refusal(presence) {
            return ServiceError(.permissionDenied, "\(FprintdRefusal.notAtTheReader): \(refusal.message)")
        }
        guard seams.isReachable(reader) else {
            return ServiceError(.permissionDenied, "\(FprintdRefusal.readerUnavailable): \(seams.noReaderError.message)")
        }
        if seams.verifier.isLockedOut(uid) {
            return ServiceError(.permissionDenied, "\(FprintdRefusal.lockedOut): too many failed fingerprint matches "
                                                   + "(\(LockoutStore.limit) in a row); use your password")
        }
        if let needed = seams.passwordNeeded(uid) {
            return ServiceError(.permissionDenied, "\(FprintdRefusal.passwordRequired): \(needed.message)")
        }
        return nil
    }
}
