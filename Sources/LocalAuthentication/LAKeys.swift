import DBusCore
import Foundation
import LocalAuthCrypto
import LocalAuthShared

/// Apple's `LAPublicKey`: the public half of a right's key. Every operation
/// runs here, in the library (LocalAuthCrypto), without the service.
public final class LAPublicKey: NSObject, Sendable {
    let bytes: Data
    init(bytes: Data) { self.bytes = bytes }

    /// The key as 65 bytes, 04 ‖ X ‖ Y (Apple's external representation).
    public func exportBytes() async throws -> Data { bytes }

    private func key() throws -> P256.PublicKey {
        do { return try P256.PublicKey(x963Representation: [UInt8](bytes)) } catch { throw LAError(.invalidContext, message: error.message) }
    }

    private static func algorithm(_ algorithm: SecKeyAlgorithm) throws -> KeyAlgorithm {
        guard let known = algorithm.known else { throw LAError(.invalidContext, message: "unsupported algorithm \(algorithm.rawValue)") }
        return known
    }

    /// Encrypts with `.eciesEncryptionCofactorVariableIVX963SHA256AESGCM` (or its standard twin).
    public func encrypt(_ plaintext: Data, algorithm: SecKeyAlgorithm) async throws -> Data {
        let algorithm = try Self.algorithm(algorithm)
        do { return Data(try key().encrypt([UInt8](plaintext), algorithm: algorithm)) } catch let error as CryptoError {
            throw LAError(.invalidContext, message: error.message)
        }
    }

    /// Verifies a signature; throws `LAError.authenticationFailed` if it does not verify.
    public func verify(_ signedData: Data, signature: Data, algorithm: SecKeyAlgorithm) async throws {
        let algorithm = try Self.algorithm(algorithm)
        let valid: Bool
        do { valid = try key().verify([UInt8](signature), for: [UInt8](signedData), algorithm: algorithm) } catch let error as CryptoError {
            throw LAError(.invalidContext, message: error.message)
        }
        guard valid else { throw LAError(.authenticationFailed, message: "The signature does not verify with this key.") }
    }

    public func canEncrypt(using algorithm: SecKeyAlgorithm) -> Bool { algorithm.known?.operation == .encrypt }
    public func canVerify(using algorithm: SecKeyAlgorithm) -> Bool { algorithm.known?.operation == .sign }
}

/// Apple's `LAPrivateKey`: the private half of a right's key. It never leaves
/// the service; each operation is a call there, allowed only while the right
/// is authorized (else `LAError.notInteractive`).
public final class LAPrivateKey: NSObject, @unchecked Sendable {
    private weak var right: LAPersistedRight?
    /// The matching public key.
    public let publicKey: LAPublicKey

    init(right: LAPersistedRight, publicKey: LAPublicKey) {
        self.right = right
        self.publicKey = publicKey
    }

    private func call(_ member: String, _ arguments: [DBusValue]) async throws -> Data {
        guard let right else { throw LAError(.invalidContext) }
        return Data(try await right.callAuthorized(member, arguments).first?.byteArray ?? [])
    }

    /// Signs `data` (`.ecdsaSignatureMessageX962SHA256`: a DER ECDSA signature over SHA-256).
    public func sign(_ data: Data, algorithm: SecKeyAlgorithm) async throws -> Data {
        try await call(LocalAuthRightsBus.Method.sign, [.string(algorithm.rawValue), .bytes([UInt8](data))])
    }

    /// Decrypts what `publicKey.encrypt` made.
    public func decrypt(_ data: Data, algorithm: SecKeyAlgorithm) async throws -> Data {
        try await call(LocalAuthRightsBus.Method.decrypt, [.string(algorithm.rawValue), .bytes([UInt8](data))])
    }

    /// ECDH with `publicKey` (65 bytes); `parameters` as Apple's
    /// (`kSecKeyKeyExchangeParameterRequestedSize`, `…SharedInfo`).
    public func exchangeKeys(publicKey: Data, algorithm: SecKeyAlgorithm, parameters: [AnyHashable: Any]) async throws -> Data {
        var options: [String: DBusValue] = [:]
        if let size = parameters[kSecKeyKeyExchangeParameterRequestedSize] as? Int {
            options[LocalAuthRightsBus.Option.requestedSize] = .uint32(UInt32(clamping: size))
        }
        if let info = parameters[kSecKeyKeyExchangeParameterSharedInfo] as? Data {
            options[LocalAuthRightsBus.Option.sharedInfo] = .bytes([UInt8](info))
        }
        return try await call(LocalAuthRightsBus.Method.exchangeKeys,
                              [.string(algorithm.rawValue), .bytes([UInt8](publicKey)), .dictionary(options)])
    }

    public func canSign(using algorithm: SecKeyAlgorithm) -> Bool { algorithm.known?.operation == .sign }
    public func canDecrypt(using algorithm: SecKeyAlgorithm) -> Bool { algorithm.known?.operation == .encrypt }
    public func canExchangeKeys(using algorithm: SecKeyAlgorithm) -> Bool { algorithm.known?.operation == .keyExchange }
}
