import DBusCore
import Glibc
import LocalAuthShared

/// The caller's own login secret (docs/KEYRING.md), for `localauthctl
/// keyring`: on or off, and the two calls that turn it on and off. The
/// password's key is derived by the caller (LocalAuthKeyring); the service
/// never sees a password.
public enum LALoginSecret {
    private typealias Key = LocalAuthLoginSecretBus.Key

    public struct Status: Sendable {
        public let enabled: Bool
        public let passwordWrapStale: Bool
        public let backend: String?
        public let salt: [UInt8]
        public let time: UInt32
        public let memoryKiB: UInt32
        public let lanes: UInt32
    }

    public static func status() async throws -> Status {
        let answer = try await call(LocalAuthLoginSecretBus.Method.status).first?.stringKeyedDictionary ?? [:]
        return Status(
            enabled: answer[Key.enabled]?.bool ?? false, passwordWrapStale: answer[Key.stale]?.bool ?? false,
            backend: answer[Key.backend]?.string, salt: answer[Key.salt]?.byteArray ?? [],
            time: answer[Key.argon2Time]?.uint32 ?? 0, memoryKiB: answer[Key.argon2MemoryKiB]?.uint32 ?? 0,
            lanes: answer[Key.argon2Lanes]?.uint32 ?? 0)
    }

    /// Turns it on with the password's public key D: answers the password wrap ECIES(D, K).
    public static func enable(passwordKey: [UInt8], salt: [UInt8], time: UInt32, memoryKiB: UInt32, lanes: UInt32) async throws -> [UInt8] {
        let options: [String: DBusValue] = [
            Key.passwordKey: .bytes(passwordKey), Key.salt: .bytes(salt), Key.argon2Time: .uint32(time),
            Key.argon2MemoryKiB: .uint32(memoryKiB), Key.argon2Lanes: .uint32(lanes),
        ]
        return try await call(LocalAuthLoginSecretBus.Method.enable, [.dictionary(options)]).first?.byteArray ?? []
    }

    /// What the password's key signs for DisableLoginSecret on this connection.
    public static func disableProofMessage() throws -> [UInt8] {
        LocalAuthLoginSecretBus.ProofLabel.message(
            LocalAuthLoginSecretBus.ProofLabel.disable, uid: getuid(),
            sender: try ServiceClient.shared.bus().uniqueName)
    }

    /// With the password's proof: the password wrap; `commit` removes the login secret.
    public static func disable(proof: [UInt8], commit: Bool) async throws -> [UInt8] {
        try await call(LocalAuthLoginSecretBus.Method.disable, [.bytes(proof), .dictionary([Key.commit: .boolean(commit)])]).first?
            .byteArray ?? []
    }

    private static func call(_ member: String, _ arguments: [DBusValue] = []) async throws -> [DBusValue] {
        do {
            return try await ServiceClient.shared.call(member, arguments)
        } catch {
            throw LAFingerprints.ServiceError(name: error.name.rawValue, message: error.message)
        }
    }
}
