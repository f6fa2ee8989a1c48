import DBusCore
import LocalAuthCrypto
import LocalAuthRights
import LocalAuthShared

// Using an authorized right (docs/RIGHTS.md): LoadSecret and the key
// operations, each behind a handle of the caller's own connection
// (`authorizedRight`, RightsService.swift). A TPM key's operations run in
// the TPM lane (TPMLane.swift), a software key's here.
extension RightsService {
    /// The right's private key, wherever it lives (software, or the TPM).
    private func privateKey(_ record: RightRecord) throws(ServiceError) -> any RightPrivateKey {
        let protector = try state.storage().protector
        do throws(RightsError) {
            return try record.openPrivateKey(using: protector)
        } catch {
            throw RightsErrors.rights(error)
        }
    }

    /// Runs a private key's operation: a TPM key's in the TPM lane (off the
    /// loop, within the time limit), a software key's here.
    private func keyOperation<R: Sendable>(_ key: any RightPrivateKey, _ what: String,
                                           _ body: @escaping @Sendable (any RightPrivateKey) throws(RightsError) -> R) async throws(ServiceError) -> R {
        guard key.backendName == TPMKeyProtector.name else {
            do throws(RightsError) { return try body(key) } catch { throw RightsErrors.keyOperation(error) }
        }
        return try await state.tpm.run(what) { () throws(RightsError) in try body(key) }
    }

    /// LoadSecret(handle) → the secret.
    func loadSecret(_ request: Request, _ arguments: LoadSecretArguments) throws(ServiceError) -> [DBusValue] {
        let record = try authorizedRight(request, handle: arguments.handle)
        let secret: [UInt8]?
        let protector = try state.storage().protector
        do throws(RightsError) {
            secret = try record.secret(using: protector)
        } catch {
            throw RightsErrors.rights(error)
        }
        guard let secret else { throw ServiceError(.noSecret, "the right was saved without a secret") }
        return [.bytes(secret)]
    }

    /// Sign(handle, algorithm, data) → signature.
    func sign(_ request: Request, _ arguments: SignArguments) async throws(ServiceError) -> [DBusValue] {
        let arguments = arguments.operation
        let record = try authorizedRight(request, handle: arguments.handle)
        let key = try privateKey(record)
        let algorithm = arguments.algorithm, data = arguments.data
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
    func decrypt(_ request: Request, _ arguments: DecryptArguments) async throws(ServiceError) -> [DBusValue] {
        let arguments = arguments.operation
        let record = try authorizedRight(request, handle: arguments.handle)
        let key = try privateKey(record)
        let data = arguments.data
        return [.bytes(try await keyOperation(key, "decrypting") { key throws(RightsError) in try key.decrypt(data) })]
    }

    /// ExchangeKeys(handle, algorithm, public_key, parameters) → shared secret.
    func exchangeKeys(_ request: Request, _ arguments: ExchangeKeysArguments) async throws(ServiceError) -> [DBusValue] {
        let record = try authorizedRight(request, handle: arguments.handle)
        let key = try privateKey(record)
        let peer = arguments.peer
        // P-256's cofactor is 1: standard and cofactor ECDH give the same bytes.
        let shared = try await keyOperation(key, "key agreement") { key throws(RightsError) in try key.sharedSecret(with: peer) }
        guard arguments.algorithm.derivesWithX963, let requestedSize = arguments.requestedSize else { return [.bytes(shared)] }
        do throws(CryptoError) {
            return [.bytes(try KDF.x963SHA256(sharedSecret: shared, sharedInfo: arguments.sharedInfo, outputByteCount: requestedSize))]
        } catch {
            throw RightsErrors.crypto(error)
        }
    }
}
