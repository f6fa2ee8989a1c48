import Foundation
import Glibc
import LocalAuthCrypto
import LocalAuthKeyring
import RigSupport
import XCTest

/// The login secret's rules of issue 37, item 4, on the rig: turning it on
/// needs the person (polkit's auth_self through the real agent and PAM),
/// and a PAM handle's second authenticate pass decides on what that pass saw.
final class LoginKeyringRulesTests: RigTestCase, @unchecked Sendable {
    /// Runs `arguments` (gdbus) as the test account with polkit's text agent
    /// registered for it, answering `password`; polkit's PAM helper is
    /// setuid and ignores DBUS_SYSTEM_BUS_ADDRESS, so the rig's bus socket is
    /// bound over the system bus's path in a private mount namespace (as
    /// `localauthctlAsOwner` does).
    private func gdbusAsOwnerWithAgent(uid: UInt32, password: String, _ arguments: [String]) throws -> Outcome {
        let socket = String(rig.address.dropFirst("unix:path=".count))
        let quoted = arguments.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        let script = """
            mkdir -p /run/dbus && mount -t tmpfs tmpfs /run/dbus && touch /run/dbus/system_bus_socket \
            && mount --bind '\(socket)' /run/dbus/system_bus_socket \
            && exec setpriv --reuid=\(uid) --regid=\(uid) --clear-groups env HOME=/home/\(TestAccount.name) \
            DBUS_SYSTEM_BUS_ADDRESS='\(rig.address)' /usr/bin/python3 '\(Paths.helper("with-polkit-agent.py"))' \
            '\(password)' /usr/bin/gdbus \(quoted)
            """
        return try runProgram("/usr/bin/unshare", ["--mount", "--propagation", "private", "/bin/sh", "-c", script], timeout: 60)
    }

    /// Turning the login secret on asks the person for their password
    /// (polkit's auth_self; the policy's own default is unit-tested,
    /// LoginSecretRulesTests): a program without it, with a password key of
    /// its own, gets PermissionDenied and nothing is made; with the owner's
    /// password typed into polkit's agent, it is on. Before issue 37 the
    /// action was `yes` for an active session and the call never let polkit
    /// ask, so no password could ever turn it on under auth_self.
    func testTurningItOnNeedsThePersonsPasswordThroughPolkit() throws {
        let uid = try TestAccount.ensure()
        try rig.polkit("org.example.LocalAuth.keyring", "auth_self")
        let salt = [UInt8](repeating: 3, count: 16)
        let key = try LoginPasswordDerivation.privateKey(password: Array(TestAccount.password.utf8), salt: salt, parameters: .standard)
        let record = service.stateDirectory + "/login/\(uid)"

        let foreign = try runAs(uid, "/usr/bin/gdbus", enableCall(key: try P256.PrivateKey(), salt: salt))
        XCTAssertTrue(foreign.output.contains("org.example.LocalAuth.Error.PermissionDenied"), foreign.output)
        XCTAssertFalse(FileManager.default.fileExists(atPath: record), "a program turned it on without the person")

        let wrong = try gdbusAsOwnerWithAgent(uid: uid, password: "not-the-password", enableCall(key: key, salt: salt))
        XCTAssertNotEqual(wrong.status, 0, wrong.output)
        XCTAssertFalse(FileManager.default.fileExists(atPath: record), "a wrong password turned it on")

        let owner = try gdbusAsOwnerWithAgent(uid: uid, password: TestAccount.password, enableCall(key: key, salt: salt))
        XCTAssertEqual(owner.status, 0, owner.output + service.log)
        XCTAssertTrue(FileManager.default.fileExists(atPath: record), "the owner turned it on")
        let secret = try ECIES.decrypt(Self.bytes(inGdbusOutput: owner.output), with: key)
        XCTAssertEqual(secret.count, 32)

        // A second enable, the person's password given again: AlreadyEnrolled, the first one's record untouched.
        let before = try XCTUnwrap(FileManager.default.contents(atPath: record))
        let again = try gdbusAsOwnerWithAgent(uid: uid, password: TestAccount.password, enableCall(key: try P256.PrivateKey(), salt: salt))
        XCTAssertTrue(again.output.contains("AlreadyEnrolled"), again.output)
        XCTAssertEqual(FileManager.default.contents(atPath: record), before)
    }

    /// One PAM handle, two authenticate passes, as login or gdm retry: the
    /// first matches the finger and then fails (a later module refuses); the
    /// second has no finger (it times out after more than the ticket's 10 s)
    /// and pam_unix verifies the password. The keyring line of the second
    /// pass opens the keyring with that password. Before issue 37 it
    /// presented the first pass's nonce, whose ticket had expired, and never
    /// tried the password.
    func testASecondPassDecidesOnItsOwnPasswordNotTheFirstPassesMatch() async throws {
        let uid = try TestAccount.ensure()
        let secret = Self.keyringHex(try enableLoginSecret(uid: uid, password: TestAccount.password))
        try await enrollOwnersFinger()
        let failOnce = rig.directory + "/fail-once"
        try "#!/bin/sh\n[ -e \"$1\" ] && exit 0\ntouch \"$1\"\nexit 1\n".write(toFile: failOnce, atomically: true, encoding: .utf8)
        chmod(failOnce, 0o755)
        let marker = rig.directory + "/failed-once-\(UInt32.random(in: 0...UInt32.max))"
        let asKeyring = rig.directory + "/keyring-second-pass-\(UInt32.random(in: 0...UInt32.max))"
        let stack = try keyringPamService([
            "auth [success=1 default=ignore] MODULE timeout=12",
            "auth requisite pam_unix.so",
            "auth requisite pam_exec.so quiet \(failOnce) \(marker)",
            "auth optional MODULE keyring-authtok",
            try keyringCapture(asKeyring),
        ])
        present("laowner-finger")
        let outcome = try runProgram(
            "/usr/bin/python3",
            [try testScript("pam-transaction.py"), stack, TestAccount.name, TestAccount.password, "authenticate-again", "authenticate"],
            environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address], timeout: 90)
        let passes = outcome.stdout.split(separator: "\n").filter { $0.hasPrefix("authenticate") }
        XCTAssertEqual(passes.count, 2, outcome.output)
        XCTAssertTrue(passes.first?.hasPrefix("authenticate-again=") == true && passes.first?.hasSuffix("=Success") == false, outcome.output)
        XCTAssertEqual(passes.last, "authenticate=Success", outcome.output)
        XCTAssertEqual(keyringCaptured(asKeyring), secret, "the second pass's password opened the keyring\n\(outcome.output)\n\(service.log)")
    }
}
