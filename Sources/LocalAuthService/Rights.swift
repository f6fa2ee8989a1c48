import DBusCore
import Glibc
import LocalAuthCrypto
import LocalAuthRights
import LocalAuthShared

// Rights and secrets (docs/RIGHTS.md): Apple's LARightStore and
// LAPersistedRight. A right's secret and private key stay in the service,
// sealed at rest (LocalAuthRights); the secret leaves only as the answer to
// LoadSecret of an authorized caller, the private key never. Authorizing a
// right is a real evaluation (Evaluations.swift, OwnerPolicy.swift) and gives
// the caller a handle that only its own bus connection can use, until
// Deauthorize, the caller leaving the bus, the right removed or replaced, or
// `RightsServiceLimits.authorizationSeconds`.

/// One authorization: what AuthorizeRight handed out.
struct RightAuthorization {
    /// The unique bus name it is bound to; no other connection can use it.
    let sender: String
    let uid: UInt32
    let owner: RightOwner
    /// The right it was made for: a right replaced since has another key.
    let publicKey: P256.PublicKey
    let expires: ContinuousClock.Instant
}

/// The service's rights state: the storage (made on first use, with the
/// configured key protector) and the authorizations in force.
@ServiceActor
final class RightsState {
    private let stateDirectory: String
    /// Software or TPM (`--tpm`, docs/TPM.md): the protector is opened on first use.
    private let keyBackend: KeyBackendChoice
    private var cachedStorage: RightStorage?
    /// By handle.
    private(set) var authorizations: [String: RightAuthorization] = [:]
    /// Each connection's app identity (its pid's sandbox), once read.
    var identities: [String: AppIdentity] = [:]
    /// Rights read and verified from disk this run, by owner: verifying a
    /// right (unwrapping, opening both parts, parsing the key) costs about a
    /// millisecond, and an app that loads its secret should not pay it on
    /// every call. Only sealed parts and the public key are held (no
    /// plaintext). The service is the only writer of its root-only state
    /// directory: its own saves and removals update this; a file changed
    /// behind its back is read again at the next start.
    private var verified: [RightOwner: RightRecord] = [:]
    static let verifiedLimit = 1024

    init(stateDirectory: String, keyBackend: KeyBackendChoice) {
        self.stateDirectory = stateDirectory
        self.keyBackend = keyBackend
    }

    func storage() throws(DBusError) -> RightStorage {
        if let cachedStorage { return cachedStorage }
        do throws(RightsError) {
            let storage = RightStorage(stateDirectory: stateDirectory,
                                       protector: try keyBackend.openProtector(stateDirectory: stateDirectory))
            cachedStorage = storage
            return storage
        } catch {
            Log.error("rights: the key backend \(keyBackend.summary) cannot be used: \(error)")
            throw ServiceErrors.named(LocalAuthServiceError.storageFailed, "the rights store cannot be opened")
        }
    }

    /// A new handle for `authorization`, within the limits.
    func authorize(_ authorization: RightAuthorization) throws(DBusError) -> String {
        let now = ContinuousClock.now
        authorizations = authorizations.filter { $0.value.expires > now }
        let mine = authorizations.filter { $0.value.sender == authorization.sender }
        if mine.count >= RightsServiceLimits.authorizationsPerConnection,
           let oldest = mine.min(by: { $0.value.expires < $1.value.expires }) {
            authorizations[oldest.key] = nil
        }
        guard authorizations.count < RightsServiceLimits.authorizationsInTotal else {
            throw ServiceErrors.limit("the service holds \(RightsServiceLimits.authorizationsInTotal) authorizations")
        }
        let handle: String
        do {
            handle = Hex.encode(try SecureRandom.bytes(16))
        } catch {
            throw DBusError(.failed, "no random bytes for a handle")
        }
        authorizations[handle] = authorization
        return handle
    }

    func drop(_ handle: String) { authorizations[handle] = nil }

    func cached(_ owner: RightOwner) -> RightRecord? { verified[owner] }

    func remember(_ record: RightRecord) {
        if verified.count >= Self.verifiedLimit, verified[record.owner] == nil { verified.removeAll() }
        verified[record.owner] = record
    }

    func forget(uid: UInt32, appID: String, identifier: String? = nil) {
        verified = verified.filter { owner, _ in
            !(owner.uid == uid && owner.appID == appID && (identifier == nil || owner.identifier == identifier))
        }
    }

    func dropAll(where predicate: (RightAuthorization) -> Bool) {
        authorizations = authorizations.filter { !predicate($0.value) }
    }

    /// The caller left the bus: its authorizations end.
    func callerVanished(_ sender: String) {
        identities[sender] = nil
        guard authorizations.values.contains(where: { $0.sender == sender }) else { return }
        dropAll { $0.sender == sender }
    }
}

extension LocalAuthService {
    // MARK: Arguments

    static func rightsOptions(_ value: DBusValue) throws(DBusError) -> [String: DBusValue] {
        guard let options = value.stringKeyedDictionary else { throw ServiceErrors.invalidArgs("options must be a{sv}") }
        return options
    }

    static func text(_ value: DBusValue, _ what: String) throws(DBusError) -> String {
        guard let text = value.string else { throw ServiceErrors.invalidArgs("\(what) must be a string") }
        return text
    }

    /// A RightsError as the contract's error: limits by name, damage as StorageFailed (logged).
    static func rightsError(_ error: RightsError) -> DBusError {
        switch error.code {
        case .notFound: return ServiceErrors.named(LocalAuthRightsError.rightNotFound, "no right has that identifier")
        case .identifierTooLong, .appIDTooLong, .secretTooLarge, .tooManyRights: return ServiceErrors.limit(error.message)
        case .invalidName: return ServiceErrors.invalidArgs(error.message)
        default:
            Log.error("rights: \(error)")
            return ServiceErrors.named(LocalAuthServiceError.storageFailed, "the right could not be used (\(error.code))")
        }
    }

    static func cryptoError(_ error: CryptoError) -> DBusError {
        switch error.code {
        case .invalidKey, .invalidInput, .unsupportedAlgorithm, .authenticationFailure:
            return ServiceErrors.invalidArgs(error.message)
        default:
            return DBusError(.failed, "the key operation failed: \(error.code)")
        }
    }

    /// The app a rights call is for (AppIdentity.swift).
    func rightsApp(_ request: Request, _ options: [String: DBusValue]) async throws(DBusError) -> String {
        var declared: String?
        if let value = options[LocalAuthRightsBus.Option.appID] {
            guard let id = value.string else { throw ServiceErrors.invalidArgs("app-id must be a string") }
            declared = id
        }
        let identity: AppIdentity
        if let known = rights.identities[request.sender] {
            identity = known
        } else {
            let reply = try await bus.call(destination: BusConnection.busDriver, path: "/org/freedesktop/DBus",
                                           interface: BusConnection.busDriver, member: "GetConnectionUnixProcessID",
                                           arguments: [.string(request.sender)])
            ServiceActor.assertOnLoop()
            try request.record.checkNotEnded()
            guard let pid = reply.first?.uint32 else { throw DBusError(.failed, "the bus did not say the caller's pid") }
            identity = AppIdentity.detect(pid: pid)
            rights.identities[request.sender] = identity
        }
        return try AppIdentity.appID(identity, declared: declared)
    }

    func rightOwner(_ request: Request, identifier: String, options: [String: DBusValue]) async throws(DBusError) -> RightOwner {
        let app = try await rightsApp(request, options)
        do throws(RightsError) {
            return try RightOwner(uid: request.uid, appID: app, identifier: identifier)
        } catch {
            throw Self.rightsError(error)
        }
    }

    func loadRight(_ owner: RightOwner) throws(DBusError) -> RightRecord {
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
    func currentSetDigest(_ uid: UInt32) throws(DBusError) -> [UInt8] {
        guard let reader = reader(for: uid) else { throw ServiceErrors.noReader }
        guard !prints.prints(of: uid, for: reader).isEmpty else {
            throw ServiceErrors.la(.biometryNotEnrolled, "no fingerprints are enrolled for this user")
        }
        return enrolledSetHash(uid: uid, reader: reader)
    }

    /// The policy that authorizes a right; a `.biometryCurrentSet` right
    /// whose enrolled set changed is dead (RightInvalidated).
    func rightPolicy(_ requirement: RightRequirement, uid: UInt32) throws(DBusError) -> PolicyValue {
        switch requirement {
        case .default, .biometryOrPassword: return .deviceOwnerAuthentication
        case .biometry: return .deviceOwnerAuthenticationWithBiometrics
        case .biometryCurrentSet(let digest):
            guard try currentSetDigest(uid) == digest else {
                throw ServiceErrors.named(LocalAuthRightsError.rightInvalidated,
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
    func saveRight(_ request: Request) async throws(DBusError) -> [DBusValue] {
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
        do throws(RightsError) {
            let record = try RightRecord.create(owner: owner, requirement: requirement, secret: secret,
                                                created: Int64(time(nil)), protector: storage.protector)
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

    /// RemoveRight(identifier, options).
    func removeRight(_ request: Request) async throws(DBusError) -> [DBusValue] {
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
    func removeAllRights(_ request: Request) async throws(DBusError) -> [DBusValue] {
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
        Log.info("rights: removed \(removed) right(s) of uid \(request.uid) app \(RightsState.loggable(app))")
        return [.uint32(UInt32(removed))]
    }

    /// ListRights(options) → one a{sv} per right of the caller's app.
    func listRights(_ request: Request) async throws(DBusError) -> [DBusValue] {
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
    func getPublicKey(_ request: Request) async throws(DBusError) -> [DBusValue] {
        let identifier = try Self.text(request.arguments[0], "the identifier")
        let owner = try await rightOwner(request, identifier: identifier, options: try Self.rightsOptions(request.arguments[1]))
        return [.bytes(try loadRight(owner).publicKey.x963Representation)]
    }

    // MARK: Authorization

    /// CanAuthorizeRight(identifier, options): the right exists, is not dead,
    /// and its requirement can be evaluated now.
    func canAuthorizeRight(_ request: Request) async throws(DBusError) -> [DBusValue] {
        let identifier = try Self.text(request.arguments[0], "the identifier")
        let owner = try await rightOwner(request, identifier: identifier, options: try Self.rightsOptions(request.arguments[1]))
        let policy = try rightPolicy(loadRight(owner).requirement, uid: request.uid)
        switch policy {
        case .deviceOwnerAuthenticationWithBiometrics:
            _ = try usablePrints(for: request.uid)
        case .deviceOwnerAuthentication:
            if (try? usablePrints(for: request.uid)) == nil, !Accounts.hasPassword(uid: request.uid) {
                throw ServiceErrors.la(.passcodeNotSet, "the account has no password, and biometrics cannot be used")
            }
        }
        return [.boolean(true)]
    }

    /// AuthorizeRight(identifier, localized_reason, options) → handle: a real
    /// evaluation with the right's requirement.
    func authorizeRight(_ request: Request) async throws(DBusError) -> [DBusValue] {
        let arguments = request.arguments
        let identifier = try Self.text(arguments[0], "the identifier")
        let reason = try Self.text(arguments[1], "the localized reason")
        guard !reason.trimmed.isEmpty, reason.utf8.count <= LocalAuthBus.maximumTextLength else {
            throw ServiceErrors.invalidArgs("the localized reason must be 1 to \(LocalAuthBus.maximumTextLength) bytes")
        }
        let options = try Self.rightsOptions(arguments[2])
        var evaluationOptions = try Self.evaluationOptions(arguments[2])
        // A right is released only for a new verification, never a reused match.
        evaluationOptions.reuseDuration = 0
        let owner = try await rightOwner(request, identifier: identifier, options: options)
        let before = try loadRight(owner)
        let policy = try rightPolicy(before.requirement, uid: request.uid)
        try await evaluate(request, policy: policy, reason: reason, options: evaluationOptions)
        ServiceActor.assertOnLoop()
        try request.record.checkNotEnded()
        // Re-read after the await: the right may be gone or replaced, the enrolled set changed.
        let after = try loadRight(owner)
        guard after.publicKey == before.publicKey else {
            throw ServiceErrors.named(LocalAuthRightsError.rightNotFound, "the right was replaced during the authorization")
        }
        _ = try rightPolicy(after.requirement, uid: request.uid)
        let handle = try rights.authorize(RightAuthorization(
            sender: request.sender, uid: request.uid, owner: owner, publicKey: after.publicKey,
            expires: .now + .seconds(min(configuration.rightsAuthorizationTimeout, RightsServiceLimits.authorizationSeconds))))
        Log.info("rights: authorized \(owner) for \(request.sender)")
        return [.string(handle)]
    }

    /// Deauthorize(handle): the caller's own handle ends; anything else is ignored.
    func deauthorize(_ request: Request) throws(DBusError) -> [DBusValue] {
        let handle = try Self.text(request.arguments[0], "the handle")
        if let authorization = rights.authorizations[handle], authorization.sender == request.sender {
            rights.drop(handle)
        }
        return []
    }

    /// The right behind a handle of this caller, if it is still authorized.
    func authorizedRight(_ request: Request) throws(DBusError) -> RightRecord {
        let handle = try Self.text(request.arguments[0], "the handle")
        let notAuthorized = ServiceErrors.named(LocalAuthRightsError.notAuthorized, "the right is not authorized")
        guard let authorization = rights.authorizations[handle], authorization.sender == request.sender,
              authorization.uid == request.uid else { throw notAuthorized }
        guard authorization.expires > .now else {
            rights.drop(handle)
            throw ServiceErrors.named(LocalAuthRightsError.notAuthorized, "the authorization expired; authorize the right again")
        }
        let record: RightRecord
        do throws(DBusError) {
            record = try loadRight(authorization.owner)
        } catch where error.name.rawValue == LocalAuthRightsError.rightNotFound {
            rights.drop(handle)
            throw ServiceErrors.named(LocalAuthRightsError.notAuthorized, "the right was removed")
        }
        guard record.publicKey == authorization.publicKey else {
            rights.drop(handle)
            throw ServiceErrors.named(LocalAuthRightsError.notAuthorized, "the right was replaced")
        }
        do throws(DBusError) {
            _ = try rightPolicy(record.requirement, uid: request.uid)
        } catch where error.name.rawValue == LocalAuthRightsError.rightInvalidated {
            rights.drop(handle)
            throw error
        }
        return record
    }

    /// The right's private key, wherever it lives (software, or the TPM).
    func privateKey(_ record: RightRecord) throws(DBusError) -> any RightPrivateKey {
        let protector = try rights.storage().protector
        do throws(RightsError) {
            return try record.openPrivateKey(using: protector)
        } catch {
            throw Self.rightsError(error)
        }
    }

    /// A key operation's failure: bad input from the caller is InvalidArgs;
    /// a TPM that does not answer, or anything else, is logged.
    static func keyOperationError(_ error: RightsError) -> DBusError {
        switch error.code {
        case .authenticationFailed, .malformed: return ServiceErrors.invalidArgs("the key operation failed: \(error.message)")
        default:
            Log.error("rights: key operation: \(error)")
            return DBusError(.failed, "the key operation failed (\(error.code))")
        }
    }

    static func algorithm(_ value: DBusValue) throws(DBusError) -> KeyAlgorithm {
        let name = try text(value, "the algorithm")
        guard let algorithm = KeyAlgorithm(rawValue: name) else {
            throw ServiceErrors.invalidArgs("unknown algorithm \(ServiceErrors.echo(name))")
        }
        return algorithm
    }

    static func input(_ value: DBusValue) throws(DBusError) -> [UInt8] {
        guard let bytes = value.byteArray else { throw ServiceErrors.invalidArgs("the data must be ay") }
        guard bytes.count <= RightsServiceLimits.keyOperationInputBytes else {
            throw ServiceErrors.limit("the data is larger than \(RightsServiceLimits.keyOperationInputBytes) bytes")
        }
        return bytes
    }

    // MARK: Using an authorized right

    /// LoadSecret(handle) → the secret.
    func loadSecret(_ request: Request) throws(DBusError) -> [DBusValue] {
        let record = try authorizedRight(request)
        let secret: [UInt8]?
        let protector = try rights.storage().protector
        do throws(RightsError) {
            secret = try record.secret(using: protector)
        } catch {
            throw Self.rightsError(error)
        }
        guard let secret else { throw ServiceErrors.named(LocalAuthRightsError.noSecret, "the right was saved without a secret") }
        return [.bytes(secret)]
    }

    /// Sign(handle, algorithm, data) → signature.
    func signWithRight(_ request: Request) throws(DBusError) -> [DBusValue] {
        let record = try authorizedRight(request)
        let algorithm = try Self.algorithm(request.arguments[1])
        let data = try Self.input(request.arguments[2])
        guard algorithm.operation == .sign else { throw ServiceErrors.invalidArgs("\(algorithm.rawValue) cannot sign") }
        let key = try privateKey(record)
        do throws(RightsError) {
            switch algorithm {
            case .ecdsaSignatureDigestX962SHA256:
                guard data.count == 32 else { throw RightsError(.malformed, "a SHA-256 digest is 32 bytes, not \(data.count)") }
                return [.bytes(try key.signature(forDigest: data))]
            default:
                return [.bytes(try key.signature(for: data))]
            }
        } catch {
            throw Self.keyOperationError(error)
        }
    }

    /// Decrypt(handle, algorithm, data) → plaintext.
    func decryptWithRight(_ request: Request) throws(DBusError) -> [DBusValue] {
        let record = try authorizedRight(request)
        let algorithm = try Self.algorithm(request.arguments[1])
        let data = try Self.input(request.arguments[2])
        guard algorithm.operation == .encrypt else { throw ServiceErrors.invalidArgs("\(algorithm.rawValue) cannot decrypt") }
        let key = try privateKey(record)
        do throws(RightsError) {
            return [.bytes(try key.decrypt(data))]
        } catch {
            throw Self.keyOperationError(error)
        }
    }

    /// ExchangeKeys(handle, algorithm, public_key, parameters) → shared secret.
    func exchangeKeysWithRight(_ request: Request) throws(DBusError) -> [DBusValue] {
        let record = try authorizedRight(request)
        let algorithm = try Self.algorithm(request.arguments[1])
        guard let peerBytes = request.arguments[2].byteArray else { throw ServiceErrors.invalidArgs("the public key must be ay") }
        let parameters = try Self.rightsOptions(request.arguments[3])
        var requestedSize: Int?
        if let value = parameters[LocalAuthRightsBus.Option.requestedSize] {
            guard let size = value.uint32, size > 0, size <= 1024 else {
                throw ServiceErrors.invalidArgs("requested-size must be a u from 1 to 1024")
            }
            requestedSize = Int(size)
        }
        var sharedInfo: [UInt8] = []
        if let value = parameters[LocalAuthRightsBus.Option.sharedInfo] {
            guard let info = value.byteArray, info.count <= 1024 else {
                throw ServiceErrors.invalidArgs("shared-info must be ay of at most 1024 bytes")
            }
            sharedInfo = info
        }
        guard algorithm.operation == .keyExchange else { throw ServiceErrors.invalidArgs("\(algorithm.rawValue) cannot exchange keys") }
        let peer: P256.PublicKey
        do throws(CryptoError) {
            peer = try P256.PublicKey(x963Representation: peerBytes)
        } catch {
            throw Self.cryptoError(error)
        }
        let key = try privateKey(record)
        let shared: [UInt8]
        do throws(RightsError) {
            // P-256's cofactor is 1: standard and cofactor ECDH give the same bytes.
            shared = try key.sharedSecret(with: peer)
        } catch {
            throw Self.keyOperationError(error)
        }
        switch algorithm {
        case .ecdhKeyExchangeStandardX963SHA256, .ecdhKeyExchangeCofactorX963SHA256:
            guard let requestedSize else { throw ServiceErrors.invalidArgs("\(algorithm.rawValue) needs requested-size") }
            do throws(CryptoError) {
                return [.bytes(try KDF.x963SHA256(sharedSecret: shared, sharedInfo: sharedInfo, outputByteCount: requestedSize))]
            } catch {
                throw Self.cryptoError(error)
            }
        default:
            return [.bytes(shared)]
        }
    }

    /// The caller left the bus (Service.nameOwnerChanged).
    func rightsCallerVanished(_ sender: String) {
        rights.callerVanished(sender)
    }
}

extension RightsState {
    /// An app id for the log: at most 64 bytes, control characters as "?".
    nonisolated static func loggable(_ name: String) -> String {
        var shown = ""
        for scalar in name.unicodeScalars {
            guard shown.utf8.count < 64 else { return shown + "…" }
            shown.unicodeScalars.append(scalar.value < 0x20 || (0x7f...0x9f).contains(scalar.value) ? "?" : scalar)
        }
        return shown
    }
}
