import LocalAuthCrypto
import LocalAuthTPM

/// Key protection by a TPM 2.0 (backend name "tpm2"), the Linux counterpart
/// of the Secure Enclave for `LAPersistedRight`.
///
/// The hierarchy:
///
///     TPM owner (storage) hierarchy seed            in the TPM, never leaves it
///       └ ECC P-256 storage primary key             recreated per operation (TPMTemplates)
///           ├ sealed data object: the machine key   <state>/keys/machine-key.tpm
///           └ one P-256 key per TPM right           sealed inside the right file
///     machine key → HKDF → wrapping key → each right's per-right key K (as SoftwareKeyProtector)
///     K → AES-256-GCM → the right's secret, and its TPM key blob
///     K → HKDF → the TPM key's auth value
///
/// - The machine key is 32 random bytes sealed to the TPM: unsealed once
///   when the protector is made, kept in memory, never written in the clear.
///   Per-right keys are wrapped exactly as the software backend wraps them.
///   Moving from software (`moveMachineKeyToTPM`) rotates it: the software
///   key, sealed too, opens only the software rights made before the move
///   (`protector(forBackend:)`), and a new key wraps everything after.
/// - A TPM right's private key is made in the TPM and never leaves it; the
///   right file keeps its TPM2B_PUBLIC ‖ TPM2B_PRIVATE, sealed under K like a
///   software key. Using it (sign, ECDH, ECIES decrypt) loads it under the
///   primary, runs the command and flushes it. Its auth value is derived from
///   K and the owner, so the key blob alone, even on this TPM, is not usable.
///
/// Another machine, or this one after its TPM was cleared or replaced, gives
/// another primary key: the sealed machine key does not load (`.tpmForeignKey`),
/// so no right opens. A TPM that does not answer is `.tpmUnavailable`; neither
/// changes any file.
public struct TPMKeyProtector: KeyProtector {
    public static let name = "tpm2"
    public var backendName: String { Self.name }
    public let device: TPMDevice
    init(device: TPMDevice, software: SoftwareKeyProtector, formerSoftware: SoftwareKeyProtector? = nil) {
        self.device = device
        self.software = software
        self.formerSoftware = formerSoftware
    }

    /// Wraps per-right keys with the unsealed machine key.
    let software: SoftwareKeyProtector
    /// The software machine key of before the move to the TPM
    /// (`keys/software-machine-key.tpm`), for the software rights made then;
    /// nil when there was none (or the move was made by an earlier build,
    /// which kept one key for both).
    let formerSoftware: SoftwareKeyProtector?

    static let authValueInfo = Array("org.example.LocalAuth TPM key auth 1".utf8)

    public static func sealedMachineKeyPath(stateDirectory: String) -> String { stateDirectory + "/keys/machine-key.tpm" }

    /// Unseals the machine key of `stateDirectory` with `device`; on first use
    /// moves a software machine key into the TPM (`moveMachineKeyToTPM`), or
    /// makes and seals a new one.
    public init(stateDirectory: String, device: TPMDevice) throws(RightsError) {
        self.device = device
        software = try SoftwareKeyProtector(machineKey: Self.loadOrCreateMachineKey(stateDirectory: stateDirectory, device: device))
        formerSoftware = try Self.unsealExisting(Self.sealedSoftwareKeyPath(stateDirectory: stateDirectory), device: device)
            .map { key throws(RightsError) in try SoftwareKeyProtector(machineKey: key) }
    }

    public func wrap(_ key: [UInt8], context: KeyContext) throws(RightsError) -> [UInt8] {
        try software.wrap(key, context: context)
    }

    public func unwrap(_ blob: [UInt8], context: KeyContext) throws(RightsError) -> [UInt8] {
        try software.unwrap(blob, context: context)
    }

    public func protector(forBackend name: String) -> (any KeyProtector)? {
        switch name {
        case Self.name: self
        case SoftwareKeyProtector.name: formerSoftware ?? software
        default: nil
        }
    }

    public func makePrivateKey(context: KeyContext, rightKey: [UInt8]) throws(RightsError) -> (publicKey: P256.PublicKey, stored: [UInt8]) {
        let auth = try Self.authValue(context: context, rightKey: rightKey)
        let (blob, publicKey) = try Self.tpm("making a TPM key for \(context.owner)") { () throws(TPMError) in
            try device.createP256Key(authValue: auth)
        }
        return (publicKey, blob.bytes)
    }

    public func privateKey(stored: [UInt8], context: KeyContext, rightKey: [UInt8]) throws(RightsError) -> any RightPrivateKey {
        let blob = try Self.tpm("the TPM key of \(context.owner)") { () throws(TPMError) in try TPMObjectBlob(bytes: stored) }
        let publicKey = try Self.tpm("the TPM key of \(context.owner)") { () throws(TPMError) in try blob.p256PublicKey() }
        return TPMRightPrivateKey(device: device, blob: blob, authValue: try Self.authValue(context: context, rightKey: rightKey),
                                  publicKey: publicKey)
    }

    /// 32 bytes only the right's per-right key gives, bound to its owner.
    static func authValue(context: KeyContext, rightKey: [UInt8]) throws(RightsError) -> [UInt8] {
        do {
            return try KDF.hkdfSHA256(inputKeyMaterial: rightKey, salt: [], info: authValueInfo + context.associatedData, outputByteCount: 32)
        } catch {
            throw RightsError.crypto(error, "deriving a TPM key's auth value")
        }
    }

    /// Runs a TPM operation, naming its failure as a `RightsError`.
    static func tpm<R>(_ what: String, _ body: () throws(TPMError) -> R) throws(RightsError) -> R {
        do {
            return try body()
        } catch {
            throw RightsError(tpm: error, what)
        }
    }
}

extension RightsError {
    /// A TPM failure by kind: unavailable, foreign (another or a cleared TPM),
    /// a wrong auth value (a key moved between rights), a damaged blob, other.
    init(tpm error: TPMError, _ what: String) {
        switch error.code {
        case .unavailable: self.init(.tpmUnavailable, "\(what): no TPM answered: \(error)")
        case .foreignObject:
            self.init(.tpmForeignKey, "\(what): the TPM refuses it as not its own (another machine, or this TPM was cleared or replaced): \(error)")
        case .authorizationFailed: self.init(.authenticationFailed, "\(what): \(error)")
        case .malformedBlob: self.init(.malformed, "\(what): \(error)")
        default: self.init(.tpm, "\(what): \(error)")
        }
    }
}

/// The private key of a TPM right: each operation is a TPM command.
struct TPMRightPrivateKey: RightPrivateKey {
    let device: TPMDevice
    let blob: TPMObjectBlob
    let authValue: [UInt8]
    let publicKey: P256.PublicKey
    var backendName: String { TPMKeyProtector.name }

    func signature(for message: [UInt8]) throws(RightsError) -> [UInt8] {
        try TPMKeyProtector.tpm("signing in the TPM") { () throws(TPMError) in try device.signature(for: message, key: blob, authValue: authValue) }
    }

    func signature(forDigest digest: [UInt8]) throws(RightsError) -> [UInt8] {
        guard digest.count == SHA256.byteCount else { throw RightsError(.malformed, "a SHA-256 digest is 32 bytes, not \(digest.count)") }
        return try TPMKeyProtector.tpm("signing in the TPM") { () throws(TPMError) in
            try device.signature(forDigest: digest, key: blob, authValue: authValue)
        }
    }

    func sharedSecret(with peer: P256.PublicKey) throws(RightsError) -> [UInt8] {
        try TPMKeyProtector.tpm("ECDH in the TPM") { () throws(TPMError) in try device.sharedSecret(with: peer, key: blob, authValue: authValue) }
    }

    /// ECIES: TPM2_ECDH_ZGen for Z, then the same KDF and AES-GCM as the software key.
    func decrypt(_ ciphertext: [UInt8]) throws(RightsError) -> [UInt8] {
        let ephemeral: P256.PublicKey
        do { ephemeral = try ECIES.ephemeralPublicKey(of: ciphertext) } catch { throw RightsError.crypto(error, "ECIES decryption") }
        let shared = try sharedSecret(with: ephemeral)
        do { return try ECIES.decrypt(ciphertext, sharedSecret: shared) } catch { throw RightsError.crypto(error, "ECIES decryption") }
    }
}
