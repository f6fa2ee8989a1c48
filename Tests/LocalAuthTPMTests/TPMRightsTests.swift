import Foundation
import LocalAuthCrypto
@testable import LocalAuthRights
import LocalAuthTPM
import XCTest

/// Rights on the TPM backend, against swtpm: secrets, TPM-held private keys,
/// the move from software, another TPM, and a TPM that vanishes.
final class TPMRightsTests: XCTestCase {
    var state = ""

    override func setUpWithError() throws {
        state = FileManager.default.temporaryDirectory.appendingPathComponent("lar-tpm-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: state)
    }

    func owner(_ identifier: String) throws -> RightOwner { try RightOwner(uid: 1000, appID: "org.example.Notes", identifier: identifier) }

    @discardableResult
    func save(_ identifier: String, _ secret: String, _ protector: any KeyProtector) throws -> RightRecord {
        let record = try RightRecord.create(owner: owner(identifier), requirement: .biometryOrPassword, secret: Array(secret.utf8),
                                            created: 1_700_000_000, protector: protector)
        try RightStorage(stateDirectory: state, protector: protector).save(record)
        return record
    }

    /// Every file under the state directory and its bytes.
    func snapshot() throws -> [String: Data] {
        var files: [String: Data] = [:]
        let enumerator = FileManager.default.enumerator(atPath: state)
        while let path = enumerator?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: state + "/" + path, isDirectory: &isDirectory), !isDirectory.boolValue {
                files[path] = try Data(contentsOf: URL(fileURLWithPath: state + "/" + path))
            }
        }
        return files
    }

    func testSecretsRoundTripThroughTheTPMBackend() throws {
        let tpm = try SoftwareTPM()
        let protector = try TPMKeyProtector(stateDirectory: state, device: tpm.device)
        XCTAssertEqual(protector.backendName, "tpm2")
        let record = try save("vault", "the secret", protector)
        XCTAssertEqual(record.backendName, "tpm2")

        // A new start (a new protector, unsealing the machine key again) reads it.
        let again = try TPMKeyProtector(stateDirectory: state, device: tpm.device)
        let loaded = try RightStorage(stateDirectory: state, protector: again).load(owner("vault"))
        XCTAssertEqual(try loaded.secret(using: again), Array("the secret".utf8))
        XCTAssertEqual(loaded.publicKeyPoint, record.publicKeyPoint)

        // On disk: no plaintext machine key, the sealed one is a TPM blob
        // without the machine key's bytes in it.
        let keys = try FileManager.default.contentsOfDirectory(atPath: state + "/keys")
        XCTAssertEqual(keys, ["machine-key.tpm"])
        let sealed = try Array(Data(contentsOf: URL(fileURLWithPath: TPMKeyProtector.sealedMachineKeyPath(stateDirectory: state))))
        XCTAssertNoThrow(try TPMObjectBlob(bytes: sealed))
        let machineKey = try TPMKeyProtector.unsealExisting(TPMKeyProtector.sealedMachineKeyPath(stateDirectory: state), device: tpm.device)!
        XCTAssertFalse(Data(sealed).range(of: Data(machineKey)) != nil)
        XCTAssertEqual((try FileManager.default.attributesOfItem(atPath: state + "/keys/machine-key.tpm")[.posixPermissions] as! NSNumber).intValue, 0o600)

        // The software backend refuses to make a plaintext key beside it.
        XCTAssertRightsError(try SoftwareKeyProtector(stateDirectory: state), .machineKeySealed)
    }

    func testATPMRightSignsAgreesAndDecryptsInTheTPM() throws {
        let tpm = try SoftwareTPM()
        let protector = try TPMKeyProtector(stateDirectory: state, device: tpm.device)
        let record = try save("signer", "s", protector)
        let key = try record.openPrivateKey(using: protector)
        XCTAssertEqual(key.backendName, "tpm2")
        XCTAssertEqual(key.publicKey.x963Representation, record.publicKeyPoint)

        let message = Array("sign me".utf8)
        XCTAssertTrue(try record.publicKey.isValidSignature(try key.signature(for: message), for: message))
        let digest = try SHA256.hash(message)
        XCTAssertTrue(try record.publicKey.isValidSignature(try key.signature(forDigest: digest), forDigest: digest))

        let peer = try P256.PrivateKey()
        XCTAssertEqual(try key.sharedSecret(with: peer.publicKey), try peer.sharedSecretFromKeyAgreement(with: try record.publicKey))

        // Apple's ECIES: encrypted by the software path (as a client would),
        // decrypted with the ECDH step in the TPM.
        let plaintext = Array("to the TPM right".utf8)
        XCTAssertEqual(try key.decrypt(ECIES.encrypt(plaintext, to: try record.publicKey)), plaintext)
        // The tag's last byte changed (flipped: a byte set to 0 was already 0 in 1 of 256 runs).
        var damaged = try ECIES.encrypt(plaintext, to: try record.publicKey)
        damaged[damaged.count - 1] ^= 1
        XCTAssertRightsError(try key.decrypt(damaged), .authenticationFailed)

        // The private key is not handed out.
        XCTAssertRightsError(try record.privateKey(using: protector), .keyNotExportable)
    }

    /// The same ECIES ciphertext opens with the software key's one-step
    /// decryption and with the two-step path the TPM key uses.
    func testOneCiphertextOpensOnBothECIESPaths() throws {
        let software = try P256.PrivateKey()
        let plaintext = Array("both ways".utf8)
        let ciphertext = try ECIES.encrypt(plaintext, to: software.publicKey)
        XCTAssertEqual(try ECIES.decrypt(ciphertext, with: software), plaintext)
        let z = try software.sharedSecretFromKeyAgreement(with: ECIES.ephemeralPublicKey(of: ciphertext), cofactor: true)
        XCTAssertEqual(try ECIES.decrypt(ciphertext, sharedSecret: z), plaintext)
        XCTAssertEqual(try SoftwareRightPrivateKey(software).decrypt(ciphertext), plaintext)
    }

    func testMovingFromSoftwareToTheTPMKeepsEveryRight() throws {
        let software = try SoftwareKeyProtector(stateDirectory: state)
        var before: [String: RightRecord] = [:]
        for index in 0..<5 { before["right \(index)"] = try save("right \(index)", "secret \(index)", software) }
        let rightFiles = try snapshot().filter { $0.key.hasPrefix("rights/") }

        let tpm = try SoftwareTPM()
        XCTAssertTrue(try TPMKeyProtector.moveMachineKeyToTPM(stateDirectory: state, device: tpm.device))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: state + "/keys").sorted(),
                       ["machine-key.tpm", "software-machine-key.tpm"])
        XCTAssertFalse(try TPMKeyProtector.moveMachineKeyToTPM(stateDirectory: state, device: tpm.device), "nothing left to move")
        XCTAssertEqual(try snapshot().filter { $0.key.hasPrefix("rights/") }, rightFiles, "no right file is rewritten")

        let protector = try TPMKeyProtector(stateDirectory: state, device: tpm.device)
        let listing = try RightStorage(stateDirectory: state, protector: protector).list(uid: 1000, appID: "org.example.Notes")
        XCTAssertEqual(listing.damaged.count, 0, "\(listing.damaged)")
        XCTAssertEqual(listing.rights.count, 5)
        for record in listing.rights {
            XCTAssertEqual(record.backendName, "software")
            let index = record.owner.identifier.split(separator: " ").last!
            XCTAssertEqual(try record.secret(using: protector), Array("secret \(index)".utf8))
            XCTAssertEqual(record.publicKeyPoint, before[record.owner.identifier]?.publicKeyPoint)
            let key = try record.openPrivateKey(using: protector)
            XCTAssertTrue(try record.publicKey.isValidSignature(try key.signature(for: [1]), for: [1]))
        }
        // New rights go to the TPM, beside the software ones.
        XCTAssertEqual(try save("new", "n", protector).backendName, "tpm2")
        XCTAssertEqual(try RightStorage(stateDirectory: state, protector: protector).list(uid: 1000, appID: "org.example.Notes").rights.count, 6)
    }

    /// The move interrupted after the sealed file was written: the next start
    /// finishes it (same key in both, the plaintext goes).
    func testAnInterruptedMoveIsFinished() throws {
        let software = try SoftwareKeyProtector(stateDirectory: state)
        try save("kept", "k", software)
        let plain = try Data(contentsOf: URL(fileURLWithPath: SoftwareKeyProtector.machineKeyPath(stateDirectory: state)))
        let tpm = try SoftwareTPM()
        try TPMKeyProtector.moveMachineKeyToTPM(stateDirectory: state, device: tpm.device)
        try plain.write(to: URL(fileURLWithPath: SoftwareKeyProtector.machineKeyPath(stateDirectory: state)))
        chmod(SoftwareKeyProtector.machineKeyPath(stateDirectory: state), 0o600)
        let protector = try TPMKeyProtector(stateDirectory: state, device: tpm.device)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: state + "/keys").sorted(),
                       ["machine-key.tpm", "software-machine-key.tpm"])
        XCTAssertEqual(try RightStorage(stateDirectory: state, protector: protector).load(owner("kept")).secret(using: protector), Array("k".utf8))
    }

    /// Issue 20 item 12: moving to the TPM rotates the machine key. A backup
    /// taken before the move holds the plaintext software key: it still
    /// opens what was saved before (it was in the backup), and nothing saved
    /// after. On d7b8519 the TPM sealed the same key, and the backup opened
    /// every right saved since.
    func testABackupFromBeforeTheMoveOpensNothingSavedAfterIt() throws {
        let software = try SoftwareKeyProtector(stateDirectory: state)
        let old = try save("before", "saved before the move", software)
        let backup = try Array(Data(contentsOf: URL(fileURLWithPath: SoftwareKeyProtector.machineKeyPath(stateDirectory: state))))

        let tpm = try SoftwareTPM()
        let protector = try TPMKeyProtector(stateDirectory: state, device: tpm.device)
        let newer = try save("after", "saved after the move", protector)
        let fromBackup = try SoftwareKeyProtector(machineKey: backup)
        XCTAssertRightsError(try fromBackup.unwrap(newer.wrappedKey, context: KeyContext(owner: newer.owner, purpose: .rightKey)),
                             .unwrapFailed)
        XCTAssertNoThrow(try fromBackup.unwrap(old.wrappedKey, context: KeyContext(owner: old.owner, purpose: .rightKey)))

        // Both open on this machine, after a restart too.
        let again = try TPMKeyProtector(stateDirectory: state, device: tpm.device)
        let storage = RightStorage(stateDirectory: state, protector: again)
        XCTAssertEqual(try storage.load(owner("before")).secret(using: again), Array("saved before the move".utf8))
        XCTAssertEqual(try storage.load(owner("after")).secret(using: again), Array("saved after the move".utf8))
        let machineKey = try TPMKeyProtector.unsealExisting(TPMKeyProtector.sealedMachineKeyPath(stateDirectory: state), device: tpm.device)
        XCTAssertNotEqual(machineKey, backup, "the machine key was rotated")
    }

    /// A copy of the state directory on another machine (or this one with its
    /// TPM cleared or replaced: a new owner seed, the same failure) opens nothing.
    func testAnotherTPMOpensNothing() throws {
        let tpm = try SoftwareTPM()
        let protector = try TPMKeyProtector(stateDirectory: state, device: tpm.device)
        try save("vault", "v", protector)
        let files = try snapshot()

        let other = try SoftwareTPM()
        XCTAssertRightsError(try TPMKeyProtector(stateDirectory: state, device: other.device), .tpmForeignKey)
        XCTAssertRightsError(try SoftwareKeyProtector(stateDirectory: state), .machineKeySealed)
        XCTAssertEqual(try snapshot(), files, "nothing is changed or replaced")
        // The right's TPM key does not load there either, even with the right's
        // per-right key (taken here from the first TPM).
        let record = try RightStorage(stateDirectory: state, protector: protector).load(owner("vault"))
        let foreign = try record.openPrivateKey(using: TPMKeyProtector(stateDirectory: state, device: tpm.device).withDevice(other.device))
        XCTAssertRightsError(try foreign.signature(for: [1]), .tpmForeignKey)
    }

    /// swtpm killed: a named error, no file changed, and every right works
    /// again once the TPM is back.
    func testTheTPMVanishingLosesNoRight() throws {
        let tpm = try SoftwareTPM()
        let protector = try TPMKeyProtector(stateDirectory: state, device: tpm.device)
        let record = try save("vault", "v", protector)
        let key = try record.openPrivateKey(using: protector)
        let files = try snapshot()

        // Killed while a signing loop runs on another thread.
        let done = DispatchSemaphore(value: 0)
        let failure = LockedBox<RightsError?>(nil)
        DispatchQueue.global().async {
            for _ in 0..<10_000 {
                do { _ = try key.signature(for: [1]) } catch let error as RightsError { failure.set(error); break } catch { break }
            }
            done.signal()
        }
        usleep(200_000)
        tpm.kill()
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success)
        XCTAssertEqual(failure.get()?.code, .tpmUnavailable, "\(String(describing: failure.get()))")
        XCTAssertRightsError(try key.signature(for: [1]), .tpmUnavailable)
        XCTAssertRightsError(try save("new", "n", protector), .tpmUnavailable)
        XCTAssertRightsError(try TPMKeyProtector(stateDirectory: state, device: tpm.device), .tpmUnavailable)
        XCTAssertEqual(try snapshot().filter { !$0.key.hasSuffix("swtpm.log") }, files)

        // The same TPM state, started again: everything opens.
        let back = try SoftwareTPM(stateDirectory: tpm.stateDirectory)
        let reopened = try TPMKeyProtector(stateDirectory: state, device: back.device)
        let loaded = try RightStorage(stateDirectory: state, protector: reopened).load(owner("vault"))
        XCTAssertEqual(try loaded.secret(using: reopened), Array("v".utf8))
        XCTAssertTrue(try loaded.publicKey.isValidSignature(try loaded.openPrivateKey(using: reopened).signature(for: [2]), for: [2]))
    }
}

extension TPMKeyProtector {
    /// The same machine key over another device (tests only: a key blob taken to another TPM).
    func withDevice(_ device: TPMDevice) -> TPMKeyProtector { TPMKeyProtector(device: device, software: software) }
}

/// A value shared with a background thread.
final class LockedBox<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func get() -> Value { lock.withLock { value } }
    func set(_ newValue: Value) { lock.withLock { value = newValue } }
}

func XCTAssertRightsError(_ body: @autoclosure () throws -> some Any, _ expected: RightsError.Code, file: StaticString = #filePath, line: UInt = #line) {
    do {
        _ = try body()
        XCTFail("did not throw; expected \(expected)", file: file, line: line)
    } catch let error as RightsError {
        XCTAssertEqual(error.code, expected, "\(error)", file: file, line: line)
    } catch {
        XCTFail("threw \(error); expected \(expected)", file: file, line: line)
    }
}
