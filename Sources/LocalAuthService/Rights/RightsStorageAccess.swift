import DBusCore
import LocalAuthRights
import LocalAuthShared

// The way from a call to its rights on disk: which app the call is for,
// the right's owner, and the verified right (from the cache, else the storage).
extension RightsService {
    /// The app a rights call is for (Callers/AppIdentity.swift): the caller's
    /// proven sandbox, else the `app-id` option, once the caller's uid is
    /// known to own its rights (RightsAccount.swift). `saving` records the
    /// account if nothing is recorded yet.
    func rightsApp(_ request: Request, _ options: RightsAppOptions, saving: Bool = false) async throws(ServiceError) -> String {
        _ = try await state.openStorage()
        ServiceActor.assertOnLoop()
        try request.record.checkNotEnded()
        try checkRightsAccount(request.uid, saving: saving)
        return try AppIdentity.appID(seams.callerApps.app(of: request.caller), declared: options.declaredAppID)
    }

    func rightOwner(
        _ request: Request, identifier: String, app options: RightsAppOptions,
        saving: Bool = false
    ) async throws(ServiceError) -> RightOwner {
        let app = try await rightsApp(request, options, saving: saving)
        do throws(RightsError) {
            return try RightOwner(uid: request.uid, appID: app, identifier: identifier)
        } catch {
            throw RightsErrors.rights(error)
        }
    }

    /// The verified right of `owner`, or nil if it has none; damage throws.
    func lookUpRight(_ owner: RightOwner) throws(ServiceError) -> RightRecord? {
        if let record = state.cached(owner) { return record }
        let storage = try state.storage()
        do throws(RightsError) {
            let record = try storage.load(owner)
            state.remember(record)
            return record
        } catch  where error.code == .notFound {
            return nil
        } catch {
            throw RightsErrors.rights(error)
        }
    }

    /// The verified right of `owner`; RightNotFound if it has none.
    func loadRight(_ owner: RightOwner) throws(ServiceError) -> RightRecord {
        guard let record = try lookUpRight(owner) else { throw RightsErrors.rightNotFound }
        return record
    }
}
