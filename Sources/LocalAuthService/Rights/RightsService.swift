import DBusCore
import Glibc
import LocalAuthRights
import LocalAuthShared

// Rights and secrets (docs/RIGHTS.md): Apple's LARightStore and
// LAPersistedRight. A right's secret and private key stay in the service,
// sealed at rest (LocalAuthRights); the secret leaves only as the answer to
// LoadSecret of an authorized caller, the private key never. Authorizing a
// right is a real evaluation (the `RightsEvaluation` seam) and gives the
// caller a handle that only its own bus connection can use, until
// Deauthorize, the caller leaving the bus, the right removed or replaced, or
// the authorization's lifetime (at most `RightsServiceLimits.authorizationSeconds`).
//
// This file: the component and the store's methods (SaveRight … GetPublicKey)
// and authorization (CanAuthorizeRight, AuthorizeRight, Deauthorize, the
// caller leaving). Arguments: RightsArguments.swift; rules: RightsPolicy.swift;
// storage: RightsStorageAccess.swift, RightsAccount.swift; using a handle:
// RightKeyOperations.swift; seams: RightsSeams.swift, served by RightsWiring.swift.

/// The rights component: owns the rights state (storage, authorizations,
/// verified cache, the TPM lane) and answers the rights methods.
@ServiceActor
final class RightsService {
    let state: RightsState
    let seams: RightsSeams
    /// How long an authorization lasts (`--rights-authorization-timeout`, at most 5 minutes).
    let authorizationLifetime: Duration

    init(stateDirectory: String, keyBackend: KeyBackendChoice, authorizationSeconds: Double, seams: RightsSeams) {
        self.seams = seams
        state = RightsState(stateDirectory: stateDirectory, keyBackend: keyBackend, clock: seams.clock)
        authorizationLifetime = .seconds(min(authorizationSeconds, RightsServiceLimits.authorizationSeconds))
    }

    // MARK: The store

    /// SaveRight(identifier, requirement, options{app-id, secret}) → public key.
    func saveRight(_ request: Request, _ arguments: SaveRightArguments) async throws(ServiceError) -> [DBusValue] {
        let owner = try await rightOwner(request, identifier: arguments.identifier, app: arguments.app, saving: true)
        let requirement = try RightsPolicy.requirement(arguments.requirement) { seams.enrolledSets.enrolledSet(of: request.uid) }
        let storage = try state.storage()
        let record = try await makeRight(owner: owner, requirement: requirement, secret: arguments.secret, storage: storage)
        ServiceActor.assertOnLoop()
        try request.record.checkNotEnded()
        do throws(RightsError) {
            state.forget(uid: owner.uid, appID: owner.appID, identifier: owner.identifier)
            try storage.save(record)
            state.remember(record)
            // A replaced right is another right: its authorizations end.
            state.dropAll { $0.owner == owner }
            Log.info("rights: saved \(owner) (\(arguments.requirement.rawValue))")
            return [.bytes(record.publicKeyPoint)]
        } catch {
            throw RightsErrors.rights(error)
        }
    }

    /// A new right's keys: with a TPM, made in it, through the TPM lane.
    private func makeRight(
        owner: RightOwner, requirement: RightRequirement, secret: [UInt8]?,
        storage: RightStorage
    ) async throws(ServiceError) -> RightRecord {
        let protector = storage.protector
        let created = Int64(time(nil))
        let make = { @Sendable () throws(RightsError) -> RightRecord in
            try RightRecord.create(owner: owner, requirement: requirement, secret: secret, created: created, protector: protector)
        }
        guard protector.backendName == TPMKeyProtector.name else {
            do throws(RightsError) { return try make() } catch { throw RightsErrors.rights(error) }
        }
        return try await state.tpm.run("making the keys of \(owner)", make)
    }

    /// RemoveRight(identifier, options).
    func removeRight(_ request: Request, _ arguments: RemoveRightArguments) async throws(ServiceError) -> [DBusValue] {
        let owner = try await rightOwner(request, identifier: arguments.identifier, app: arguments.app)
        let storage = try state.storage()
        state.forget(uid: owner.uid, appID: owner.appID, identifier: owner.identifier)
        do throws(RightsError) {
            try storage.remove(owner)
        } catch {
            throw RightsErrors.rights(error)
        }
        state.dropAll { $0.owner == owner }
        Log.info("rights: removed \(owner)")
        return []
    }

    /// RemoveAllRights(options) → how many.
    func removeAllRights(_ request: Request, _ arguments: RemoveAllRightsArguments) async throws(ServiceError) -> [DBusValue] {
        let app = try await rightsApp(request, arguments.app)
        let storage = try state.storage()
        let removed: Int
        state.forget(uid: request.uid, appID: app)
        do throws(RightsError) {
            removed = try storage.removeAll(uid: request.uid, appID: app)
        } catch {
            throw RightsErrors.rights(error)
        }
        state.dropAll { $0.uid == request.uid && $0.owner.appID == app }
        Log.info("rights: removed \(removed) right(s) of uid \(request.uid) app \(RightOwner.loggable(app))")
        return [.uint32(UInt32(removed))]
    }

    /// ListRights(options) → one a{sv} per right of the caller's app. Reads
    /// each right's clear header only: nothing is unwrapped or decrypted.
    func listRights(_ request: Request, _ arguments: ListRightsArguments) async throws(ServiceError) -> [DBusValue] {
        let app = try await rightsApp(request, arguments.app)
        let storage = try state.storage()
        let listing: RightListing
        do throws(RightsError) {
            listing = try storage.list(uid: request.uid, appID: app)
        } catch {
            throw RightsErrors.rights(error)
        }
        for damaged in listing.damaged { Log.warning("rights: damaged right of uid \(request.uid): \(damaged)") }
        let entries: [DBusValue] = listing.rights.map { record in
            .dictionary([
                LocalAuthRightsBus.RightKey.identifier: .string(record.owner.identifier),
                LocalAuthRightsBus.RightKey.requirement: .string(RightsPolicy.requirementName(record.requirement).rawValue),
                LocalAuthRightsBus.RightKey.created: .int64(record.created),
                LocalAuthRightsBus.RightKey.publicKey: .bytes(record.publicKeyPoint),
            ])
        }
        return [.array("a{sv}", entries)]
    }

    /// GetPublicKey(identifier, options) → 04 ‖ X ‖ Y.
    func getPublicKey(_ request: Request, _ arguments: GetPublicKeyArguments) async throws(ServiceError) -> [DBusValue] {
        let owner = try await rightOwner(request, identifier: arguments.identifier, app: arguments.app)
        return [.bytes(try loadRight(owner).publicKeyPoint)]
    }

    // MARK: Authorization

    /// The policy that authorizes `requirement` for `uid` now; a dead right is RightInvalidated.
    func policy(_ requirement: RightRequirement, uid: UInt32) throws(ServiceError) -> PolicyValue {
        switch try RightsPolicy.needed(requirement, enrolledSet: { seams.enrolledSets.enrolledSet(of: uid) }) {
        case .evaluate(let policy): return policy
        case .invalidated: throw RightsErrors.rightInvalidated
        }
    }

    /// CanAuthorizeRight(identifier, options): the right exists, is not dead,
    /// and its requirement can be evaluated now.
    func canAuthorizeRight(_ request: Request, _ arguments: CanAuthorizeRightArguments) async throws(ServiceError) -> [DBusValue] {
        let owner = try await rightOwner(request, identifier: arguments.identifier, app: arguments.app)
        let policy = try policy(loadRight(owner).requirement, uid: request.uid)
        var biometrics: ServiceError?
        do throws(ServiceError) {
            try seams.evaluation.checkBiometricsUsable(uid: request.uid)
        } catch {
            biometrics = error
        }
        try RightsPolicy.checkCanAuthorize(policy, biometrics: biometrics) { seams.accounts.hasPassword(uid: request.uid) }
        return [.boolean(true)]
    }

    /// AuthorizeRight(identifier, localized_reason, options) → handle: a real
    /// evaluation with the right's requirement.
    func authorizeRight(_ request: Request, _ arguments: AuthorizeRightArguments) async throws(ServiceError) -> [DBusValue] {
        let owner = try await rightOwner(request, identifier: arguments.identifier, app: arguments.app)
        let before = try loadRight(owner)
        let policy = try policy(before.requirement, uid: request.uid)
        try await seams.evaluation.evaluate(request, policy: policy, reason: arguments.reason, options: arguments.evaluation)
        ServiceActor.assertOnLoop()
        try request.record.checkNotEnded()
        // Re-read after the await: the right may be gone or replaced, the enrolled set changed.
        let after = try loadRight(owner)
        guard after.publicKeyPoint == before.publicKeyPoint else {
            throw ServiceError(.rightNotFound, "the right was replaced during the authorization")
        }
        _ = try self.policy(after.requirement, uid: request.uid)
        let handle = try state.authorize(
            RightAuthorization(
                sender: request.sender, uid: request.uid, owner: owner, publicKeyPoint: after.publicKeyPoint,
                expires: seams.clock.now + authorizationLifetime))
        Log.info("rights: authorized \(owner) for \(request.sender)")
        return [.string(handle)]
    }

    /// Deauthorize(handle): the caller's own handle ends; anything else is ignored.
    func deauthorize(_ request: Request, _ arguments: DeauthorizeArguments) throws(ServiceError) -> [DBusValue] {
        if let authorization = state.authorizations[arguments.handle], authorization.sender == request.sender {
            state.drop(arguments.handle)
        }
        return []
    }

    /// The right behind `handle` of this caller, if it is still authorized;
    /// a handle whose right is gone, replaced or dead is dropped.
    func authorizedRight(_ request: Request, handle: String) throws(ServiceError) -> RightRecord {
        guard let authorization = state.authorizations[handle], authorization.sender == request.sender,
            authorization.uid == request.uid
        else { throw RightsErrors.notAuthorized("the right is not authorized") }
        try checkRightsAccount(request.uid)
        guard authorization.expires > seams.clock.now else {
            state.drop(handle)
            throw RightsErrors.notAuthorized("the authorization expired; authorize the right again")
        }
        guard let record = try lookUpRight(authorization.owner) else {
            state.drop(handle)
            throw RightsErrors.notAuthorized("the right was removed")
        }
        guard record.publicKeyPoint == authorization.publicKeyPoint else {
            state.drop(handle)
            throw RightsErrors.notAuthorized("the right was replaced")
        }
        switch try RightsPolicy.needed(record.requirement, enrolledSet: { seams.enrolledSets.enrolledSet(of: request.uid) }) {
        case .evaluate: return record
        case .invalidated:
            state.drop(handle)
            throw RightsErrors.rightInvalidated
        }
    }

    /// The caller left the bus (Service.nameOwnerChanged): its authorizations end.
    func callerVanished(_ sender: String) {
        state.callerVanished(sender)
    }
}
