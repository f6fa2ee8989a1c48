import DBusCore
import LocalAuthCrypto
import LocalAuthRights
import LocalAuthShared

// Using an authorized right (docs/RIGHTS.md): LoadSecret and the key
// operations, each behind a handle of the caller's own connection
// (`authorizedRight`, Rights.swift).
extension LocalAuthService {
    /// The right's private key, wherever it lives (software, or the TPM).
    func privateKey(_ record: RightRecord) throws(ServiceError) -> any RightPrivateKey {
        let protector = try rights.storage().protector
        do throws(RightsError) {
            return try record.openPrivateKey(using: protector)
        } catch {
            throw Self.rightsError(error)
        }
    }

    /// A key operation's failure: bad input from the caller is InvalidArgs;
    /// a TPM that does not answer, or anything else, is logged.
    static func keyOperationError(_ error: RightsError) -> ServiceError {
        switch error.code {
        case .authenticationFailed, .malformed: return ServiceErrors.invalidArgs("the key operation failed: \(error.message)")
        default:
            Log.error("rights: key operation: \(error)")
            return ServiceError(.failed, "the key operation failed (\(error.code))")
        }
    }

    /// Runs a private key's operation: a TPM key's in the TPM lane (off the
    /// loop, within the time limit), a software key's here.
    func keyOperation<R: Sendable>(_ key: any RightPrivateKey, _ what: String,
                                   _ body: @escaping @Sendable (any RightPrivateKey) throws(RightsError) -> R) async throws(ServiceError) -> R {
        guard key.backendName == TPMKeyProtector.name else {
            do throws(RightsError) { return try body(key) } catch { throw Self.keyOperationError(error) }
        }
        return try await rights.tpm.run(what) { () throws(RightsError) in try body(key) }
    }

    static func algorithm(_ value: DBusValue) throws(ServiceError) -> KeyAlgorithm {
        let name = try text(value, "the algorithm")
        guard let algorithm = KeyAlgorithm(rawValue: name) else {
            throw ServiceErrors.invalidArgs("unknown algorithm \(ServiceErrors.echo(name))")
        }
        return algorithm
    }

    static func input(_ value: DBusValue) throws(ServiceError) -> [UInt8] {
        guard let bytes = value.byteArray else { throw ServiceErrors.invalidArgs("the data must be ay") }
        guard bytes.count <= RightsServiceLimits.keyOperationInputBytes else {
            throw ServiceErrors.limit("the data is larger than \(RightsServiceLimits.keyOperationInputBytes) bytes")
        }
        return bytes
    }

    // MARK: Using an authorized right

    /// LoadSecret(handle) → the secret.
    func loadSecret(_ request: Request) throws(ServiceError) -> [DBusValue] {
        let record = try authorizedRight(request)
        let secret: [UInt8]?
        let protector = try rights.storage().protector
        do throws(RightsError) {
            secret = try record.secret(using: protector)
        } catch {
            throw Self.rightsError(error)
        }
        guard let secret else { throw ServiceError(.noSecret, "the right was saved without a secret") }
        return [.bytes(secret)]
    }

    /// Sign(handle, algorithm, data) → signature.
    func signWithRight(_ request: Request) async throws(ServiceError) -> [DBusValue] {
        let record = try authorizedRight(request)
        let algorithm = try Self.algorithm(request.arguments[1])
        let data = try Self.input(request.arguments[2])
        guard algorithm.operation == .sign else { throw ServiceErrors.invalidArgs("\(algorithm.rawValue) cannot sign") }
        let key = try privateKey(record)
        let signature = try await keyOperation(key, "signing") { key throws(RightsError) in
            switch algorithm {
            case .ecdsaSignatureDigestX962SHA256:
                guard data.count == 32 else { throw RightsError(.malformed, "a SHA-256 digest is 32 bytes, not \(data.count)") }
                return try key.signature(forDigest: data)
            default:
                return try key.signature(for: data)
            }
        }
        return [.bytes(signature)]
    }

    /// Decrypt(handle, algorithm, data) → plaintext.
    func decryptWithRight(_ request: Request) async throws(ServiceError) -> [DBusValue] {
        let record = try authorizedRight(request)
        let algorithm = try Self.algorithm(request.arguments[1])
        let data = try Self.input(request.arguments[2])
        guard algorithm.operation == .encrypt else { throw ServiceErrors.invalidArgs("\(algorithm.rawValue) cannot decrypt") }
        let key = try privateKey(record)
        return [.bytes(try await keyOperation(key, "decrypting") { key throws(RightsError) in try key.decrypt(data) })]
    }

    /// ExchangeKeys(handle, algorithm, public_key, parameters) → shared secret.
    func exchangeKeysWithRight(_ request: Request) async throws(ServiceError) -> [DBusValue] {
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
        // P-256's cofactor is 1: standard and cofactor ECDH give the same bytes.
        let shared = try await keyOperation(key, "key agreement") { key throws(RightsError) in try key.sharedSecret(with: peer) }
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
}
