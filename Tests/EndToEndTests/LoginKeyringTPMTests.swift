import Foundation
import Glibc
import RigSupport
import XCTest

/// The login secret's machine wrap on a TPM (swtpm), and the way back
/// through the password wrap (docs/KEYRING.md, "After a firmware update").
final class LoginKeyringTPMTests: TPMRigTestCase, @unchecked Sendable {
    private var otherTPMs: [Swtpm] = []

    override func tearDown() {
        for tpm in otherTPMs { Spawn.terminate(tpm.pid, grace: 2) }
        super.tearDown()
    }

    /// A fingerprint login as the test account: what pam_gnome_keyring's line got.
    private func fingerprintLogin() throws -> String {
        let asKeyring = rig.directory + "/tpm-finger-\(UInt32.random(in: 0...UInt32.max))"
        let stack = try keyringPamService([
            "auth [success=1 default=ignore] MODULE timeout=20", "auth requisite pam_deny.so",
            "auth optional MODULE keyring-authtok", try keyringCapture(asKeyring),
        ])
        present("laowner-finger")
        _ = try keyringPamtester(stack, TestAccount.name)
        return keyringCaptured(asKeyring)
    }

    private func passwordLogin() throws -> String {
        let asKeyring = rig.directory + "/tpm-password-\(UInt32.random(in: 0...UInt32.max))"
        let stack = try keyringPamService(["auth requisite pam_unix.so", "auth optional MODULE keyring-authtok", try keyringCapture(asKeyring)])
        _ = try keyringPamtester(stack, TestAccount.name, input: TestAccount.password)
        return keyringCaptured(asKeyring)
    }

    /// The machine wrap is the TPM's: on this TPM the finger opens the
    /// keyring; the state directory (login secret included) on another TPM
    /// opens nothing by the finger, and the password still opens the same keyring.
    func testTheLoginSecretCopiedToAnotherTPMDoesNotUnsealButThePasswordOpensIt() async throws {
        let uid = try TestAccount.ensure()
        try restartServiceOnATPM()
        let secret = Self.keyringHex(try enableAsOwner(uid: uid))
        try await enrollOwnersFinger()
        XCTAssertEqual(try fingerprintLogin(), secret, "on its own TPM\n\(service.log)")
        let record = try XCTUnwrap(FileManager.default.contents(atPath: service.stateDirectory + "/login/\(uid)"))
        XCTAssertNotNil(record.range(of: Data("tpm2".utf8)), "wrapped by the TPM backend")

        // The same state directory, another TPM.
        let directory = rig.directory + "/swtpm-other-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let other = try Swtpm.start(stateDirectory: directory)
        otherTPMs.append(other)
        let state = service.stateDirectory
        service.stop()
        service = try ServiceProcess(bus: rig, stateDirectory: state, arguments: ["--tpm", other.tcti])
        XCTAssertNotEqual(try fingerprintLogin(), secret, "another TPM does not unseal it")
        XCTAssertEqual(try passwordLogin(), secret, "the password opens the same keyring\n\(service.log)")
    }

    /// The machine key made anew (an administrator starting over after the
    /// TPM was cleared: TPM.md): the finger no longer opens the keyring, the
    /// next password login seals K again, and the finger opens the same keyring.
    func testAfterTheMachineKeyWasMadeAnewAPasswordLoginSealsItAgain() async throws {
        let uid = try TestAccount.ensure()
        let tpm = try restartServiceOnATPM()
        let secret = Self.keyringHex(try enableAsOwner(uid: uid))
        try await enrollOwnersFinger()
        let state = service.stateDirectory
        service.stop()
        XCTAssertEqual(unlink(state + "/keys/machine-key.tpm"), 0)
        service = try ServiceProcess(bus: rig, stateDirectory: state, arguments: ["--tpm", tpm.tcti])

        XCTAssertNotEqual(try fingerprintLogin(), secret, "the old machine wrap does not open")
        XCTAssertEqual(try passwordLogin(), secret, "the password opens it")
        XCTAssertTrue(service.log.contains("resealed with tpm2 after a password login"), service.log)
        XCTAssertEqual(try fingerprintLogin(), secret, "and the finger again, the same keyring")
    }

    /// A boot without the TPM after an administrator started the TPM's
    /// machine key over (TPM.md): `--tpm auto` falls back to software, the
    /// password still opens the keyring, and the machine wrap the TPM made is
    /// not sealed to the software key on the disk (before issue 37 the
    /// password login did that). `--tpm off`, the administrator's word, lets
    /// the next password login move it.
    func testATPMsWrapIsNotResealedToTheSoftwareKeyUnlessTheAdministratorSaysSo() async throws {
        guard access("/dev/tpmrm0", F_OK) != 0 else { throw XCTSkip("this machine has a TPM: --tpm auto would use it") }
        let uid = try TestAccount.ensure()
        try restartServiceOnATPM()
        let secret = Self.keyringHex(try enableAsOwner(uid: uid))
        let state = service.stateDirectory
        let record = state + "/login/\(uid)"
        service.stop()
        XCTAssertEqual(unlink(state + "/keys/machine-key.tpm"), 0)

        service = try ServiceProcess(bus: rig, stateDirectory: state, arguments: ["--tpm", "auto"])
        XCTAssertEqual(try passwordLogin(), secret, "the password opens the keyring\n\(service.log)")
        XCTAssertTrue(service.log.contains("not offering a reseal"), service.log)
        XCTAssertFalse(service.log.contains("resealed with software"), service.log)
        XCTAssertNotNil(FileManager.default.contents(atPath: record)?.range(of: Data("tpm2".utf8)), "still the TPM's wrap")

        service.stop()
        service = try ServiceProcess(bus: rig, stateDirectory: state, arguments: ["--tpm", "off"])
        XCTAssertEqual(try passwordLogin(), secret)
        XCTAssertTrue(service.log.contains("resealed with software after a password login"), service.log)
    }
}
