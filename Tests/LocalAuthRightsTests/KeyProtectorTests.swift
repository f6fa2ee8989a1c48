import Foundation
import Glibc
import LocalAuthCrypto
@testable import LocalAuthRights
import XCTest

/// The software key protector: its machine key file is made once, root-only,
/// and refused when it is not; a blob opens only with its machine key and
/// for its own right.
final class KeyProtectorTests: XCTestCase {
    func testTheMachineKeyIsMadeOnceRootOnly() throws {
        let state = try StateDirectory()
        let first = try SoftwareKeyProtector(stateDirectory: state.path)
        XCTAssertEqual(try state.mode(state.machineKeyPath), 0o600)
        XCTAssertEqual(try state.mode(state.path + "/keys"), 0o700)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: state.machineKeyPath))
        XCTAssertEqual(bytes.count, 32)
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: state.machineKeyPath)[.ownerAccountID] as? NSNumber,
                       NSNumber(value: geteuid()))
        // No temporary file is left behind.
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: state.path + "/keys"), ["machine-key"])

        let context = KeyContext(owner: try owner(), purpose: .rightKey)
        let key = try SecureRandom.bytes(32)
        let blob = try first.wrap(key, context: context)
        XCTAssertEqual(blob.count, 1 + 12 + 32 + 16)
        XCTAssertFalse(contains(blob, key))
        let second = try SoftwareKeyProtector(stateDirectory: state.path)
        XCTAssertEqual(try second.unwrap(blob, context: context), key, "the second start reads the same machine key")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: state.machineKeyPath)), bytes)
    }

    func testAnotherMachineKeyCannotUnwrap() throws {
        let hereState = try StateDirectory(), elsewhereState = try StateDirectory()
        let here = try SoftwareKeyProtector(stateDirectory: hereState.path)
        let elsewhere = try SoftwareKeyProtector(stateDirectory: elsewhereState.path)
        let context = KeyContext(owner: try owner(), purpose: .rightKey)
        let blob = try here.wrap(SecureRandom.bytes(32), context: context)
        XCTAssertRightsError(try elsewhere.unwrap(blob, context: context), .unwrapFailed)
    }

    func testABlobMovedToAnotherRightDoesNotOpen() throws {
        let protector = try SoftwareKeyProtector(machineKey: SecureRandom.bytes(32))
        let original = try owner("vault", app: "org.example.Notes", uid: 1000)
        let blob = try protector.wrap(SecureRandom.bytes(32), context: KeyContext(owner: original, purpose: .rightKey))
        let others: [(String, KeyContext)] = [
            ("another identifier", KeyContext(owner: try owner("vault2"), purpose: .rightKey)),
            ("another app", KeyContext(owner: try owner("vault", app: "org.example.Mail"), purpose: .rightKey)),
            ("another user", KeyContext(owner: try owner("vault", uid: 1001), purpose: .rightKey)),
            ("another purpose", KeyContext(owner: original, purpose: .privateKey)),
            // Length prefixes keep "ab"+"c" and "a"+"bc" apart.
            ("shifted names", KeyContext(owner: try owner("ault", app: "org.example.Notesv"), purpose: .rightKey)),
        ]
        for (name, context) in others {
            XCTAssertRightsError(try protector.unwrap(blob, context: context), .unwrapFailed, name)
        }
        XCTAssertNoThrow(try protector.unwrap(blob, context: KeyContext(owner: original, purpose: .rightKey)))
    }

    func testEveryDamagedBlobIsRefused() throws {
        let protector = try SoftwareKeyProtector(machineKey: SecureRandom.bytes(32))
        let context = KeyContext(owner: try owner(), purpose: .rightKey)
        let blob = try protector.wrap(SecureRandom.bytes(32), context: context)
        XCTAssertRightsError(try protector.unwrap([1] + blob.dropFirst().dropLast(), context: context), .unwrapFailed)
        XCTAssertRightsError(try protector.unwrap(Array(blob.prefix(20)), context: context), .unwrapFailed)
        var other = blob
        other[0] = 2
        XCTAssertRightsError(try protector.unwrap(other, context: context), .wrongBackend)
        for index in 1..<blob.count {
            var damaged = blob
            damaged[index] ^= 0x01
            XCTAssertRightsError(try protector.unwrap(damaged, context: context), .unwrapFailed, "byte \(index)")
        }
    }

    func testAMachineKeyWithLooseModeIsRefusedAndKept() throws {
        let state = try StateDirectory()
        _ = try SoftwareKeyProtector(stateDirectory: state.path)
        let before = try Data(contentsOf: URL(fileURLWithPath: state.machineKeyPath))
        for mode in [0o644, 0o640, 0o604, 0o660, 0o606] as [mode_t] {
            XCTAssertEqual(chmod(state.machineKeyPath, mode), 0)
            XCTAssertRightsError(try SoftwareKeyProtector(stateDirectory: state.path), .machineKeyInsecurePermissions, "mode \(String(mode, radix: 8))")
        }
        // Refused, never replaced: a new key would lose every right.
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: state.machineKeyPath)), before)
        XCTAssertEqual(chmod(state.machineKeyPath, 0o400), 0)
        XCTAssertNoThrow(try SoftwareKeyProtector(stateDirectory: state.path), "read-only for root is fine")
    }

    func testAMachineKeyOfTheWrongSizeIsRefused() throws {
        let state = try StateDirectory()
        _ = try SoftwareKeyProtector(stateDirectory: state.path)
        for size in [0, 31, 33, 64] {
            XCTAssertTrue(FileManager.default.createFile(atPath: state.machineKeyPath, contents: Data(count: size),
                                                         attributes: [.posixPermissions: 0o600]))
            XCTAssertEqual(chmod(state.machineKeyPath, 0o600), 0)
            XCTAssertRightsError(try SoftwareKeyProtector(stateDirectory: state.path), .machineKeyWrongSize, "\(size) bytes")
        }
        XCTAssertRightsError(try SoftwareKeyProtector(machineKey: [1, 2, 3]), .machineKeyWrongSize)
    }

    func testAMachineKeyOfAnotherOwnerIsRefused() throws {
        try XCTSkipUnless(geteuid() == 0, "needs root to give the file away")
        let state = try StateDirectory()
        _ = try SoftwareKeyProtector(stateDirectory: state.path)
        XCTAssertEqual(chown(state.machineKeyPath, 65534, 65534), 0)
        XCTAssertRightsError(try SoftwareKeyProtector(stateDirectory: state.path), .machineKeyWrongOwner)
    }

    func testASymlinkOrDirectoryIsNotAMachineKey() throws {
        let state = try StateDirectory()
        _ = try SoftwareKeyProtector(stateDirectory: state.path)
        let real = state.path + "/elsewhere"
        XCTAssertEqual(rename(state.machineKeyPath, real), 0)
        XCTAssertEqual(symlink(real, state.machineKeyPath), 0)
        XCTAssertRightsError(try SoftwareKeyProtector(stateDirectory: state.path), .machineKeyNotAFile, "symlink")
        XCTAssertEqual(unlink(state.machineKeyPath), 0)
        XCTAssertEqual(mkdir(state.machineKeyPath, 0o700), 0)
        XCTAssertRightsError(try SoftwareKeyProtector(stateDirectory: state.path), .machineKeyNotAFile, "directory")
    }
}
