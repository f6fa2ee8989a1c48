import DBusCore
import Foundation
@testable import LocalAuthService
import LocalAuthCrypto
import LocalAuthRights
import LocalAuthShared

/// The login-secret component over a scratch state directory, a software
/// protector whose machine key a test can change, fake accounts and a fake clock.
@ServiceActor
final class LoginSecretRig: LoginSecretKeys, LoginSecretAccounts {
    let directory: String
    let store: LoginSecretStore
    let clock = FakeClock()
    var machineKey = [UInt8](repeating: 0x11, count: 32)
    /// The name the protector gives its wraps: "tpm2" stands for a TPM's (same machine key).
    var backendName = SoftwareKeyProtector.name
    /// `localauthd --tpm off`.
    var softwareChosen = false
    /// Runs inside every `protector()`, where opening a TPM suspends the call.
    var whileOpening: (@ServiceActor () async -> Void)?
    var accounts: [String: UInt32] = ["alice": 1000, "bob": 1001]
    private(set) lazy var secrets = LoginSecrets(seams: LoginSecretSeams(keys: self, accounts: self, clock: clock))

    /// A PAM host: root, one process.
    let pamHost = LoginSecretRig.request(uid: 0, sender: ":1.10", process: CallerProcess(pid: 4242, startTime: 777))
    let alice = LoginSecretRig.request(uid: 1000, sender: ":1.20", process: CallerProcess(pid: 5000, startTime: 1))

    /// A call as the router hands it, from a connection whose process the
    /// record pinned as `process` (nil: it could not be pinned).
    static func request(uid: UInt32, sender: String, process: CallerProcess?) -> Request {
        let pinned = process.map { CallerRecord.Process(pid: $0.pid, pidfd: -1, startTime: $0.startTime) }
        return Request(
            caller: CallerRecord(sender: sender, uid: uid, process: pinned, securityLabel: nil),
            record: CallRecord(sender: sender, requestID: nil, errors: .localAuth))
    }

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("lals-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        store = LoginSecretStore(stateDirectory: directory)
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    func protector() async throws(ServiceError) -> any KeyProtector {
        await whileOpening?()
        do { return NamedProtector(inner: try SoftwareKeyProtector(machineKey: machineKey), backendName: backendName) } catch {
            throw ServiceError(.storageFailed, "\(error)")
        }
    }

    func uid(of name: String) -> UInt32? { accounts[name] }

    // MARK: What the PAM host and localauthctl do

    /// The key a password gives (Argon2id stood in for by the password's bytes, padded).
    static func passwordKey(_ password: String) throws -> P256.PrivateKey {
        try LoginPasswordKey.privateKey(seed: Array((Array(password.utf8) + [UInt8](repeating: 0, count: 32)).prefix(32)))
    }

    static func options(_ password: String, salt: UInt8 = 1) throws -> [String: DBusValue] {
        [
            LocalAuthLoginSecretBus.Key.passwordKey: .bytes(try passwordKey(password).publicKey.x963Representation),
            LocalAuthLoginSecretBus.Key.salt: .bytes([UInt8](repeating: salt, count: 16)),
        ]
    }

    /// Enables alice's login secret with `password`; K as her localauthctl gets it.
    func enable(_ password: String = "old password", salt: UInt8 = 1) async throws -> [UInt8] {
        let answer = try await secrets.enable(alice, EnableLoginSecretArguments([.dictionary(try Self.options(password, salt: salt))]))
        return try ECIES.decrypt(try XCTUnwrapBytes(answer.first), with: try Self.passwordKey(password))
    }

    /// A release as a PAM host: the answer's secret opened with its ephemeral key.
    func release(_ user: String = "alice", nonce: [UInt8], by caller: Request? = nil) async throws(ServiceError) -> (
        secret: [UInt8], answer: [String: DBusValue]
    ) {
        let ephemeral: P256.PrivateKey
        do { ephemeral = try P256.PrivateKey() } catch { throw ServiceError(.failed, "\(error)") }
        let arguments = try ReleaseLoginSecretArguments([.string(user), .bytes(nonce), .bytes(ephemeral.publicKey.x963Representation), .dictionary([:])])
        let answer = try await secrets.release(caller ?? pamHost, arguments)
        guard let entries = answer.first?.stringKeyedDictionary, let sealed = entries[LocalAuthLoginSecretBus.Key.secret]?.byteArray,
            let secret = try? ECIES.decrypt(sealed, with: ephemeral)
        else { throw ServiceError(.failed, "no secret in the answer") }
        return (secret, entries)
    }
}

struct MissingBytes: Error {}

func XCTUnwrapBytes(_ value: DBusValue?) throws -> [UInt8] {
    guard let bytes = value?.byteArray else { throw MissingBytes() }
    return bytes
}

/// A software protector under another backend name (the TPM's wraps without a TPM).
struct NamedProtector: KeyProtector {
    let inner: SoftwareKeyProtector
    let backendName: String
    func wrap(_ key: [UInt8], context: KeyContext) throws(RightsError) -> [UInt8] { try inner.wrap(key, context: context) }
    func unwrap(_ blob: [UInt8], context: KeyContext) throws(RightsError) -> [UInt8] { try inner.unwrap(blob, context: context) }
}
