import Foundation
import LocalAuthCrypto

/// Apple's `SecKeyAlgorithm` for the P-256 keys of rights: Linux has no
/// Security framework, so the library defines the type with Apple's names and
/// raw strings; `.ecdsaSignatureMessageX962SHA256` and friends compile as on
/// Apple's platforms.
public struct SecKeyAlgorithm: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }

    public static let ecdsaSignatureMessageX962SHA256 = SecKeyAlgorithm(KeyAlgorithm.ecdsaSignatureMessageX962SHA256.rawValue)
    public static let ecdsaSignatureDigestX962SHA256 = SecKeyAlgorithm(KeyAlgorithm.ecdsaSignatureDigestX962SHA256.rawValue)
    public static let eciesEncryptionCofactorVariableIVX963SHA256AESGCM =
        SecKeyAlgorithm(KeyAlgorithm.eciesEncryptionCofactorVariableIVX963SHA256AESGCM.rawValue)
    public static let eciesEncryptionStandardVariableIVX963SHA256AESGCM =
        SecKeyAlgorithm(KeyAlgorithm.eciesEncryptionStandardVariableIVX963SHA256AESGCM.rawValue)
    public static let ecdhKeyExchangeStandard = SecKeyAlgorithm(KeyAlgorithm.ecdhKeyExchangeStandard.rawValue)
    public static let ecdhKeyExchangeCofactor = SecKeyAlgorithm(KeyAlgorithm.ecdhKeyExchangeCofactor.rawValue)
    public static let ecdhKeyExchangeStandardX963SHA256 = SecKeyAlgorithm(KeyAlgorithm.ecdhKeyExchangeStandardX963SHA256.rawValue)
    public static let ecdhKeyExchangeCofactorX963SHA256 = SecKeyAlgorithm(KeyAlgorithm.ecdhKeyExchangeCofactorX963SHA256.rawValue)

    var known: KeyAlgorithm? { KeyAlgorithm(rawValue: rawValue) }
}

/// Apple's `SecKeyKeyExchangeParameter` keys for `exchangeKeys(publicKey:algorithm:parameters:)`.
public let kSecKeyKeyExchangeParameterRequestedSize = "requestedSize"
public let kSecKeyKeyExchangeParameterSharedInfo = "sharedInfo"
