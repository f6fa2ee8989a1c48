import Foundation
import LocalAuthCrypto
import LocalAuthentication

/// A small vault in the style of Apple's LARightStore documentation: the key
/// that encrypts the note is a right's secret, released only after the
/// fingerprint (or the account password).
struct Vault {
    static let keyIdentifier = "vault-key"
    let noteURL: URL

    /// First run: a random key becomes the right's secret; the note is sealed with it.
    func create(note: String) async throws {
        let key = try SecureRandom.bytes(32)
        let right = LARight(requirement: .biometry)
        _ = try await LARightStore.shared.saveRight(right, identifier: Self.keyIdentifier, secret: Data(key))
        let sealed = try AESGCM.seal(Array(note.utf8), key: key).combined
        try Data(sealed).write(to: noteURL)
    }

    /// Later runs: the right's secret after authorization opens the note.
    func open() async throws -> String {
        let right = try await LARightStore.shared.right(forIdentifier: Self.keyIdentifier)
        try await right.authorize(localizedReason: "Open your vault")
        let key = try await right.secret.loadData()
        await right.deauthorize()
        let sealed = try AESGCM.SealedBox(combined: [UInt8](try Data(contentsOf: noteURL)))
        return String(decoding: try AESGCM.open(sealed, key: [UInt8](key)), as: UTF8.self)
    }
}
