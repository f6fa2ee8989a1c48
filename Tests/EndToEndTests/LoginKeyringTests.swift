import Foundation
import Glibc
import LocalAuthCrypto
import LocalAuthKeyring
import RigSupport
import XCTest

/// The login secret on the rig (docs/KEYRING.md): the real service, the real
/// PAM module loaded by pamtester, pam_unix with the test account's real
/// password. pam_exec's `expose_authtok` stands where pam_gnome_keyring
/// stands in a real stack: it reads PAM_AUTHTOK exactly as that line sees
/// it, so the tests see what the keyring daemon would get.
final class LoginKeyringTests: RigTestCase, @unchecked Sendable {
    // MARK: Password logins

    /// The password pam_unix verified opens the password wrap (Argon2id in
    /// the PAM host); the keyring's line gets hex(K), and the line after
    /// keyring-restore gets the typed password back. A wrong password gets
    /// nothing, and the file on disk holds neither K nor the password.
    func testAPasswordLoginHandsTheKeyringItsSecretAndGivesThePasswordBack() throws {
        let uid = try TestAccount.ensure()
        let secret = try enableAsOwner(uid: uid)
        let asKeyring = rig.directory + "/keyring-authtok-\(UInt32.random(in: 0...UInt32.max))"
        let afterwards = asKeyring + "-after"
        let stack = try keyringPamService([
            "auth requisite pam_unix.so",
            "auth optional MODULE keyring-authtok",
            try keyringCapture(asKeyring),
            "auth optional MODULE keyring-restore",
            try keyringCapture(afterwards),
        ])
        let right = try keyringPamtester(stack, TestAccount.name, input: TestAccount.password)
        XCTAssertTrue(right.output.contains("successfully authenticated"), right.output)
        XCTAssertEqual(keyringCaptured(asKeyring), Self.keyringHex(secret), "pam_gnome_keyring's line sees hex(K)")
        XCTAssertEqual(keyringCaptured(afterwards), TestAccount.password, "every later module sees the typed password")

        unlink(asKeyring)
        let wrong = try keyringPamtester(stack, TestAccount.name, input: "wrong-password")
        XCTAssertTrue(wrong.output.contains("Authentication failure"), wrong.output)
        XCTAssertFalse(FileManager.default.fileExists(atPath: asKeyring), "nothing ran after a refused password")

        // A stack that succeeded without pam_unix (pam_permit) has no verified password: nothing.
        let permitted = try keyringPamService(["auth required pam_permit.so", "auth optional MODULE keyring-authtok", try keyringCapture(asKeyring)])
        _ = try keyringPamtester(permitted, TestAccount.name, input: TestAccount.password)
        XCTAssertNotEqual(keyringCaptured(asKeyring), Self.keyringHex(secret), "a typed password pam_unix never checked opens nothing")

        let file = try XCTUnwrap(FileManager.default.contents(atPath: service.stateDirectory + "/login/\(uid)"))
        XCTAssertNil(file.range(of: Data(secret)), "K is not on disk")
        XCTAssertNil(file.range(of: Data(TestAccount.password.utf8)), "nor the password")
    }

    // MARK: Fingerprint logins

    /// After a match the module's own VerifyUser saw, the service releases K
    /// to that PAM host (ECIES to its ephemeral key) and the keyring's line
    /// gets it; a stack without a match in this transaction gets nothing,
    /// and so does any other caller on the bus.
    func testAFingerprintLoginReleasesTheSecretOnlyForItsOwnMatch() async throws {
        let uid = try TestAccount.ensure()
        let secret = try enableAsOwner(uid: uid)
        try await enrollOwnersFinger()
        let asKeyring = rig.directory + "/keyring-finger-\(UInt32.random(in: 0...UInt32.max))"
        let stack = try keyringPamService([
            "auth [success=1 default=ignore] MODULE timeout=20",
            "auth requisite pam_deny.so",
            "auth optional MODULE keyring-authtok",
            try keyringCapture(asKeyring),
            "auth optional MODULE keyring-restore",
        ])
        present("laowner-finger")
        let matched = try keyringPamtester(stack, TestAccount.name)
        XCTAssertTrue(matched.output.contains("successfully authenticated"), matched.output)
        XCTAssertEqual(keyringCaptured(asKeyring), Self.keyringHex(secret), "the finger opened the keyring\n\(service.log)")
        XCTAssertTrue(service.log.contains("released to pid"), service.log)

        // No match in this transaction: pam_permit instead of the finger.
        unlink(asKeyring)
        let noMatch = try keyringPamService(["auth required pam_permit.so", "auth optional MODULE keyring-authtok", try keyringCapture(asKeyring)])
        _ = try keyringPamtester(noMatch, TestAccount.name)
        XCTAssertNotEqual(keyringCaptured(asKeyring), Self.keyringHex(secret))

        // A wrong finger: no match, no secret, and it counts toward the lockout.
        unlink(asKeyring)
        present("someone-else", times: 3)
        let wrongFinger = try keyringPamtester(stack, TestAccount.name)
        XCTAssertTrue(wrongFinger.output.contains("Authentication failure"), wrongFinger.output)
        XCTAssertNotEqual(keyringCaptured(asKeyring), Self.keyringHex(secret))
        XCTAssertEqual(readText(service.stateDirectory + "/lockout/\(uid)").trimmingCharacters(in: .whitespacesAndNewlines), "3")

        // Straight on the bus: root without a match, and another uid.
        let ephemeral = Self.gvariantBytes(try P256.PrivateKey().publicKey.x963Representation)
        let call = ["ReleaseLoginSecret", TestAccount.name, "@ay []", "@ay \(ephemeral)", "@a{sv} {}"]
        let asRoot = try gdbus(call[0], Array(call.dropFirst()))
        XCTAssertTrue(asRoot.output.contains("NotAuthorized"), asRoot.output)
        let asNobody = try gdbus(call[0], Array(call.dropFirst()), asNobody: true)
        XCTAssertTrue(asNobody.output.contains("PermissionDenied"), asNobody.output)
        let asOwner = try runAs(
            uid, "/usr/bin/gdbus",
            [
                "call", "--system", "--dest", "org.example.LocalAuth", "--object-path",
                "/org/example/LocalAuth", "--method", "org.example.LocalAuth.ReleaseLoginSecret",
            ]
                + Array(call.dropFirst()))
        XCTAssertTrue(asOwner.output.contains("PermissionDenied"), asOwner.output)
    }

    // MARK: passwd

    /// passwd with the old password: the wrap follows the new one at once
    /// (the old one's proof); the line after ours (pam_gnome_keyring's) still
    /// runs with the login passwords, never K, so it cannot rekey the keyring; the
    /// old password opens nothing; both login kinds still work.
    func testPasswdRewrapsUnderTheNewPasswordAndBothLoginsStillWork() async throws {
        let uid = try TestAccount.ensure()
        defer { _ = try? TestAccount.ensure() }  // the next tests expect the usual password
        let secret = try enableAsOwner(uid: uid)
        let newPassword = "Battery-Staple-7"
        let keyringLine = rig.directory + "/passwd-keyring-line-\(UInt32.random(in: 0...UInt32.max))"
        _ = try keyringCapture(keyringLine)  // writes the script
        let passwd = try keyringPamService([
            "auth required pam_permit.so",
            "password requisite pam_unix.so",
            "password optional MODULE keyring",
            "password optional pam_exec.so seteuid \(rig.directory)/capture-authtok \(keyringLine)",
        ])
        // As passwd runs: the user's real uid, effective uid 0 (setuid); pam_unix then asks the
        // old password (it does not of a real root) and sets PAM_OLDAUTHTOK. libdbus ignores
        // DBUS_SYSTEM_BUS_ADDRESS in such a process, so the rig's bus socket is bound over the
        // system bus's path in a private mount namespace, as for polkit's helper (Owner.swift).
        let socket = String(rig.address.dropFirst("unix:path=".count))
        let script = """
            mkdir -p /run/dbus && mount -t tmpfs tmpfs /run/dbus && touch /run/dbus/system_bus_socket \
            && mount --bind '\(socket)' /run/dbus/system_bus_socket \
            && printf '%s\\n%s\\n%s\\n' '\(TestAccount.password)' '\(newPassword)' '\(newPassword)' \
            | setpriv --ruid=\(uid) /usr/bin/pamtester -v \(passwd) \(TestAccount.name) chauthtok
            """
        let changed = try runProgram("/usr/bin/unshare", ["--mount", "--propagation", "private", "/bin/sh", "-c", script], timeout: 90)
        XCTAssertTrue(changed.output.contains("altered successfully"), changed.output + service.log)
        // pam_exec cannot show a password line its tokens (expose_authtok is auth only); our line
        // leaves them untouched and jumps over nothing: pam_gnome_keyring's line runs, with the login passwords.
        XCTAssertTrue(FileManager.default.fileExists(atPath: keyringLine), "pam_gnome_keyring's line ran")
        XCTAssertTrue(service.log.contains("follows the new password"), service.log)

        let asKeyring = rig.directory + "/keyring-after-passwd-\(UInt32.random(in: 0...UInt32.max))"
        let login = try keyringPamService(["auth requisite pam_unix.so", "auth optional MODULE keyring-authtok", try keyringCapture(asKeyring)])
        _ = try keyringPamtester(login, TestAccount.name, input: newPassword)
        XCTAssertEqual(keyringCaptured(asKeyring), Self.keyringHex(secret), "the new password opens the same keyring")
        unlink(asKeyring)
        _ = try keyringPamtester(login, TestAccount.name, input: TestAccount.password)
        XCTAssertNotEqual(keyringCaptured(asKeyring), Self.keyringHex(secret), "the old password is no longer the account's, nor the wrap's")

        // A fingerprint login still works.
        try await enrollOwnersFinger()
        unlink(asKeyring)
        let finger = try fingerKeyringStack(capturingTo: asKeyring)
        present("laowner-finger")
        _ = try keyringPamtester(finger, TestAccount.name)
        XCTAssertEqual(keyringCaptured(asKeyring), Self.keyringHex(secret), "the finger opens the same keyring")
    }

    /// root's `passwd laowner` (no old password): the new password's key waits;
    /// a password login says so and opens nothing; the owner's next finger
    /// makes the wrap for the new password, which then opens the keyring.
    func testAResetByRootWaitsForTheOwnersFinger() async throws {
        let uid = try TestAccount.ensure()
        defer { _ = try? TestAccount.ensure() }
        let secret = try enableAsOwner(uid: uid)
        let newPassword = "Reset-By-Root-3"
        let passwd = try keyringPamService(["password requisite pam_unix.so", "password optional MODULE keyring"])
        let reset = try runProgram(
            "/bin/sh", ["-c", "printf '%s\\n%s\\n' '\(newPassword)' '\(newPassword)' | /usr/bin/pamtester -v \(passwd) \(TestAccount.name) chauthtok"],
            environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address], timeout: 90)
        XCTAssertTrue(reset.output.contains("altered successfully"), reset.output)
        XCTAssertTrue(reset.output.contains("after your next fingerprint login"), reset.output)
        XCTAssertTrue(service.log.contains("waits for the owner's finger"), service.log)

        let asKeyring = rig.directory + "/keyring-reset-\(UInt32.random(in: 0...UInt32.max))"
        let login = try keyringPamService(["auth requisite pam_unix.so", "auth optional MODULE keyring-authtok", try keyringCapture(asKeyring)])
        let before = try keyringPamtester(login, TestAccount.name, input: newPassword)
        XCTAssertTrue(before.output.contains("successfully authenticated"), before.output)
        XCTAssertTrue(before.output.contains("still uses your previous password"), before.output)
        XCTAssertNotEqual(keyringCaptured(asKeyring), Self.keyringHex(secret), "root's new password does not open the keyring")

        try await enrollOwnersFinger()
        unlink(asKeyring)
        let finger = try fingerKeyringStack(capturingTo: asKeyring)
        present("laowner-finger")
        let touched = try keyringPamtester(finger, TestAccount.name)
        XCTAssertEqual(keyringCaptured(asKeyring), Self.keyringHex(secret))
        XCTAssertTrue(touched.output.contains("opens with your new password too"), touched.output)

        unlink(asKeyring)
        _ = try keyringPamtester(login, TestAccount.name, input: newPassword)
        XCTAssertEqual(keyringCaptured(asKeyring), Self.keyringHex(secret), "after the owner's finger, the new password opens it")
    }

    // MARK: The real gnome-keyring

    /// Runs `script` as the test account in a session bus of its own
    /// (dbus-run-session), with gnome-keyring's files in its home; the
    /// daemon ends with the session, the keyring file stays.
    ///
    /// `unlock PASSWORD` in the script starts gnome-keyring-daemon with the
    /// login keyring unlocked and waits until it serves org.freedesktop.secrets:
    /// `--unlock` returns before the daemon owns that name (14 of 30 times
    /// here), and a client that came first had the bus activate a second
    /// daemon, which handed over to the first and wrote dbus-daemon's
    /// activation lines into the output the test compared (3 of 80 runs of
    /// this test on c686a26). `served` then writes to stderr whether the
    /// name is owned, for the test to check.
    private func inOwnersSession(uid: UInt32, _ script: String) throws -> Outcome {
        let runtime = rig.directory + "/runtime-\(uid)"
        try? FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true)
        chown(runtime, uid, uid)
        chmod(runtime, 0o700)
        chmod(rig.directory, 0o755)
        let tool = rig.directory + "/localauthctl"
        if !FileManager.default.fileExists(atPath: tool) {
            try FileManager.default.copyItem(atPath: Paths.localauthctl, toPath: tool)
            chmod(tool, 0o755)
        }
        let environment = "HOME=/home/\(TestAccount.name) XDG_RUNTIME_DIR=\(runtime) LOCALAUTHCTL=\(tool)"
        let unlock = """
            unlock() {
                printf '%s' "$1" | gnome-keyring-daemon --unlock --components=secrets >/dev/null
                unlocked=$?
                gdbus wait --session --timeout 20 org.freedesktop.secrets || return 1
                return $unlocked
            }
            served() {
                gdbus call --session --dest org.freedesktop.DBus --object-path /org/freedesktop/DBus \\
                    --method org.freedesktop.DBus.NameHasOwner org.freedesktop.secrets | sed 's/^/secrets served: /' >&2
            }

            """
        return try runAs(
            uid, "/usr/bin/env",
            [environment.split(separator: " ").map(String.init), ["dbus-run-session", "--", "/bin/sh", "-c", unlock + script]].flatMap { $0 },
            timeout: 120)
    }

    /// What the test below relies on: once `unlock` returned, the daemon it
    /// unlocked serves the session, so no client's call makes the bus start
    /// a second one. Without the wait in `unlock` (c686a26's scripts) the
    /// name was still unowned in some sessions.
    func testUnlockLeavesTheUnlockedDaemonServingTheSession() throws {
        let uid = try TestAccount.ensure()
        _ = try runProgram("/bin/rm", ["-rf", "/home/\(TestAccount.name)/.local/share/keyrings"])
        for _ in 0..<20 {
            let session = try inOwnersSession(uid: uid, "unlock '\(TestAccount.password)' || exit 11; served")
            XCTAssertEqual(session.status, 0, session.output)
            XCTAssertTrue(session.stderr.contains("secrets served: (true,)"), session.stderr)
        }
    }

    /// localauthctl keyring enable changes the real login keyring's password
    /// (gnome-keyring's interface) to the login secret: an item stored
    /// before comes back with no prompt when the daemon is unlocked with what
    /// a password login's keyring line gets, and no longer with the login
    /// password; disable gives the keyring its password back.
    func testEnableRekeysTheRealLoginKeyringAndDisableGivesItBack() throws {
        let uid = try TestAccount.ensure()
        try rig.polkit("org.example.LocalAuth.keyring", "yes")
        let password = TestAccount.password
        _ = try runProgram("/bin/rm", ["-rf", "/home/\(TestAccount.name)/.local/share/keyrings"])
        // Everything the system bus and the user's session bus carry, raw, for the end of the test.
        let systemBus = rig.directory + "/system-bus-\(UInt32.random(in: 0...UInt32.max)).bin"
        let monitor = try Child("/usr/bin/dbus-monitor", ["--address", rig.address, "--binary"], stdoutPath: systemBus, stderrPath: "/dev/null")
        defer {
            monitor.signal(SIGTERM)
            monitor.wait(timeout: 5)
        }
        try waitUntil("the system bus monitor runs") { (try? FileManager.default.attributesOfItem(atPath: systemBus)[.size] as? Int ?? 0) ?? 0 > 0 }
        let sessionBus = rig.directory + "/runtime-\(uid)/session-bus.bin"
        let enabled = try inOwnersSession(
            uid: uid,
            """
            dbus-monitor --session --binary > '\(sessionBus)' 2>/dev/null &
            while [ ! -s '\(sessionBus)' ]; do sleep 0.05; done
            unlock '\(password)' || exit 11
            served
            printf 'stored-before' | secret-tool store --label=kr-test kr-test item || exit 12
            printf '%s\\n' '\(password)' | "$LOCALAUTHCTL" keyring enable || exit 13
            "$LOCALAUTHCTL" keyring status
            """)
        XCTAssertEqual(enabled.status, 0, enabled.output + service.log)
        XCTAssertTrue(enabled.output.contains("opened by your fingerprint or your login password"), enabled.output)

        // What a password login hands pam_gnome_keyring.
        let asKeyring = rig.directory + "/keyring-real-\(UInt32.random(in: 0...UInt32.max))"
        let login = try keyringPamService(["auth requisite pam_unix.so", "auth optional MODULE keyring-authtok", try keyringCapture(asKeyring)])
        _ = try keyringPamtester(login, TestAccount.name, input: password)
        let handed = keyringCaptured(asKeyring)
        XCTAssertEqual(handed.count, 64, "hex(K)")

        let lookup = "timeout 20 secret-tool lookup kr-test item"
        let withSecret = try inOwnersSession(uid: uid, "unlock '\(handed)'; served; \(lookup)")
        XCTAssertEqual(withSecret.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "stored-before", withSecret.output)
        let withPassword = try inOwnersSession(uid: uid, "unlock '\(password)'; served; \(lookup)")
        XCTAssertFalse(withPassword.output.contains("stored-before"), "the login password no longer opens it: \(withPassword.output)")

        let disabled = try inOwnersSession(
            uid: uid,
            """
            unlock '\(handed)' || exit 11
            served
            printf '%s\\n' '\(password)' | "$LOCALAUTHCTL" keyring disable || exit 13
            """)
        XCTAssertEqual(disabled.status, 0, disabled.output + service.log)
        let back = try inOwnersSession(uid: uid, "unlock '\(password)'; served; \(lookup)")
        XCTAssertEqual(back.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "stored-before", back.output)
        // The daemon each session unlocked served it before any client came.
        for session in [enabled, withSecret, withPassword, disabled, back] {
            XCTAssertTrue(session.stderr.contains("secrets served: (true,)"), session.stderr)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: service.stateDirectory + "/login/\(uid)"), "the login secret is gone")

        // Neither bus ever carried K (raw or as the keyring's password) or the login password.
        monitor.signal(SIGTERM)
        monitor.wait(timeout: 5)
        // K from hex(K); when the login went wrong (an odd length, no hex: the
        // assertion above failed already) this must not trap, or the whole
        // test process ends and every later test with it (c686a26 did, once).
        let digits = Array(handed.utf8)
        let secretBytes = Data(
            stride(from: 0, to: digits.count - 1, by: 2).compactMap { UInt8(String(decoding: digits[$0...$0 + 1], as: UTF8.self), radix: 16) })
        for (name, file) in [("system bus", systemBus), ("session bus", sessionBus)] {
            let carried = try XCTUnwrap(FileManager.default.contents(atPath: file), name)
            XCTAssertGreaterThan(carried.count, 1000, "\(name): the monitor saw the traffic")
            XCTAssertNil(carried.range(of: secretBytes), "\(name) carried K")
            XCTAssertNil(carried.range(of: Data(handed.utf8)), "\(name) carried hex(K)")
            XCTAssertNil(carried.range(of: Data(password.utf8)), "\(name) carried the login password")
        }
    }

    // MARK: The --fprintd variant

    /// gdm-fingerprint's pam_fprintd, with localauthd serving fprintd's
    /// interface: the service saw the match in its own VerifyStart, so the
    /// keyring line of that same process gets K (a nonce-less ticket for
    /// the process); a stack without the match gets nothing.
    func testWithFprintdAPamFprintdMatchReleasesTheSecretToItsProcess() async throws {
        let uid = try TestAccount.ensure()
        service.stop()
        service = try ServiceProcess(bus: rig, arguments: ["--fprintd"])
        let secret = Self.keyringHex(try enableAsOwner(uid: uid))
        try await enrollOwnersFinger()
        let asKeyring = rig.directory + "/keyring-fprintd-\(UInt32.random(in: 0...UInt32.max))"
        let stack = try keyringPamService([
            "auth [success=1 default=ignore] pam_fprintd.so max-tries=1 timeout=20",
            "auth requisite pam_deny.so",
            "auth optional MODULE keyring-authtok",
            try keyringCapture(asKeyring),
        ])
        let output = rig.directory + "/pam-fprintd-\(UInt32.random(in: 0...UInt32.max)).out"
        let child = try Child(
            "/usr/bin/stdbuf", ["-o0", "/usr/bin/pamtester", "-v", stack, TestAccount.name, "authenticate"],
            environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address], stdoutPath: output, stderrPath: output)
        try waitUntil("pam_fprintd asks for the finger") { readText(output).contains("fingerprint reader") || !child.isRunning }
        try ServiceProcess.send("SCAN laowner-finger", to: service.sensorSocket)
        _ = child.wait(timeout: 60)
        XCTAssertTrue(readText(output).contains("successfully authenticated"), readText(output))
        XCTAssertEqual(keyringCaptured(asKeyring), secret, "pam_fprintd's match opened the keyring\n\(service.log)")

        unlink(asKeyring)
        let noMatch = try keyringPamService(["auth required pam_permit.so", "auth optional MODULE keyring-authtok", try keyringCapture(asKeyring)])
        _ = try keyringPamtester(noMatch, TestAccount.name)
        XCTAssertNotEqual(keyringCaptured(asKeyring), secret, "no match in this process: nothing")
    }
}
