import DBusCore
import LocalAuthRights
import LocalAuthShared

// Whose rights (docs/RIGHTS.md, "Whose rights"): a uid's rights belong to the
// account that saved them, as prints belong to the account they were
// enrolled for (PrintStore). The account's name is recorded with the uid's
// rights; when the uid's account is another name now (the old account was
// deleted and its uid given to a new one), every rights call of that uid is
// refused with AccountChanged and logged, before any right is read: the new
// account cannot list, use, replace or remove the old account's secrets with
// its own finger or password. An administrator removes them
// (`rm -r /var/lib/localauth/rights/UID`).
extension RightsService {
    /// Refuses the rights calls of `uid` if its rights belong to another
    /// account; `saving` records the account if nothing is recorded yet.
    func checkRightsAccount(_ uid: UInt32, saving: Bool = false) throws(ServiceError) {
        let storage = try state.storage()
        let account = RightsPolicy.account(of: uid, name: seams.accounts.accountName(of: uid))
        do throws(RightsError) {
            try storage.checkAccount(uid: uid, account: account, saving: saving)
        } catch where error.code == .accountChanged {
            Log.warning("rights: refused to uid \(uid): \(error.message)")
            throw ServiceError(.accountChanged,
                                      "the rights kept for uid \(uid) belong to a deleted account, not to "
                                      + "\(RightOwner.loggable(account)); they cannot be used (an administrator removes them)")
        } catch {
            throw RightsErrors.rights(error)
        }
    }
}
