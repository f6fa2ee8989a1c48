import Foundation
import Glibc
import LocalAuthCrypto
import LocalAuthKeyring
import RigSupport
import XCTest

/// What the login-keyring tests share (LoginKeyringTests, LoginKeyringTPMTests):
/// PAM services of their own, pamtester on the rig's bus, pam_exec capturing
/// the PAM_AUTHTOK that pam_gnome_keyring's line would get, and the test
/// account turning its login secret on.
extension RigTestCase {
    static let keyringModule: String = {
        let path = Paths.root + "/.build/pam/pam_localauth.so"
        _ = try? runProgram("/usr/bin/make", ["-C", Paths.root, "pam"])
        return path
    }()

    func keyringPamService(_ lines: [String]) throws -> String {
        XCTAssertTrue(FileManager.default.fileExists(atPath: Self.keyringModule), "make pam did not build the module")
        let name = "localauth-keyring-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let path = "/etc/pam.d/" + name
        let text = lines.map { $0.replacingOccurrences(of: "MODULE", with: Self.keyringModule) }.joined(separator: "\n") + "\n"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        addTeardownBlock { unlink(path) }
        return name
    }

    func keyringPamtester(_ service: String, _ user: String, input: String = "", operations: String = "authenticate") throws -> Outcome {
        try runProgram(
            "/bin/sh", ["-c", "printf '%s\\n' '\(input)' | /usr/bin/pamtester -v \(service) \(user) \(operations)"],
            environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address], timeout: 90)
    }

    /// A pam_exec line that writes the PAM_AUTHTOK it is given to `file` (pam_exec sends it with a trailing NUL).
    func keyringCapture(_ file: String) throws -> String {
        let script = rig.directory + "/capture-authtok"
        if !FileManager.default.fileExists(atPath: script) {
            try "#!/bin/sh\ncat > \"$1\"\n".write(toFile: script, atomically: true, encoding: .utf8)
            chmod(script, 0o755)
        }
        return "auth optional pam_exec.so expose_authtok quiet \(script) \(file)"
    }

    /// A fingerprint login's stack (the finger, else nothing) whose keyring
    /// line's authtok is captured to `file`.
    func fingerKeyringStack(capturingTo file: String) throws -> String {
        try keyringPamService([
            "auth [success=1 default=ignore] MODULE timeout=20", "auth requisite pam_deny.so",
            "auth optional MODULE keyring-authtok", try keyringCapture(file),
        ])
    }

    func keyringCaptured(_ file: String) -> String {
        readText(file).replacingOccurrences(of: "\0", with: "")
    }

    static func gvariantBytes(_ bytes: [UInt8]) -> String {
        "[byte " + bytes.map { String(format: "0x%02x", $0) }.joined(separator: ", ") + "]"
    }

    /// The `ay` gdbus printed, in either of GLib's forms (GdbusText).
    static func bytes(inGdbusOutput text: String) throws -> [UInt8] {
        try GdbusText.bytes(in: text)
    }

    static func keyringHex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// The test account turns its login secret on (as `localauthctl keyring
    /// enable` does: Argon2id of its password here, the service never sees
    /// it); returns K, opened from the password wrap the service answered.
    func enableAsOwner(uid: UInt32) throws -> [UInt8] {
        try rig.polkit("org.example.LocalAuth.keyring", "yes")
        let salt = try SecureRandom.bytes(16)
        let key = try LoginPasswordDerivation.privateKey(password: Array(TestAccount.password.utf8), salt: salt, parameters: .standard)
        let options = "{'password-key': <@ay \(Self.gvariantBytes(key.publicKey.x963Representation))>, 'salt': <@ay \(Self.gvariantBytes(salt))>}"
        let outcome = try runAs(
            uid, "/usr/bin/gdbus",
            [
                "call", "--system", "--dest", "org.example.LocalAuth", "--object-path",
                "/org/example/LocalAuth", "--method", "org.example.LocalAuth.EnableLoginSecret", options,
            ])
        guard outcome.status == 0 else { throw RigError("EnableLoginSecret: \(outcome.output)") }
        return try ECIES.decrypt(try Self.bytes(inGdbusOutput: outcome.stdout), with: key)
    }

    func enrollOwnersFinger() async throws {
        try rig.polkit("org.example.LocalAuth.enroll", "yes")
        let feeder = present("laowner-finger", times: 5)
        let enrolled = try gdbus("EnrollWithOptions", ["right-index-finger", "{'user': <'\(TestAccount.name)'>}"])
        try await feeder.value
        XCTAssertEqual(enrolled.status, 0, enrolled.output)
    }

}
