import LocalAuthCrypto

/// The public half of a login password's key, and how the password gives it
/// (docs/KEYRING.md): Argon2id(password, salt; time, memory, lanes) → 32-byte
/// seed → `LoginPasswordKey.privateKey(seed:)` → d; this is D = d·G.
public struct LoginPasswordKeyInfo: Sendable, Hashable {
    /// Argon2id v1.3's cost: passes, memory in KiB, lanes.
    public typealias Parameters = LoginPasswordKey.Parameters

    public static let saltBytes = 16...64

    public let salt: [UInt8]
    public let parameters: Parameters
    public let publicKey: P256.PublicKey

    public init(salt: [UInt8], parameters: Parameters, publicKey: P256.PublicKey) throws(RightsError) {
        guard Self.saltBytes.contains(salt.count) else { throw RightsError(.malformed, "a salt of \(salt.count) bytes; 16 to 64") }
        guard parameters.isAffordable else {
            throw RightsError(
                .malformed,
                "Argon2id parameters t=\(parameters.time) m=\(parameters.memoryKiB) KiB p=\(parameters.lanes) are out of bounds")
        }
        self.salt = salt
        self.parameters = parameters
        self.publicKey = publicKey
    }
}

/// One user's login secret at rest (docs/KEYRING.md): K wrapped by the
/// machine (a `KeyProtector`: the TPM's sealed machine key, else the software
/// machine key) and by the login password (ECIES to the password's key D),
/// with a commitment to K and the pending key of a password set without the
/// old one (a reset by root).
public struct LoginSecretRecord: Sendable, Equatable {
    public static let secretBytes = 32
    public let uid: UInt32
    /// The key backend that made `machineWrap` ("software", "tpm2").
    public private(set) var backend: String
    public private(set) var machineWrap: [UInt8]
    /// HKDF(K, "…commitment 1" ‖ uid): checks a K handed back, tells nothing about K.
    public let commitment: [UInt8]
    public private(set) var password: LoginPasswordKeyInfo
    /// ECIES(password.publicKey, K).
    public private(set) var passwordWrap: [UInt8]
    /// A new password's key waiting for the owner's next fingerprint
    /// release; while set, `passwordWrap` still opens only with the old password.
    public private(set) var pending: LoginPasswordKeyInfo?
    /// A password change whose re-wrap could not run in the PAM host (no
    /// Argon2id slot): `passwordWrap` is under a password that is no longer
    /// the account's, and no key of the new one is known yet.
    public private(set) var missedPasswordChange: Bool

    public var isPasswordWrapStale: Bool { pending != nil || missedPasswordChange }

    /// Makes K and both wraps; K itself is returned nowhere.
    public static func make(uid: UInt32, password: LoginPasswordKeyInfo, protector: any KeyProtector) throws(RightsError) -> LoginSecretRecord {
        var secret: [UInt8]
        do { secret = try SecureRandom.bytes(secretBytes) } catch { throw RightsError.crypto(error, "making a login secret") }
        defer { clear(&secret) }
        return LoginSecretRecord(
            uid: uid, backend: protector.backendName, machineWrap: try protector.wrap(secret, context: context(uid)),
            commitment: try commitment(secret, uid: uid), password: password,
            passwordWrap: try wrap(secret, to: password), pending: nil)
    }

    init(
        uid: UInt32, backend: String, machineWrap: [UInt8], commitment: [UInt8], password: LoginPasswordKeyInfo,
        passwordWrap: [UInt8], pending: LoginPasswordKeyInfo?, missedPasswordChange: Bool = false
    ) {
        self.missedPasswordChange = missedPasswordChange
        self.uid = uid
        self.backend = backend
        self.machineWrap = machineWrap
        self.commitment = commitment
        self.password = password
        self.passwordWrap = passwordWrap
        self.pending = pending
    }

    /// K from the machine wrap, checked against the commitment.
    /// `.wrongBackend`: no protector here opens it; `.unwrapFailed` /
    /// `.tpmForeignKey`: another machine key or TPM (the password wrap recovers: `reseal`).
    public func openMachineWrap(using protector: any KeyProtector) throws(RightsError) -> [UInt8] {
        guard let opener = protector.protector(forBackend: backend) else {
            throw RightsError(.wrongBackend, "the login secret of uid \(uid) was wrapped by \(backend)")
        }
        var secret = try opener.unwrap(machineWrap, context: Self.context(uid))
        guard try Self.commitment(secret, uid: uid) == commitment else {
            Self.clear(&secret)
            throw RightsError(.authenticationFailed, "the login secret of uid \(uid) does not match its commitment")
        }
        return secret
    }

    /// Wraps K again with the protector the machine has now (after a cleared
    /// TPM or a rotated machine key), once K is proven by the commitment.
    public mutating func reseal(_ secret: [UInt8], using protector: any KeyProtector) throws(RightsError) {
        try checkCommitment(secret)
        machineWrap = try protector.wrap(secret, context: Self.context(uid))
        backend = protector.backendName
    }

    /// The password wrap under a new password's key (the old password was
    /// proven, or the owner's finger released K): clears any pending key.
    public mutating func changePassword(to key: LoginPasswordKeyInfo, secret: [UInt8]) throws(RightsError) {
        try checkCommitment(secret)
        passwordWrap = try Self.wrap(secret, to: key)
        password = key
        pending = nil
        missedPasswordChange = false
    }

    /// A password set without the old one: the wrap goes stale until the owner's next release.
    public mutating func setPending(_ key: LoginPasswordKeyInfo) { pending = key }

    /// A password changed without the re-wrap: the wrap is stale, with no new key yet.
    public mutating func markPasswordChangeMissed() { missedPasswordChange = true }

    public func checkCommitment(_ secret: [UInt8]) throws(RightsError) {
        guard secret.count == Self.secretBytes, try Self.commitment(secret, uid: uid) == commitment else {
            throw RightsError(.authenticationFailed, "not the login secret of uid \(uid)")
        }
    }

    // MARK: Helpers

    static func context(_ uid: UInt32) throws(RightsError) -> KeyContext {
        KeyContext(owner: try RightOwner(uid: uid, appID: "org.example.LocalAuth.login", identifier: "login"), purpose: .loginSecret)
    }

    static func commitment(_ secret: [UInt8], uid: UInt32) throws(RightsError) -> [UInt8] {
        do {
            return try KDF.hkdfSHA256(
                inputKeyMaterial: secret, salt: [],
                info: Array("org.example.LocalAuth login secret commitment 1".utf8) + LoginSecretCoding.bigEndian(uid),
                outputByteCount: 32)
        } catch {
            throw RightsError.crypto(error, "the login secret's commitment")
        }
    }

    static func wrap(_ secret: [UInt8], to key: LoginPasswordKeyInfo) throws(RightsError) -> [UInt8] {
        do { return try ECIES.encrypt(secret, to: key.publicKey) } catch { throw RightsError.crypto(error, "the login secret's password wrap") }
    }

    public static func clear(_ bytes: inout [UInt8]) { for index in bytes.indices { bytes[index] = 0 } }
}
