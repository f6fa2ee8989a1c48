import Foundation
import Glibc
import LocalAuthCrypto
import RigSupport
import XCTest

/// Argon2id cannot be held hostage (issue 37, item 2; docs/KEYRING.md,
/// "Where Argon2id runs"): the real module in pamtester, pam_unix with real
/// passwords, passwd as a setuid program runs (the invoker's real uid, so
/// the invoker may stop it), the module's syslog read through a socket bound
/// over /dev/log (LoginKeyringHostSupport.swift).
final class LoginKeyringHostageTests: RigTestCase, @unchecked Sendable {
    private var syslog: RigSyslog!
    private var stopped: [Child] = []
    private var hostages: [pid_t] = []

    override func setUpWithError() throws {
        try super.setUpWithError()
        syslog = try RigSyslog(directory: rig.directory)
    }

    override func tearDown() {
        endHostages()
        super.tearDown()
    }

    /// SIGKILL to the stopped pamtesters (they would keep their locks) and their shells.
    private func endHostages() {
        for pid in hostages { kill(pid, SIGKILL) }
        hostages = []
        for child in stopped {
            child.signal(SIGKILL)
            child.wait(timeout: 5)
        }
        stopped = []
    }

    override func tearDownWithError() throws {
        if testRun?.hasSucceeded == false { print("syslog of the PAM hosts:\n\(syslog?.text ?? "")") }
        syslog?.stop()
        _ = try? TestAccount.ensure()
        _ = try? RigAccount.other.ensure()
        _ = try? RigAccount.third.ensure()
        try super.tearDownWithError()
    }

    /// Starts `line` (a passwd) as a PAM host and stops it (SIGSTOP) while it
    /// holds the module's Argon2id lock: the pid of the stopped pamtester.
    private func stopWhileDeriving(_ line: String, realUID uid: UInt32) throws -> pid_t {
        let output = rig.directory + "/stopped-passwd-\(UInt32.random(in: 0...UInt32.max))"
        let child = try Child("/usr/bin/unshare", pamHost(line, syslog: syslog), stdoutPath: output, stderrPath: output)
        stopped.append(child)
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            guard child.isRunning else { throw RigError("passwd ended before it was stopped: \(readText(output))") }
            guard let pid = Self.pamtesterHoldingAFlock(realUID: uid) else {
                usleep(1000)
                continue
            }
            kill(pid, SIGSTOP)
            try waitUntil("pamtester \(pid) stops") { Self.processState(pid) == "T" }
            if Self.pamtesterHoldingAFlock(realUID: uid) == pid {
                hostages.append(pid)
                return pid
            }
            kill(pid, SIGCONT)  // stopped just after it let go: again
        }
        throw RigError("passwd never held the Argon2id lock: \(readText(output))")
    }

    private func run(_ line: String) throws -> Outcome {
        try runProgram("/usr/bin/unshare", pamHost(line, syslog: syslog), timeout: 90)
    }

    /// laowner and laother each stop their passwd while it derives: two
    /// stopped holders, as many as may run at once. lathird's password login
    /// opens his keyring and his passwd re-wraps, each at once (before: both
    /// waited 10 s on the one machine-wide lock, the login left the keyring
    /// locked, and passwd skipped its re-wrap without a word; stopped holders
    /// that counted would do the same). laowner's own login does not wait
    /// for her stopped process either, and says why; her second passwd
    /// cannot re-wrap: it says so and marks the wrap stale, and her next
    /// password login and her finger repair it.
    func testStoppedPasswdsMakeNoOtherAccountWaitOrSkipAndTheirOwnerIsTold() async throws {
        let alice = try TestAccount.ensure()
        let bob = try RigAccount.other.ensure()
        let carol = try RigAccount.third.ensure()
        let aliceSecret = Self.keyringHex(try enableLoginSecret(uid: alice, password: TestAccount.password))
        _ = try enableLoginSecret(uid: bob, password: RigAccount.other.password)
        let carolSecret = Self.keyringHex(try enableLoginSecret(uid: carol, password: RigAccount.third.password))
        let passwd = try keyringPamService(["password requisite pam_unix.so", "password optional MODULE keyring"])
        let (aliceFirst, aliceSecond) = ("Alice-New-1", "Alice-New-3")
        let hostage = try stopWhileDeriving(
            passwdLine(passwd, uid: alice, user: TestAccount.name, old: TestAccount.password, new: aliceFirst), realUID: alice)
        _ = try stopWhileDeriving(
            passwdLine(passwd, uid: bob, user: RigAccount.other.name, old: RigAccount.other.password, new: "Bob-New-1"), realUID: bob)

        let carolName = RigAccount.third.name
        let login = try timedPasswordLogin(carolName, RigAccount.third.password, syslog: syslog)
        XCTAssertEqual(login.authtok, carolSecret, "lathird's keyring opens\n\(login.output)\n\(syslog.text)")
        XCTAssertLessThan(login.seconds, 5, "lathird's login waited for the stopped passwds")

        let carolNew = "Carol-New-2"
        let start = Date()
        let changed = try run(passwdLine(passwd, uid: carol, user: carolName, old: RigAccount.third.password, new: carolNew))
        XCTAssertTrue(changed.output.contains("altered successfully"), changed.output)
        XCTAssertLessThan(Date().timeIntervalSince(start), 5, "lathird's passwd waited")
        XCTAssertTrue(service.log.contains("login secret of uid \(carol): the password wrap follows the new password"), service.log + syslog.text)
        XCTAssertEqual(try timedPasswordLogin(carolName, carolNew, syslog: syslog).authtok, carolSecret, "his new password opens it")

        // Her own login: at once, without her keyring, and the journal says why.
        let own = try timedPasswordLogin(TestAccount.name, aliceFirst, syslog: syslog)
        XCTAssertTrue(own.output.contains("successfully authenticated"), own.output)
        XCTAssertLessThan(own.seconds, 5)
        XCTAssertTrue(syslog.text.contains("a stopped process (pid \(hostage)) holds this account's derivation"), syslog.text)

        // Her second passwd cannot re-wrap while her first holds her lock: logged, and the wrap marked stale.
        let second = try run(passwdLine(passwd, uid: alice, user: TestAccount.name, old: aliceFirst, new: aliceSecond))
        XCTAssertTrue(second.output.contains("altered successfully"), second.output)
        XCTAssertTrue(
            syslog.text.contains("the password wrap of \(TestAccount.name) cannot follow the new password now; marking it stale"), syslog.text)
        XCTAssertTrue(service.log.contains("login secret of uid \(alice): a password change could not re-wrap it"), service.log)
        let status = try runAs(
            alice, "/usr/bin/gdbus",
            [
                "call", "--system", "--dest", "org.example.LocalAuth", "--object-path", "/org/example/LocalAuth", "--method",
                "org.example.LocalAuth.GetLoginSecretStatus",
            ])
        XCTAssertTrue(status.output.contains("'password-wrap-stale': <true>"), status.output)

        // The stopped ones go; her password login offers her password's key, her finger makes its wrap.
        endHostages()
        let offered = try timedPasswordLogin(TestAccount.name, aliceSecond, syslog: syslog)
        XCTAssertTrue(offered.output.contains("still uses your previous password"), offered.output)
        XCTAssertTrue(service.log.contains("login secret of uid \(alice): a password set without the old one waits"), service.log + syslog.text)
        try await enrollOwnersFinger()
        let asKeyring = rig.directory + "/keyring-renewed-\(UInt32.random(in: 0...UInt32.max))"
        present("laowner-finger")
        let finger = try keyringPamtester(try fingerKeyringStack(capturingTo: asKeyring), TestAccount.name)
        XCTAssertEqual(keyringCaptured(asKeyring), aliceSecret, finger.output)
        XCTAssertTrue(finger.output.contains("opens with your new password too"), finger.output)
        XCTAssertEqual(try timedPasswordLogin(TestAccount.name, aliceSecond, syslog: syslog).authtok, aliceSecret)
    }

    /// EnableLoginSecret takes no Argon2id parameters a PAM host would not
    /// run as root for that user's logins: InvalidArgs, nothing made (before:
    /// 10 passes of 256 MiB were accepted, 2.8 s of one core per derivation).
    func testTheBusRefusesArgon2ParametersAboveWhatAPAMHostRuns() throws {
        let uid = try TestAccount.ensure()
        try rig.polkit("org.example.LocalAuth.keyring", "yes")
        let key = try P256.PrivateKey()
        let salt = [UInt8](repeating: 7, count: 16)
        let record = service.stateDirectory + "/login/\(uid)"
        for extra in [
            ", 'argon2-time': <uint32 10>, 'argon2-memory-kib': <uint32 262144>", ", 'argon2-lanes': <uint32 4>",
            ", 'argon2-time': <uint32 5>", ", 'argon2-memory-kib': <uint32 65537>",
        ] {
            let refused = try runAs(uid, "/usr/bin/gdbus", enableCall(key: key, salt: salt, extra: extra))
            XCTAssertTrue(refused.output.contains("Error.InvalidArgs"), "\(extra): \(refused.output)")
            XCTAssertFalse(FileManager.default.fileExists(atPath: record), "\(extra): a login secret was made")
        }
        let dearest = try runAs(uid, "/usr/bin/gdbus", enableCall(key: key, salt: salt, extra: ", 'argon2-time': <uint32 4>"))
        XCTAssertEqual(dearest.status, 0, dearest.output)
    }
}
