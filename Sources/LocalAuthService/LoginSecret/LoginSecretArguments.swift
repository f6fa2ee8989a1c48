import DBusCore
import LocalAuthCrypto
import LocalAuthRights
import LocalAuthShared

private typealias Key = LocalAuthLoginSecretBus.Key

/// A password's key as the options carry it: password-key, salt, argon2-*.
struct PasswordKeyOptions {
    let info: LoginPasswordKeyInfo

    init(_ entries: [String: DBusValue]) throws(ServiceError) {
        guard let point = entries[Key.passwordKey]?.byteArray, let salt = entries[Key.salt]?.byteArray else {
            throw ServiceErrors.invalidArgs("\(Key.passwordKey) (ay) and \(Key.salt) (ay) are required")
        }
        let standard = LoginPasswordKeyInfo.Parameters.standard
        func number(_ key: String, _ fallback: UInt32) throws(ServiceError) -> UInt32 {
            try entries.option(key, \.uint32, "a uint32") ?? fallback
        }
        do {
            let publicKey = try P256.PublicKey(x963Representation: point)
            let parameters = try LoginPasswordKeyInfo.Parameters(
                time: number(Key.argon2Time, standard.time), memoryKiB: number(Key.argon2MemoryKiB, standard.memoryKiB),
                lanes: number(Key.argon2Lanes, standard.lanes))
            info = try LoginPasswordKeyInfo(salt: salt, parameters: parameters, publicKey: publicKey)
        } catch let error as ServiceError {
            throw error
        } catch {
            throw ServiceErrors.invalidArgs("the password key: \(error)")
        }
    }
}

/// A password proof: an ECDSA signature, DER (`LocalAuthLoginSecretBus.ProofLabel`).
private func isProof(_ bytes: [UInt8]) -> Bool { (1...128).contains(bytes.count) }

func userName(_ value: DBusValue) throws(ServiceError) -> String {
    guard let name = value.string, !name.isEmpty, name.utf8.count <= LocalAuthBus.maximumTextLength else {
        throw ServiceErrors.invalidArgs("user must be an account name of 1 to \(LocalAuthBus.maximumTextLength) bytes")
    }
    return name
}

/// EnableLoginSecret(a{sv} options): password-key, salt, argon2-*.
struct EnableLoginSecretArguments: CallArguments {
    let password: LoginPasswordKeyInfo
    init(_ arguments: [DBusValue]) throws(ServiceError) { password = try PasswordKeyOptions(CallArgument.options(arguments[0])).info }
}

/// DisableLoginSecret(ay proof, a{sv} options): commit.
struct DisableLoginSecretArguments: CallArguments {
    let proof: [UInt8]
    let commit: Bool
    init(_ arguments: [DBusValue]) throws(ServiceError) {
        guard let proof = arguments[0].byteArray, isProof(proof) else { throw ServiceErrors.invalidArgs("proof must be a signature") }
        self.proof = proof
        commit = try CallArgument.options(arguments[1]).option(Key.commit, \.bool, "a boolean") ?? false
    }
}

/// ReleaseLoginSecret(s user, ay nonce, ay ephemeral_key, a{sv} options).
struct ReleaseLoginSecretArguments: CallArguments {
    let user: String
    let nonce: [UInt8]
    let ephemeralKey: P256.PublicKey
    init(_ arguments: [DBusValue]) throws(ServiceError) {
        user = try userName(arguments[0])
        guard let nonce = arguments[1].byteArray, nonce.count <= 64 else { throw ServiceErrors.invalidArgs("nonce must be at most 64 bytes") }
        self.nonce = nonce
        guard let point = arguments[2].byteArray, let key = try? P256.PublicKey(x963Representation: point) else {
            throw ServiceErrors.invalidArgs("ephemeral_key must be a P-256 public key (65 bytes, 04 ‖ X ‖ Y)")
        }
        ephemeralKey = key
        _ = try CallArgument.options(arguments[3])
    }
}

/// GetLoginSecretPasswordWrap(s user, a{sv} options).
struct GetLoginSecretPasswordWrapArguments: CallArguments {
    let user: String
    init(_ arguments: [DBusValue]) throws(ServiceError) {
        user = try userName(arguments[0])
        _ = try CallArgument.options(arguments[1])
    }
}

/// ChangeLoginSecretPassword(s user, a{sv} options): password-key, salt,
/// argon2-*, proof; or `stale` (true) alone: the PAM host could not make
/// the new password's key, and the wrap no longer follows the password.
struct ChangeLoginSecretPasswordArguments: CallArguments {
    let user: String
    /// nil: only the stale mark.
    let password: LoginPasswordKeyInfo?
    let proof: [UInt8]?
    init(_ arguments: [DBusValue]) throws(ServiceError) {
        user = try userName(arguments[0])
        let entries = try CallArgument.options(arguments[1])
        if try entries.option(Key.staleMark, \.bool, "true", where: { $0 }) != nil {
            let keyed = [Key.passwordKey, Key.salt, Key.argon2Time, Key.argon2MemoryKiB, Key.argon2Lanes, Key.proof]
            guard keyed.allSatisfy({ entries[$0] == nil }) else {
                throw ServiceErrors.invalidArgs("\(Key.staleMark) comes alone, without a password key or a proof")
            }
            password = nil
            proof = nil
            return
        }
        password = try PasswordKeyOptions(entries).info
        proof = try entries.option(Key.proof, \.byteArray, "a signature", where: isProof)
    }
}

/// ResealLoginSecret(s user, ay sealed): ECIES(the reseal key, K).
struct ResealLoginSecretArguments: CallArguments {
    let user: String
    let sealed: [UInt8]
    init(_ arguments: [DBusValue]) throws(ServiceError) {
        user = try userName(arguments[0])
        guard let sealed = arguments[1].byteArray, sealed.count == ECIES.overheadByteCount + LoginSecretRecord.secretBytes else {
            throw ServiceErrors.invalidArgs("sealed must be ECIES of a 32-byte secret")
        }
        self.sealed = sealed
    }
}

/// VerifyUser's login-secret-nonce option (1–64 bytes), read apart from
/// the evaluation options, which ignore keys they do not know.
enum LoginSecretNonce {
    nonisolated static func read(_ options: DBusValue) throws(ServiceError) -> [UInt8]? {
        guard let value = options.stringKeyedDictionary?[Key.nonce] else { return nil }
        guard let nonce = value.byteArray, (1...64).contains(nonce.count) else {
            throw ServiceErrors.invalidArgs("\(Key.nonce) must be 1 to 64 bytes")
        }
        return nonce
    }
}
