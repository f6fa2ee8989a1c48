import DBusCore
import Glibc
import LocalAuthCrypto
import LocalAuthRights
import LocalAuthShared

// Rights and secrets (docs/RIGHTS.md): Apple's LARightStore and
// LAPersistedRight. A right's secret and private key stay in the service,
// sealed at rest (LocalAuthRights); the secret leaves only as the answer to
// LoadSecret of an authorized caller, the private key never. Authorizing a
// right is a real evaluation (Evaluation/: the Evaluator) and gives
// the caller a handle that only its own bus connection can use, until
// Deauthorize, the caller leaving the bus, the right removed or replaced, or
// `RightsServiceLimits.authorizationSeconds`.

extension LocalAuthService {
    // MARK: Arguments

    static func rightsOptions(_ value: DBusValue) throws(ServiceError) -> [String: DBusValue] {
        guard let options = value.stringKeyedDictionary else { throw ServiceErrors.invalidArgs("options must be a{sv}") }
        return options
    }

    static func text(_ value: DBusValue, _ what: String) throws(ServiceError) -> String {
        guard let text = value.string else { throw ServiceErrors.invalidArgs("\(what) must be a string") }
        return text
    }

    /// A RightsError as the contract's error: limits by name, damage as StorageFailed (logged).
    static func rightsError(_ error: RightsError) -> ServiceError {
        switch error.code {
        case .notFound: return ServiceError(.rightNotFound, "no right has that identifier")
        case .identifierTooLong, .appIDTooLong, .secretTooLarge, .tooManyRights, .tooManyApps, .tooMuchData:
            return ServiceErrors.limit(error.message)
        case .invalidName: return ServiceErrors.invalidArgs(error.message)
        default:
            Log.error("rights: \(error)")
            return ServiceError(.storageFailed, "the right could not be used (\(error.code))")
        }
    }

    static func cryptoError(_ error: CryptoError) -> ServiceError {
        switch error.code {
        case .invalidKey, .invalidInput, .unsupportedAlgorithm, .authenticationFailure:
            return ServiceErrors.invalidArgs(error.message)
        default:
            return ServiceError(.failed, "the key operation failed: \(error.code)")
        }
    }

    /// The app a rights call is for (Callers/AppIdentity.swift): the caller's
    /// proven sandbox, else the `app-id` option, once the caller's uid is
    /// known to own its rights (Rights/RightsAccount.swift).
    func rightsApp(_ request: Request, _ options: [String: DBusValue]) async throws(ServiceError) -> String {
        _ = try await rights.openStorage()
        ServiceActor.assertOnLoop()
        try request.record.checkNotEnded()
        try checkRightsAccount(request.uid, saving: request.call.member == LocalAuthRightsBus.Method.saveRight)
        var declared: String?
        if let value = options[LocalAuthRightsBus.Option.appID] {
            guard let id = value.string else { throw ServiceErrors.invalidArgs("app-id must be a string") }
            declared = id
        }
        return try AppIdentity.appID(callers.identity(request.caller).app, declared: declared)
    }

    func rightOwner(_ request: Request, identifier: String, options: [String: DBusValue]) async throws(ServiceError) -> RightOwner {
        let app = try await rightsApp(request, options)
        do throws(RightsError) {
            return try RightOwner(uid: request.uid, appID: app, identifier: identifier)
        } catch {
            throw Self.rightsError(error)
        }
    }

    func loadRight(_ owner: RightOwner) throws(ServiceError) -> RightRecord {
        if let record = rights.cached(owner) { return record }
        let storage = try rights.storage()
        do throws(RightsError) {
            let record = try storage.load(owner)
            rights.remember(record)
            return record
        } catch {
            throw Self.rightsError(error)
        }
    }

    /// The digest of the user's enrolled set now: the domain state.
    func currentSetDigest(_ uid: UInt32) throws(ServiceError) -> [UInt8] {
        guard let reader = reader(for: uid) else { throw ServiceErrors.noReader }
        guard !prints.prints(of: uid, for: reader).isEmpty else {
            throw ServiceErrors.la(.biometryNotEnrolled, "no fingerprints are enrolled for this user")
        }
        return enrolledSetHash(uid: uid, reader: reader)
    }

    /// The policy that authorizes a right; a `.biometryCurrentSet` right
    /// whose enrolled set changed is dead (RightInvalidated).
    func rightPolicy(_ requirement: RightRequirement, uid: UInt32) throws(ServiceError) -> PolicyValue {
        switch requirement {
        case .default, .biometryOrPassword: return .deviceOwnerAuthentication
        case .biometry: return .deviceOwnerAuthenticationWithBiometrics
        case .biometryCurrentSet(let digest):
            guard try currentSetDigest(uid) == digest else {
                throw ServiceError(.rightInvalidated,
                                          "the enrolled fingerprints changed since this right was saved; it cannot be used again")
            }
            return .deviceOwnerAuthenticationWithBiometrics
        }
    }

    static func requirementName(_ requirement: RightRequirement) -> RightRequirementName {
        switch requirement {
        case .default: .default
        case .biometry: .biometry
        case .biometryCurrentSet: .biometryCurrentSet
        case .biometryOrPassword: .biometryOrPassword
        }
    }

    // MARK: The store

    /// SaveRight(identifier, requirement, options{app-id, secret}) → public key.
    func saveRight(_ request: Request) async throws(ServiceError) -> [DBusValue] {
        let arguments = request.arguments
        let identifier = try Self.text(arguments[0], "the identifier")
        let name = try Self.text(arguments[1], "the requirement")
        guard let kind = RightRequirementName(rawValue: name) else {
            throw ServiceErrors.invalidArgs("unknown requirement \(ServiceErrors.echo(name)); use "
                + RightRequirementName.allCases.map(\.rawValue).joined(separator: ", "))
        }
        let options = try Self.rightsOptions(arguments[2])
        var secret: [UInt8]?
        if let value = options[LocalAuthRightsBus.Option.secret] {
            guard let bytes = value.byteArray else { throw ServiceErrors.invalidArgs("secret must be ay") }
            secret = bytes
        }
        let owner = try await rightOwner(request, identifier: identifier, options: options)
        let requirement: RightRequirement
        switch kind {
        case .default: requirement = .default
        case .biometry: requirement = .biometry
        case .biometryOrPassword: requirement = .biometryOrPassword
        case .biometryCurrentSet: requirement = .biometryCurrentSet(enrolledSetDigest: try currentSetDigest(request.uid))
        }
        let storage = try rights.storage()
        let record = try await makeRight(owner: owner, requirement: requirement, secret: secret, storage: storage)
        ServiceActor.assertOnLoop()
        try request.record.checkNotEnded()
        do throws(RightsError) {
            rights.forget(uid: owner.uid, appID: owner.appID, identifier: owner.identifier)
            try storage.save(record)
            rights.remember(record)
            // A replaced right is another right: its authorizations end.
            rights.dropAll { $0.owner == owner }
            Log.info("rights: saved \(owner) (\(kind.rawValue))")
            return [.bytes(record.publicKey.x963Representation)]
        } catch {
            throw Self.rightsError(error)
        }
    }

    /// A new right's keys: with a TPM, made in it, through the TPM lane.
    func makeRight(owner: RightOwner, requirement: RightRequirement, secret: [UInt8]?,
                   storage: RightStorage) async throws(ServiceError) -> RightRecord {
        let protector = storage.protector, created = Int64(time(nil))
        let make = { @Sendable () throws(RightsError) -> RightRecord in
            try RightRecord.create(owner: owner, requirement: requirement, secret: secret, created: created, protector: protector)
        }
        guard protector.backendName == TPMKeyProtector.name else {
            do throws(RightsError) { return try make() } catch { throw Self.rightsError(error) }
        }
        return try await rights.tpm.run("making the keys of \(owner)", make)
    }

    /// RemoveRight(identifier, options).
    func removeRight(_ request: Request) async throws(ServiceError) -> [DBusValue] {
        let identifier = try Self.text(request.arguments[0], "the identifier")
        let owner = try await rightOwner(request, identifier: identifier, options: try Self.rightsOptions(request.arguments[1]))
        let storage = try rights.storage()
        rights.forget(uid: owner.uid, appID: owner.appID, identifier: owner.identifier)
        do throws(RightsError) {
            try storage.remove(owner)
        } catch {
            throw Self.rightsError(error)
        }
        rights.dropAll { $0.owner == owner }
        Log.info("rights: removed \(owner)")
        return []
    }

    /// RemoveAllRights(options) → how many.
    func removeAllRights(_ request: Request) async throws(ServiceError) -> [DBusValue] {
        let app = try await rightsApp(request, try Self.rightsOptions(request.arguments[0]))
        let storage = try rights.storage()
        let removed: Int
        rights.forget(uid: request.uid, appID: app)
        do throws(RightsError) {
            removed = try storage.removeAll(uid: request.uid, appID: app)
        } catch {
            throw Self.rightsError(error)
        }
        rights.dropAll { $0.uid == request.uid && $0.owner.appID == app }
        Log.info("rights: removed \(removed) right(s) of uid \(request.uid) app \(RightOwner.loggable(app))")
        return [.uint32(UInt32(removed))]
    }

    /// ListRights(options) → one a{sv} per right of the caller's app.
    func listRights(_ request: Request) async throws(ServiceError) -> [DBusValue] {
        let app = try await rightsApp(request, try Self.rightsOptions(request.arguments[0]))
        let storage = try rights.storage()
        let listing: RightListing
        do throws(RightsError) {
            listing = try storage.list(uid: request.uid, appID: app)
        } catch {
            throw Self.rightsError(error)
        }
        for damaged in listing.damaged { Log.warning("rights: damaged right of uid \(request.uid): \(damaged)") }
        let entries: [DBusValue] = listing.rights.map { record in
            .dictionary([
                LocalAuthRightsBus.RightKey.identifier: .string(record.owner.identifier),
                LocalAuthRightsBus.RightKey.requirement: .string(Self.requirementName(record.requirement).rawValue),
                LocalAuthRightsBus.RightKey.created: .int64(record.created),
                LocalAuthRightsBus.RightKey.publicKey: .bytes(record.publicKey.x963Representation),
            ])
        }
        return [.array("a{sv}", entries)]
    }

    /// GetPublicKey(identifier, options) → 04 ‖ X ‖ Y.
    func getPublicKey(_ request: Request) async throws(ServiceError) -> [DBusValue] {
        let identifier = try Self.text(request.arguments[0], "the identifier")
        let owner = try await rightOwner(request, identifier: identifier, options: try Self.rightsOptions(request.arguments[1]))
        return [.bytes(try loadRight(owner).publicKey.x963Representation)]
    }

    // MARK: Authorization

    /// CanAuthorizeRight(identifier, options): the right exists, is not dead,
    /// and its requirement can be evaluated now.
    func canAuthorizeRight(_ request: Request) async throws(ServiceError) -> [DBusValue] {
        let identifier = try Self.text(request.arguments[0], "the identifier")
        let owner = try await rightOwner(request, identifier: identifier, options: try Self.rightsOptions(request.arguments[1]))
        let policy = try rightPolicy(loadRight(owner).requirement, uid: request.uid)
        switch policy {
        case .deviceOwnerAuthenticationWithBiometrics:
            try evaluator.checkBiometricsUsable(for: request.uid)
        case .deviceOwnerAuthentication:
            if (try? evaluator.checkBiometricsUsable(for: request.uid)) == nil, !Accounts.hasPassword(uid: request.uid) {
                throw ServiceErrors.la(.passcodeNotSet, "the account has no password, and biometrics cannot be used")
            }
        }
        return [.boolean(true)]
    }

    /// AuthorizeRight(identifier, localized_reason, options) → handle: a real
    /// evaluation with the right's requirement.
    func authorizeRight(_ request: Request) async throws(ServiceError) -> [DBusValue] {
        let arguments = request.arguments
        let identifier = try Self.text(arguments[0], "the identifier")
        let reason = try Self.text(arguments[1], "the localized reason")
        guard !reason.trimmed.isEmpty, reason.utf8.count <= LocalAuthBus.maximumTextLength else {
            throw ServiceErrors.invalidArgs("the localized reason must be 1 to \(LocalAuthBus.maximumTextLength) bytes")
        }
        let options = try Self.rightsOptions(arguments[2])
        var evaluationOptions = try EvaluationOptions(arguments[2])
        // A right is released only for a new verification, never a reused match.
        evaluationOptions.reuseDuration = 0
        let owner = try await rightOwner(request, identifier: identifier, options: options)
        let before = try loadRight(owner)
        let policy = try rightPolicy(before.requirement, uid: request.uid)
        try await evaluator.evaluate(request, policy: policy, reason: reason, options: evaluationOptions)
        ServiceActor.assertOnLoop()
        try request.record.checkNotEnded()
        // Re-read after the await: the right may be gone or replaced, the enrolled set changed.
        let after = try loadRight(owner)
        guard after.publicKey == before.publicKey else {
            throw ServiceError(.rightNotFound, "the right was replaced during the authorization")
        }
        _ = try rightPolicy(after.requirement, uid: request.uid)
        let handle = try rights.authorize(RightAuthorization(
            sender: request.sender, uid: request.uid, owner: owner, publicKey: after.publicKey,
            expires: .now + .seconds(min(configuration.rightsAuthorizationTimeout, RightsServiceLimits.authorizationSeconds))))
        Log.info("rights: authorized \(owner) for \(request.sender)")
        return [.string(handle)]
    }

    /// Deauthorize(handle): the caller's own handle ends; anything else is ignored.
    func deauthorize(_ request: Request) throws(ServiceError) -> [DBusValue] {
        let handle = try Self.text(request.arguments[0], "the handle")
        if let authorization = rights.authorizations[handle], authorization.sender == request.sender {
            rights.drop(handle)
        }
        return []
    }

    /// The right behind a handle of this caller, if it is still authorized.
    func authorizedRight(_ request: Request) throws(ServiceError) -> RightRecord {
        let handle = try Self.text(request.arguments[0], "the handle")
        let notAuthorized = ServiceError(.notAuthorized, "the right is not authorized")
        guard let authorization = rights.authorizations[handle], authorization.sender == request.sender,
              authorization.uid == request.uid else { throw notAuthorized }
        try checkRightsAccount(request.uid)
        guard authorization.expires > .now else {
            rights.drop(handle)
            throw ServiceError(.notAuthorized, "the authorization expired; authorize the right again")
        }
        let record: RightRecord
        do throws(ServiceError) {
            record = try loadRight(authorization.owner)
        } catch where error.kind == .rightNotFound {
            rights.drop(handle)
            throw ServiceError(.notAuthorized, "the right was removed")
        }
        guard record.publicKey == authorization.publicKey else {
            rights.drop(handle)
            throw ServiceError(.notAuthorized, "the right was replaced")
        }
        do throws(ServiceError) {
            _ = try rightPolicy(record.requirement, uid: request.uid)
        } catch where error.kind == .rightInvalidated {
            rights.drop(handle)
            throw error
        }
        return record
    }

    /// The caller left the bus (Service.nameOwnerChanged).
    func rightsCallerVanished(_ sender: String) {
        rights.callerVanished(sender)
    }
}
