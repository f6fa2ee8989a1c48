/// ECIES on P-256 exactly as Apple's Security framework does it for
/// `SecKeyAlgorithm.eciesEncryptionCofactorVariableIVX963SHA256AESGCM`
/// ("algid:encrypt:ECIES:ECDHC:KDFX963:SHA256:AESGCM-KDFIV"), so that a
/// ciphertext made by `SecKeyCreateEncryptedData` on a Mac opens here and the
/// other way round.
///
/// The construction, for a recipient public key Q:
///
/// 1. A fresh ephemeral key pair (e, E = e·G) for every message.
/// 2. Z = x-coordinate of the (cofactor) ECDH point e·Q, 32 bytes (P-256's
///    cofactor is 1, so cofactor and standard ECDH agree).
/// 3. ANSI X9.63 KDF with SHA-256 over Z, with sharedInfo = E in its 65-byte
///    uncompressed form (04 ‖ X ‖ Y), 32 bytes of output.
/// 4. The first 16 bytes are an AES-128 key (Apple: 128-bit AES for EC keys of
///    up to 256 bits), the last 16 bytes the GCM IV ("VariableIV"; the legacy
///    algorithms without it use 16 zero bytes).
/// 5. AES-128-GCM with that 16-byte IV, no associated data, a 16-byte tag.
/// 6. Output: E (65) ‖ ciphertext (as long as the plaintext) ‖ tag (16).
///
/// Checked against: Apple's header documentation of the constant in
/// Security.framework's SecKey.h ("AES key is first half of KDF output and 16
/// byte long IV is second half of KDF output … Ephemeral public key data is
/// used as sharedInfo for KDF … 16 bytes long TAG"), the write-up of
/// O2-Czech-Republic/BC-ECIES-for-iOS (README), and the Go package
/// jedda/ECIES, whose test `TestExternalDecryptSuccess` carries a ciphertext
/// made by `SecKeyCreateEncryptedData` with this algorithm; our test
/// `ECIESTests.testAppleCiphertextOpens` opens that very ciphertext, and
/// `testConstructionMatchesTheOpenSSLCommandLine` redoes steps 2–4 with the
/// `openssl` tool.
public enum ECIES {
    /// 65-byte ephemeral key plus 16-byte tag: the smallest ciphertext (of an empty message).
    public static let overheadByteCount = P256.x963ByteCount + AESGCM.tagByteCount
    static let aesKeyByteCount = 16
    static let ivByteCount = 16

    public static func encrypt(_ plaintext: [UInt8], to recipient: P256.PublicKey) throws(CryptoError) -> [UInt8] {
        try encrypt(plaintext, to: recipient, ephemeralKey: P256.PrivateKey())
    }

    public static func decrypt(_ ciphertext: [UInt8], with privateKey: P256.PrivateKey) throws(CryptoError) -> [UInt8] {
        guard ciphertext.count >= overheadByteCount else {
            throw CryptoError(.invalidInput, "an ECIES ciphertext is at least \(overheadByteCount) bytes, not \(ciphertext.count)")
        }
        // The ephemeral point is validated (on the curve) before any ECDH with it.
        let ephemeral = try P256.PublicKey(x963Representation: Array(ciphertext.prefix(P256.x963ByteCount)))
        let (key, iv) = try keyAndIV(privateKey: privateKey, peer: ephemeral, ephemeralPoint: ephemeral.x963Representation)
        let body = ciphertext.dropFirst(P256.x963ByteCount)
        return try AESGCM.decrypt(Array(body.dropLast(AESGCM.tagByteCount)), tag: Array(body.suffix(AESGCM.tagByteCount)),
                                  key: key, iv: iv, associatedData: [])
    }

    /// Encryption with a given ephemeral key: for known-answer tests only.
    static func encrypt(_ plaintext: [UInt8], to recipient: P256.PublicKey,
                        ephemeralKey: P256.PrivateKey) throws(CryptoError) -> [UInt8] {
        let point = ephemeralKey.publicKey.x963Representation
        let (key, iv) = try keyAndIV(privateKey: ephemeralKey, peer: recipient, ephemeralPoint: point)
        let (ciphertext, tag) = try AESGCM.encrypt(plaintext, key: key, iv: iv, associatedData: [])
        return point + ciphertext + tag
    }

    /// Steps 2–4: cofactor ECDH, X9.63 KDF over the ephemeral point, split.
    static func keyAndIV(privateKey: P256.PrivateKey, peer: P256.PublicKey,
                         ephemeralPoint: [UInt8]) throws(CryptoError) -> (key: [UInt8], iv: [UInt8]) {
        let shared = try privateKey.sharedSecretFromKeyAgreement(with: peer, cofactor: true)
        let derived = try KDF.x963SHA256(sharedSecret: shared, sharedInfo: ephemeralPoint,
                                         outputByteCount: aesKeyByteCount + ivByteCount)
        return (Array(derived.prefix(aesKeyByteCount)), Array(derived.suffix(ivByteCount)))
    }
}
