internal import CArgon2
import LocalAuthCrypto

/// The login password's P-256 key, as the PAM module derives it
/// (pam/login_secret_crypto.c, docs/KEYRING.md): Argon2id v1.3 over the
/// password and the salt, 32 bytes, then `LoginPasswordKey.privateKey(seed:)`.
/// For `localauthctl keyring`, which asks the password itself; the service
/// never runs it.
public enum LoginPasswordDerivation {
    public typealias Parameters = LoginPasswordKey.Parameters

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public static func privateKey(password: [UInt8], salt: [UInt8], parameters: Parameters) throws -> P256.PrivateKey {
        var seed = [UInt8](repeating: 0, count: LoginPasswordKey.seedByteCount)
        defer { for index in seed.indices { seed[index] = 0 } }
        let result = password.withUnsafeBytes { passwordBytes in
            salt.withUnsafeBytes { saltBytes in
                seed.withUnsafeMutableBytes { out in
                    argon2id_hash_raw(
                        parameters.time, parameters.memoryKiB, parameters.lanes, passwordBytes.baseAddress, password.count,
                        saltBytes.baseAddress, salt.count, out.baseAddress, out.count)
                }
            }
        }
        guard result == Int32(ARGON2_OK.rawValue) else {
            throw Failure(description: "Argon2id failed: \(String(cString: argon2_error_message(result)))")
        }
        return try LoginPasswordKey.privateKey(seed: seed)
    }
}
