/// The P-256 algorithms of Apple's `SecKeyAlgorithm` that LAPrivateKey and
/// LAPublicKey offer here, with Apple's raw strings, so that the client
/// library can map `SecKeyAlgorithm.…` names one to one.
public enum KeyAlgorithm: String, Sendable, CaseIterable {
    case ecdsaSignatureMessageX962SHA256 = "algid:sign:ECDSA:message-X962:SHA256"
    case ecdsaSignatureDigestX962SHA256 = "algid:sign:ECDSA:digest-X962:SHA256"
    case eciesEncryptionCofactorVariableIVX963SHA256AESGCM = "algid:encrypt:ECIES:ECDHC:KDFX963:SHA256:AESGCM-KDFIV"
    /// Standard ECDH instead of cofactor ECDH: on P-256 (cofactor 1) the same bytes.
    case eciesEncryptionStandardVariableIVX963SHA256AESGCM = "algid:encrypt:ECIES:ECDH:KDFX963:SHA256:AESGCM-KDFIV"
    case ecdhKeyExchangeStandard = "algid:keyexchange:ECDH"
    case ecdhKeyExchangeCofactor = "algid:keyexchange:ECDHC"
    /// ECDH, then the X9.63 KDF with SHA-256 (Apple's `kSecKeyKeyExchangeParameterRequestedSize` and `…SharedInfo`).
    case ecdhKeyExchangeStandardX963SHA256 = "algid:keyexchange:ECDH:KDFX963:SHA256"
    case ecdhKeyExchangeCofactorX963SHA256 = "algid:keyexchange:ECDHC:KDFX963:SHA256"

    public enum Operation: Sendable {
        case sign, encrypt, keyExchange
    }

    public var operation: Operation {
        switch self {
        case .ecdsaSignatureMessageX962SHA256, .ecdsaSignatureDigestX962SHA256: .sign
        case .eciesEncryptionCofactorVariableIVX963SHA256AESGCM, .eciesEncryptionStandardVariableIVX963SHA256AESGCM: .encrypt
        case .ecdhKeyExchangeStandard, .ecdhKeyExchangeCofactor,
             .ecdhKeyExchangeStandardX963SHA256, .ecdhKeyExchangeCofactorX963SHA256: .keyExchange
        }
    }
}

extension P256.PrivateKey {
    /// Signs with a signing algorithm (`SecKeyCreateSignature`).
    public func sign(_ data: [UInt8], algorithm: KeyAlgorithm) throws(CryptoError) -> [UInt8] {
        switch algorithm {
        case .ecdsaSignatureMessageX962SHA256: try signature(for: data)
        case .ecdsaSignatureDigestX962SHA256: try signature(forDigest: data)
        default: throw KeyAlgorithm.wrongOperation(algorithm, "sign")
        }
    }

    /// Decrypts with an encryption algorithm (`SecKeyCreateDecryptedData`).
    public func decrypt(_ data: [UInt8], algorithm: KeyAlgorithm) throws(CryptoError) -> [UInt8] {
        guard algorithm.operation == .encrypt else { throw KeyAlgorithm.wrongOperation(algorithm, "decrypt") }
        return try ECIES.decrypt(data, with: self)
    }

    /// Key exchange (`SecKeyCopyKeyExchangeResult`): the raw shared secret,
    /// or for the X9.63 algorithms `requestedSize` bytes derived with `sharedInfo`.
    public func exchangeKeys(with peer: P256.PublicKey, algorithm: KeyAlgorithm,
                             requestedSize: Int? = nil, sharedInfo: [UInt8] = []) throws(CryptoError) -> [UInt8] {
        switch algorithm {
        case .ecdhKeyExchangeStandard: return try sharedSecretFromKeyAgreement(with: peer)
        case .ecdhKeyExchangeCofactor: return try sharedSecretFromKeyAgreement(with: peer, cofactor: true)
        case .ecdhKeyExchangeStandardX963SHA256, .ecdhKeyExchangeCofactorX963SHA256:
            guard let requestedSize else { throw CryptoError(.invalidInput, "\(algorithm.rawValue) needs a requested size") }
            let secret = try sharedSecretFromKeyAgreement(with: peer, cofactor: algorithm == .ecdhKeyExchangeCofactorX963SHA256)
            return try KDF.x963SHA256(sharedSecret: secret, sharedInfo: sharedInfo, outputByteCount: requestedSize)
        default: throw KeyAlgorithm.wrongOperation(algorithm, "exchange keys")
        }
    }
}

extension P256.PublicKey {
    /// Verifies with a signing algorithm (`SecKeyVerifySignature`); an unsuitable algorithm is an error, a bad signature is false.
    public func verify(_ signature: [UInt8], for data: [UInt8], algorithm: KeyAlgorithm) throws(CryptoError) -> Bool {
        switch algorithm {
        case .ecdsaSignatureMessageX962SHA256: isValidSignature(signature, for: data)
        case .ecdsaSignatureDigestX962SHA256: isValidSignature(signature, forDigest: data)
        default: throw KeyAlgorithm.wrongOperation(algorithm, "verify")
        }
    }

    /// Encrypts with an encryption algorithm (`SecKeyCreateEncryptedData`).
    public func encrypt(_ data: [UInt8], algorithm: KeyAlgorithm) throws(CryptoError) -> [UInt8] {
        guard algorithm.operation == .encrypt else { throw KeyAlgorithm.wrongOperation(algorithm, "encrypt") }
        return try ECIES.encrypt(data, to: self)
    }
}

extension KeyAlgorithm {
    static func wrongOperation(_ algorithm: KeyAlgorithm, _ operation: String) -> CryptoError {
        CryptoError(.unsupportedAlgorithm, "\(algorithm.rawValue) cannot \(operation)")
    }
}
