import LocalAuthCrypto

/// A right's private key, ready to use once the person is verified (Apple's
/// `LAPrivateKey`): wherever the key lives, the same four operations with the
/// same outputs. A software right's key is a `P256.PrivateKey` opened from the
/// right file; a TPM right's key stays in the TPM and each call is a TPM
/// command (`TPMKeyProtector`).
public protocol RightPrivateKey: Sendable {
    var publicKey: P256.PublicKey { get }
    /// The key backend of the right ("software", "tpm2").
    var backendName: String { get }
    /// ECDSA over SHA-256 of `message`, X9.62 DER (`.ecdsaSignatureMessageX962SHA256`).
    func signature(for message: [UInt8]) throws(RightsError) -> [UInt8]
    /// ECDSA of a 32-byte SHA-256 digest, DER (`.ecdsaSignatureDigestX962SHA256`).
    func signature(forDigest digest: [UInt8]) throws(RightsError) -> [UInt8]
    /// The ECDH shared secret: the x-coordinate of d·peer, 32 bytes (`.ecdhKeyExchangeStandard`).
    func sharedSecret(with peer: P256.PublicKey) throws(RightsError) -> [UInt8]
    /// Apple's `.eciesEncryptionCofactorVariableIVX963SHA256AESGCM` (see `ECIES`).
    func decrypt(_ ciphertext: [UInt8]) throws(RightsError) -> [UInt8]
}

/// The private key of a software right.
public struct SoftwareRightPrivateKey: RightPrivateKey {
    public let key: P256.PrivateKey
    public var publicKey: P256.PublicKey { key.publicKey }
    public var backendName: String { SoftwareKeyProtector.name }

    public init(_ key: P256.PrivateKey) { self.key = key }

    public func signature(for message: [UInt8]) throws(RightsError) -> [UInt8] {
        do { return try key.signature(for: message) } catch { throw RightsError.crypto(error, "signing") }
    }

    public func signature(forDigest digest: [UInt8]) throws(RightsError) -> [UInt8] {
        do { return try key.signature(forDigest: digest) } catch { throw RightsError.crypto(error, "signing a digest") }
    }

    public func sharedSecret(with peer: P256.PublicKey) throws(RightsError) -> [UInt8] {
        do { return try key.sharedSecretFromKeyAgreement(with: peer) } catch { throw RightsError.crypto(error, "ECDH") }
    }

    public func decrypt(_ ciphertext: [UInt8]) throws(RightsError) -> [UInt8] {
        do { return try ECIES.decrypt(ciphertext, with: key) } catch { throw RightsError.crypto(error, "ECIES decryption") }
    }
}

/// How a backend makes and opens a right's private key. The defaults are the
/// software backend's: a P-256 key in this process, kept as PKCS#8 DER inside
/// the right file's sealed part.
extension KeyProtector {
    public func protector(forBackend name: String) -> (any KeyProtector)? {
        name == backendName ? self : nil
    }

    public func makePrivateKey(context: KeyContext, rightKey: [UInt8]) throws(RightsError) -> (publicKey: P256.PublicKey, stored: [UInt8]) {
        do {
            let key = try P256.PrivateKey()
            return (key.publicKey, try key.derRepresentation)
        } catch {
            throw RightsError.crypto(error, "making the private key of \(context.owner)")
        }
    }

    public func privateKey(stored: [UInt8], context: KeyContext, rightKey: [UInt8]) throws(RightsError) -> any RightPrivateKey {
        do {
            return SoftwareRightPrivateKey(try P256.PrivateKey(derRepresentation: stored))
        } catch {
            throw RightsError(.malformed, "sealed private key: \(error.message)")
        }
    }
}
