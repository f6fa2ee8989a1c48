import Foundation
import LocalAuthCrypto
@testable import LocalAuthRights
import XCTest

/// The login secret at rest (docs/KEYRING.md): both wraps, the commitment,
/// the file, and the way back when the machine wrap is lost. The PAM host's
/// Argon2id is stood in for by a fixed 32-byte seed: what is tested here is
/// everything after it.
final class LoginSecretStoreTests: XCTestCase {
    func passwordKey(seed byte: UInt8) throws -> (P256.PrivateKey, LoginPasswordKeyInfo) {
        let key = try LoginPasswordKey.privateKey(seed: [UInt8](repeating: byte, count: 32))
        return (key, try LoginPasswordKeyInfo(salt: [UInt8](repeating: byte, count: 16), parameters: .standard, publicKey: key.publicKey))
    }

    /// The PAM host's bounds on Argon2id's cost hold for every key the
    /// service keeps: a call's options and a file read back alike.
    func testArgon2ParametersOutsideThePAMHostsBoundsAreRefused() throws {
        let key = try LoginPasswordKey.privateKey(seed: [UInt8](repeating: 7, count: 32))
        let salt = [UInt8](repeating: 7, count: 16)
        // The old bounds (10 passes, 256 MiB, 4 lanes: 2.8 s of one core per
        // derivation, 2 s with four threads) were accepted before issue 37.
        let refused = [
            (0, 65536, 1), (5, 65536, 1), (10, 65536, 1), (3, 4096, 1), (3, 65 * 1024, 1), (3, 256 * 1024, 1), (3, 65536, 0),
            (3, 65536, 2), (3, 65536, 4), (10, 256 * 1024, 4),
        ]
        for (time, memoryKiB, lanes) in refused {
            let parameters = LoginPasswordKeyInfo.Parameters(time: UInt32(time), memoryKiB: UInt32(memoryKiB), lanes: UInt32(lanes))
            XCTAssertThrowsError(try LoginPasswordKeyInfo(salt: salt, parameters: parameters, publicKey: key.publicKey), "\(parameters)") {
                XCTAssertEqual(($0 as? RightsError)?.code, .malformed)
            }
        }
        for (time, memoryKiB) in [(1, 8 * 1024), (4, 64 * 1024), (3, 64 * 1024)] {
            let parameters = LoginPasswordKeyInfo.Parameters(time: UInt32(time), memoryKiB: UInt32(memoryKiB), lanes: 1)
            XCTAssertNoThrow(try LoginPasswordKeyInfo(salt: salt, parameters: parameters, publicKey: key.publicKey))
        }
        XCTAssertTrue(LoginPasswordKeyInfo.Parameters.standard.isAffordable)
    }

    /// pam/login_secret.h states the same bounds as the service: what one
    /// side accepts the other runs.
    func testThePAMHostsBoundsAreTheServices() throws {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        let header = try String(contentsOf: url.appendingPathComponent("pam/login_secret.h"), encoding: .utf8)
        func define(_ name: String) -> String? {
            header.split(separator: "\n").first { $0.hasPrefix("#define \(name) ") }.map { String($0.dropFirst("#define \(name) ".count)) }
        }
        let bounds = LoginPasswordKeyInfo.Parameters.self
        XCTAssertEqual(define("LS_ARGON2_MAX_TIME"), "\(bounds.timeBounds.upperBound)")
        XCTAssertEqual(define("LS_ARGON2_MIN_MEMORY_KIB"), "(\(bounds.memoryKiBBounds.lowerBound / 1024) * 1024)")
        XCTAssertEqual(define("LS_ARGON2_MAX_MEMORY_KIB"), "(\(bounds.memoryKiBBounds.upperBound / 1024) * 1024)")
        XCTAssertEqual(define("LS_ARGON2_MAX_LANES"), "\(bounds.laneBounds.upperBound)")
    }

    func testBothWrapsGiveTheSameSecretAndTheFileHoldsNeither() throws {
        let state = try StateDirectory()
        let protector = try SoftwareKeyProtector(stateDirectory: state.path)
        let (password, info) = try passwordKey(seed: 7)
        let record = try LoginSecretRecord.make(uid: 1000, password: info, protector: protector)
        let fromMachine = try record.openMachineWrap(using: protector)
        let fromPassword = try ECIES.decrypt(record.passwordWrap, with: password)
        XCTAssertEqual(fromMachine, fromPassword)
        XCTAssertEqual(fromMachine.count, 32)

        let store = LoginSecretStore(stateDirectory: state.path)
        try store.save(record)
        XCTAssertEqual(try state.mode(store.path(of: 1000)), 0o600)
        XCTAssertEqual(try state.mode(store.directory), 0o700)
        let bytes = try XCTUnwrap(FileManager.default.contents(atPath: store.path(of: 1000)))
        XCTAssertFalse(contains(Array(bytes), fromMachine), "K is on disk")
        XCTAssertEqual(try store.load(1000), record)
        XCTAssertNil(try store.load(1001))
    }

    func testAnotherPasswordAndAnotherUsersContextDoNotOpen() throws {
        let state = try StateDirectory()
        let protector = try SoftwareKeyProtector(stateDirectory: state.path)
        let (_, info) = try passwordKey(seed: 7)
        let (wrong, _) = try passwordKey(seed: 8)
        let record = try LoginSecretRecord.make(uid: 1000, password: info, protector: protector)
        XCTAssertThrowsError(try ECIES.decrypt(record.passwordWrap, with: wrong))
        // The machine wrap moved into another user's record does not open there.
        let other = LoginSecretRecord(
            uid: 1001, backend: record.backend, machineWrap: record.machineWrap, commitment: record.commitment,
            password: info, passwordWrap: record.passwordWrap, pending: nil)
        XCTAssertRightsError(try other.openMachineWrap(using: protector), .unwrapFailed)
        // A misplaced file is refused.
        let store = LoginSecretStore(stateDirectory: state.path)
        try store.save(record)
        try FileManager.default.moveItem(atPath: store.path(of: 1000), toPath: store.path(of: 1001))
        XCTAssertRightsError(try store.load(1001), .misplaced)
    }

    func testAfterTheMachineKeyRotatedThePasswordWrapReseals() throws {
        let state = try StateDirectory()
        let (password, info) = try passwordKey(seed: 7)
        let record = try LoginSecretRecord.make(uid: 1000, password: info, protector: try SoftwareKeyProtector(stateDirectory: state.path))
        let original = try ECIES.decrypt(record.passwordWrap, with: password)

        let rotated = try SoftwareKeyProtector(machineKey: [UInt8](repeating: 0x42, count: 32))
        XCTAssertRightsError(try record.openMachineWrap(using: rotated), .unwrapFailed)
        var healed = record
        XCTAssertRightsError(
            try healed.reseal([UInt8](repeating: 1, count: 32), using: rotated), .authenticationFailed,
            "a wrong K must not be sealed")
        try healed.reseal(try ECIES.decrypt(record.passwordWrap, with: password), using: rotated)
        XCTAssertEqual(try healed.openMachineWrap(using: rotated), original, "the same keyring secret")
    }

    func testAPasswordChangeAndAPendingPassword() throws {
        let state = try StateDirectory()
        let protector = try SoftwareKeyProtector(stateDirectory: state.path)
        let (old, oldInfo) = try passwordKey(seed: 7)
        let (new, newInfo) = try passwordKey(seed: 9)
        var record = try LoginSecretRecord.make(uid: 1000, password: oldInfo, protector: protector)
        let secret = try record.openMachineWrap(using: protector)

        record.setPending(newInfo)
        XCTAssertTrue(record.isPasswordWrapStale)
        XCTAssertEqual(try ECIES.decrypt(record.passwordWrap, with: old), secret, "stale: still the old password's")
        let store = LoginSecretStore(stateDirectory: state.path)
        try store.save(record)
        XCTAssertEqual(try store.load(1000)?.pending, newInfo)

        try record.changePassword(to: newInfo, secret: secret)
        XCTAssertFalse(record.isPasswordWrapStale)
        XCTAssertEqual(try ECIES.decrypt(record.passwordWrap, with: new), secret)
        XCTAssertThrowsError(try ECIES.decrypt(record.passwordWrap, with: old), "the old password no longer opens it")
    }

    /// A missed re-wrap is kept on disk, and a new record is created only
    /// where there is none (the second gets false; the first stays as it was).
    func testAMissedPasswordChangeIsKeptAndARecordIsCreatedOnce() throws {
        let state = try StateDirectory()
        let protector = try SoftwareKeyProtector(stateDirectory: state.path)
        let (_, info) = try passwordKey(seed: 7)
        let (_, other) = try passwordKey(seed: 8)
        var record = try LoginSecretRecord.make(uid: 1000, password: info, protector: protector)
        let store = LoginSecretStore(stateDirectory: state.path)
        XCTAssertTrue(try store.create(record))
        XCTAssertFalse(try store.create(try LoginSecretRecord.make(uid: 1000, password: other, protector: protector)))
        XCTAssertEqual(try store.load(1000), record, "the first record stays")

        record.markPasswordChangeMissed()
        XCTAssertTrue(record.isPasswordWrapStale)
        XCTAssertNil(record.pending)
        try store.save(record)
        XCTAssertEqual(try store.load(1000)?.missedPasswordChange, true)
        var bytes = LoginSecretCoding.encode(record)
        XCTAssertEqual(try LoginSecretCoding.decode(bytes), record)
        bytes[bytes.count - 1] = 2
        XCTAssertRightsError(try LoginSecretCoding.decode(bytes), .malformed)
        try record.changePassword(to: other, secret: try record.openMachineWrap(using: protector))
        XCTAssertFalse(record.missedPasswordChange, "a new wrap ends it")
    }

    func testEveryDamagedFileIsRefused() throws {
        let state = try StateDirectory()
        let (_, info) = try passwordKey(seed: 7)
        let record = try LoginSecretRecord.make(uid: 1000, password: info, protector: try SoftwareKeyProtector(stateDirectory: state.path))
        let bytes = LoginSecretCoding.encode(record)
        XCTAssertEqual(try LoginSecretCoding.decode(bytes), record)
        for length in 0..<bytes.count { XCTAssertThrowsError(try LoginSecretCoding.decode(Array(bytes.prefix(length))), "cut at \(length)") }
    }

    func testTheScalarPathMatchesLibcrypto() throws {
        let key = try P256.PrivateKey()
        let der = try key.derRepresentation
        // The scalar of a PKCS#8 P-256 key made by libcrypto: the 32 bytes after "04 20" in its SEC1 part.
        let marker: [UInt8] = [0x02, 0x01, 0x01, 0x04, 0x20]
        let at = try XCTUnwrap((0..<der.count - 5).first { Array(der[$0..<$0 + 5]) == marker })
        let scalar = Array(der[at + 5..<at + 37])
        XCTAssertEqual(try P256.PrivateKey(scalar: scalar).publicKey, key.publicKey)
        XCTAssertThrowsError(try P256.PrivateKey(scalar: [UInt8](repeating: 0, count: 32)))
        XCTAssertThrowsError(try P256.PrivateKey(scalar: [UInt8](repeating: 0xFF, count: 32)), "above the group order")
    }
}
