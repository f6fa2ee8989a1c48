import Foundation
import Glibc
import LocalAuthShared
import LocalAuthentication
import RigSupport
import XCTest

/// pam_localauth on the rig: the real module (built by `make pam`), loaded by
/// the real libpam through pamtester, asking the real service over the rig's
/// bus. Each test writes its own PAM service file in /etc/pam.d and removes it.
final class PamTests: RigTestCase, @unchecked Sendable {
    private var serviceFiles: [String] = []

    override func tearDown() {
        for file in serviceFiles { unlink(file) }
        serviceFiles = []
        super.tearDown()
    }

    /// The module, built once by `make pam` (as `make test` does).
    private static let module: String = {
        let path = Paths.root + "/.build/pam/pam_localauth.so"
        if !FileManager.default.fileExists(atPath: path) {
            _ = try? runProgram("/usr/bin/make", ["-C", Paths.root, "pam"])
        }
        return path
    }()

    /// A PAM service named for this test, with `lines` as its auth stack
    /// (MODULE stands for the module's path).
    private func pamService(_ lines: [String]) throws -> String {
        XCTAssertTrue(FileManager.default.fileExists(atPath: Self.module), "make pam did not build the module")
        let name = "localauth-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let path = "/etc/pam.d/" + name
        let text = lines.map { $0.replacingOccurrences(of: "MODULE", with: Self.module) }.joined(separator: "\n") + "\n"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        serviceFiles.append(path)
        return name
    }

    /// pamtester SERVICE USER authenticate (or `operations`), on the rig's
    /// bus, `input` on stdin. `user` is a word of the shell command line.
    private func pamtester(_ service: String, _ user: String, input: String = "", rhost: String? = nil,
                           operations: String = "authenticate", timeout: Double = 60) throws -> Outcome {
        var command = "printf '%s\\n' '\(input)' | /usr/bin/pamtester -v"
        if let rhost { command += " -I rhost=\(rhost)" }
        command += " \(service) \(user) \(operations)"
        return try runProgram("/bin/sh", ["-c", command], environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address],
                              timeout: timeout)
    }

    private let succeeded = "successfully authenticated"
    private let authError = "Authentication failure"
    private let unavailable = "Authentication service cannot retrieve authentication info"

    func testAMatchingFingerAuthenticatesAndTheConversationShowsTheReader() async throws {
        try await enroll(as: "owner-finger")
        let service = try pamService(["auth required MODULE timeout=20"])
        present("owner-finger")
        let outcome = try pamtester(service, "root")
        XCTAssertTrue(outcome.output.contains(succeeded), outcome.output)
        XCTAssertTrue(outcome.output.contains("Place your finger on the fingerprint reader"), outcome.output)
        XCTAssertTrue(self.service.log.contains("verified for a PAM module"), self.service.log)
    }

    func testAFingerThatNeverMatchesIsAnAuthenticationError() async throws {
        try await enroll(as: "owner-finger")
        let service = try pamService(["auth required MODULE timeout=20"])
        present("someone-else", times: 3)
        let outcome = try pamtester(service, "root")
        XCTAssertTrue(outcome.output.contains(authError), outcome.output)
        XCTAssertTrue(outcome.output.contains("Not recognized, try again"), outcome.output)
    }

    /// Each verify is one entry of the history of approvals (docs/HISTORY.md),
    /// with the PAM service the module says it runs in and the program
    /// that loaded it.
    func testEachVerifyIsAnEntryOfTheHistoryWithItsPAMService() async throws {
        try await enroll(as: "owner-finger")
        let service = try pamService(["auth required MODULE timeout=20"])
        present("owner-finger")
        let granted = try pamtester(service, "root")
        XCTAssertTrue(granted.output.contains(succeeded), granted.output)
        present("someone-else", times: 3)
        let refused = try pamtester(service, "root")
        XCTAssertTrue(refused.output.contains(authError), refused.output)
        let entries = try waitForHistory(count: 2)
        XCTAssertEqual(entries.map { $0[LocalAuthHistory.Field.outcome] ?? "" }, ["granted", "refused"], self.service.log)
        for (entry, outcome) in zip(entries, [LocalAuthHistory.Outcome.granted, .refused]) {
            XCTAssertEqual(entry["MESSAGE_ID"], outcome.messageID)
            XCTAssertEqual(entry[LocalAuthHistory.Field.context], "pam")
            XCTAssertEqual(entry[LocalAuthHistory.Field.pamService], service)
            XCTAssertEqual(entry[LocalAuthHistory.Field.method], "VerifyUser")
            XCTAssertEqual(entry[LocalAuthHistory.Field.program], "/usr/bin/pamtester")
            XCTAssertEqual(entry[LocalAuthHistory.Field.userUID], "0")
            XCTAssertEqual(entry[LocalAuthHistory.Field.callerUID], "0")
            XCTAssertTrue(entry[LocalAuthHistory.Field.reader]?.hasPrefix("virtual_device/") == true, "\(entry)")
        }
    }

    /// No print, a remote login, no service: PAM_AUTHINFO_UNAVAIL at once, so
    /// that a stack goes on to the password.
    func testWhenTheFingerCannotBeUsedTheStackMovesOnAtOnce() async throws {
        let service = try pamService(["auth required MODULE timeout=20"])
        let started = Date()
        let noPrint = try pamtester(service, "root")
        XCTAssertTrue(noPrint.output.contains(unavailable), noPrint.output)

        try await enroll(as: "owner-finger")
        let remote = try pamtester(service, "root", rhost: "remote.example.org")
        XCTAssertTrue(remote.output.contains(unavailable), remote.output)
        XCTAssertFalse(self.service.log.contains("waits for the reader"))
        XCTAssertLessThan(Date().timeIntervalSince(started), 15, "none of these waited for a finger")

        // The stack's next module decides: here pam_permit, as a password would.
        let fallback = try pamService(["auth [success=done authinfo_unavail=ignore default=die] MODULE",
                                       "auth required pam_permit.so"])
        let remoteThenPermit = try pamtester(fallback, "root", rhost: "remote.example.org")
        XCTAssertTrue(remoteThenPermit.output.contains(succeeded), remoteThenPermit.output)

        self.service.stop()
        let noService = try pamtester(service, "root")
        XCTAssertTrue(noService.output.contains(unavailable), noService.output)
    }

    /// The time-out ends the wait for a finger (the service's evaluation is
    /// cancelled, so the reader is free for the next one at once).
    func testTheTimeOutCancelsTheScanAndFreesTheReader() async throws {
        try await enroll(as: "owner-finger")
        let quick = try pamService(["auth required MODULE timeout=2"])
        let started = Date()
        let timedOut = try pamtester(quick, "root")
        XCTAssertTrue(timedOut.output.contains(unavailable), timedOut.output)
        XCTAssertTrue(timedOut.output.contains("use your password"), timedOut.output)
        XCTAssertLessThan(Date().timeIntervalSince(started), 10)
        present("owner-finger")
        let next = try pamtester(quick, "root")
        XCTAssertTrue(next.output.contains(succeeded), "the reader was freed: \(next.output)\n\(service.log)")
    }

    /// reset-lockout after a password lifts the user's lockout; without a
    /// password in the transaction it does nothing.
    func testAPasswordLaterInTheStackLiftsTheLockoutAndNothingElseDoes() async throws {
        let uid = try TestAccount.ensure()
        try rig.polkit("org.example.LocalAuth.enroll", "yes")
        // Root enrolls the test account's finger (manage: root is always authorized).
        let feeder = present("laowner-finger", times: 5)
        let enrolled = try gdbus("EnrollWithOptions", ["right-index-finger", "{'user': <'\(TestAccount.name)'>}"])
        try await feeder.value
        XCTAssertEqual(enrolled.status, 0, enrolled.output)

        // Five failed matches through the module lock the account's biometrics.
        let finger = try pamService(["auth required MODULE timeout=20"])
        present("someone-else", times: 3)
        XCTAssertTrue(try pamtester(finger, TestAccount.name).output.contains(authError))
        present("someone-else", times: 2)
        _ = try pamtester(finger, TestAccount.name)
        let lockoutFile = service.stateDirectory + "/lockout/\(uid)"
        XCTAssertEqual(readText(lockoutFile).trimmingCharacters(in: .whitespacesAndNewlines), "5")
        let locked = try pamtester(finger, TestAccount.name)
        XCTAssertTrue(locked.output.contains(unavailable), "locked out: the password's turn \(locked.output)")

        // No password in this transaction: the lockout stays.
        let noPassword = try pamService(["auth required pam_permit.so", "auth optional MODULE reset-lockout"])
        XCTAssertTrue(try pamtester(noPassword, TestAccount.name).output.contains(succeeded))
        XCTAssertEqual(readText(lockoutFile).trimmingCharacters(in: .whitespacesAndNewlines), "5")

        // A wrong password fails the stack before the module runs: still locked.
        let password = try pamService(["auth requisite pam_unix.so", "auth optional MODULE reset-lockout"])
        XCTAssertTrue(try pamtester(password, TestAccount.name, input: "wrong-password").output.contains(authError))
        XCTAssertEqual(readText(lockoutFile).trimmingCharacters(in: .whitespacesAndNewlines), "5")

        // The right password: lifted (when the application establishes credentials, as sudo and login do).
        let right = try pamtester(password, TestAccount.name, input: TestAccount.password, operations: "authenticate setcred")
        XCTAssertTrue(right.output.contains(succeeded), right.output)
        try waitUntil("the lockout is lifted") {
            readText(lockoutFile).trimmingCharacters(in: .whitespacesAndNewlines) == "0" || !FileManager.default.fileExists(atPath: lockoutFile)
        }
    }

    /// The service restarted on the same state with PAM_USER locked out (5
    /// failed matches on disk), so that each layout starts locked.
    private func lockedOutService(uid: UInt32) throws -> String {
        let state = service.stateDirectory
        service.stop()
        try FileManager.default.createDirectory(atPath: state + "/lockout", withIntermediateDirectories: true)
        try "5\n".write(toFile: state + "/lockout/\(uid)", atomically: true, encoding: .utf8)
        service = try ServiceProcess(bus: rig, stateDirectory: state)
        return state + "/lockout/\(uid)"
    }

    private func lockoutCount(_ path: String) -> String {
        FileManager.default.fileExists(atPath: path) ? readText(path).trimmingCharacters(in: .whitespacesAndNewlines) : "0"
    }

    /// Issue 20 item 10: a typed password that the stack refused never lifts
    /// the lockout, and one it accepted does, in the layouts pam-auth-update
    /// and the distributions write: Debian's `[success=N default=ignore]`,
    /// Fedora/authselect's `sufficient` + `pam_deny`, and `required`.
    func testOnlyAVerifiedPasswordLiftsTheLockoutInEveryLayout() throws {
        let uid = try TestAccount.ensure()
        let layouts: [(String, [String])] = [
            ("debian", ["auth [success=2 default=ignore] MODULE timeout=5",
                        "auth [success=1 default=ignore] pam_unix.so nullok nodelay",
                        "auth requisite pam_deny.so",
                        "auth required pam_permit.so",
                        "auth optional MODULE reset-lockout"]),
            ("sufficient", ["auth required pam_env.so",
                            "auth optional MODULE reset-lockout",
                            "auth sufficient MODULE timeout=5",
                            "auth sufficient pam_unix.so nullok nodelay",
                            "auth required pam_deny.so"]),
            ("required", ["auth required pam_unix.so nodelay",
                          "auth optional MODULE reset-lockout"]),
        ]
        for (layout, lines) in layouts {
            let stack = try pamService(lines)
            let lockoutFile = try lockedOutService(uid: uid)
            XCTAssertEqual(lockoutCount(lockoutFile), "5", layout)
            let wrong = try pamtester(stack, TestAccount.name, input: "wrong-password", operations: "authenticate setcred")
            XCTAssertTrue(wrong.output.contains(authError), "\(layout): \(wrong.output)")
            XCTAssertEqual(lockoutCount(lockoutFile), "5", "\(layout): a wrong password must not lift the lockout")
            let right = try pamtester(stack, TestAccount.name, input: TestAccount.password, operations: "authenticate setcred")
            XCTAssertTrue(right.output.contains(succeeded), "\(layout): \(right.output)")
            try waitUntil("\(layout): the right password lifts the lockout") { self.lockoutCount(lockoutFile) == "0" }
        }
    }

    /// pam-transaction.py SERVICE USER PASSWORD STEP... (as root, or as `uid`), on the rig's bus.
    private func transaction(_ service: String, _ user: String, _ steps: [String], asUID uid: UInt32? = nil) throws -> Outcome {
        let arguments = [try testScript("pam-transaction.py"), service, user, TestAccount.password] + steps
        if let uid { return try runAs(uid, "/usr/bin/python3", arguments) }
        return try runProgram("/usr/bin/python3", arguments, environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address])
    }

    /// The service restarted on the same state with each of `uids` locked out.
    private func lockedOut(_ uids: [UInt32]) throws -> [UInt32: String] {
        let state = service.stateDirectory
        service.stop()
        try FileManager.default.createDirectory(atPath: state + "/lockout", withIntermediateDirectories: true)
        for uid in uids { try "5\n".write(toFile: state + "/lockout/\(uid)", atomically: true, encoding: .utf8) }
        service = try ServiceProcess(bus: rig, stateDirectory: state)
        return Dictionary(uniqueKeysWithValues: uids.map { ($0, state + "/lockout/\($0)") })
    }

    /// Issue 30 item 2: a password proves only its own account. sudo
    /// authenticates the invoking user, then sets PAM_USER to the run-as user
    /// (root, or B for `sudo -u B`) and calls pam_setcred: on 1c36356 that
    /// reset root's lockout with laowner's password, and laowner's stayed.
    func testAPasswordResetsOnlyTheLockoutOfTheAccountItProves() throws {
        let uid = try TestAccount.ensure()
        let files = try lockedOut([0, uid])
        let debian = try pamService(["auth [success=1 default=ignore] pam_unix.so nullok nodelay",
                                     "auth requisite pam_deny.so",
                                     "auth required pam_permit.so",
                                     "auth optional MODULE reset-lockout"])
        let sudo = try transaction(debian, TestAccount.name, ["authenticate", "user=root", "setcred-reinitialize"])
        XCTAssertTrue(sudo.output.contains("authenticate=Success"), sudo.output)
        XCTAssertTrue(sudo.output.contains("setcred-reinitialize=Success"), sudo.output)
        // The module's ResetLockout is answered before pam_setcred returns.
        XCTAssertEqual(lockoutCount(files[0]!), "5", "root's lockout was reset by laowner's password")
        XCTAssertEqual(lockoutCount(files[uid]!), "0", "laowner's own password lifts laowner's lockout")
        XCTAssertTrue(service.log.contains("lockout of uid \(uid) reset"), service.log)
        XCTAssertFalse(service.log.contains("lockout of uid 0 reset"), service.log)
    }

    /// Issue 30 item 7: a screen locker that runs as the user (swaylock and
    /// i3lock call pam_setcred(PAM_REFRESH_CRED)) sends nothing: ResetLockout
    /// needs `manage`, which would pop an administrator's password dialog
    /// right after the unlock. polkit answers yes here, as such a dialog
    /// would: on 1c36356 the user's call reset the lockout through it.
    func testAScreenLockerRunningAsTheUserAsksPolkitNothing() throws {
        let uid = try TestAccount.ensure()
        let files = try lockedOut([uid])
        try rig.polkit("org.example.LocalAuth.manage", "yes")
        defer { try? rig.polkit("org.example.LocalAuth.manage", nil) }
        let locker = try pamService(["auth required pam_unix.so nodelay", "auth optional MODULE reset-lockout debug"])
        let unlock = try transaction(locker, TestAccount.name, ["authenticate", "setcred-refresh"], asUID: uid)
        XCTAssertTrue(unlock.output.contains("authenticate=Success"), unlock.output)
        XCTAssertTrue(unlock.output.contains("setcred-refresh=Success"), unlock.output)
        XCTAssertEqual(lockoutCount(files[uid]!), "5", "the locker, not root, sent ResetLockout")
        XCTAssertFalse(service.log.contains("lockout of uid \(uid) reset"), service.log)
    }

    /// Issue 29: sshd reports a connection through a port forward as
    /// 127.0.0.1 or ::1, which may come from anywhere: a PAM_RHOST of
    /// loopback is remote, like any other, and never waits for a finger.
    /// This machine's own name (sudo's pam_rhost flag) is not.
    func testALoopbackRemoteHostIsRemote() async throws {
        try await enroll(as: "owner-finger")
        let stack = try pamService(["auth required MODULE timeout=20"])
        for host in ["127.0.0.1", "::1", "localhost"] {
            let outcome = try pamtester(stack, "root", rhost: host)
            XCTAssertTrue(outcome.output.contains(unavailable), "\(host): \(outcome.output)")
        }
        XCTAssertFalse(service.log.contains("waits for the reader"), service.log)
        let hostname = ProcessInfo.processInfo.hostName
        present("owner-finger")
        let local = try pamtester(stack, "root", rhost: hostname)
        XCTAssertTrue(local.output.contains(succeeded), "\(hostname): \(local.output)")
    }

    /// Issue 20 item 11: a PAM_USER that is not UTF-8 is an unknown user,
    /// not a libdbus assertion that aborts sudo or login.
    func testAUserNameThatIsNotUTF8IsUnknownAndNothingAborts() throws {
        for lines in [["auth required MODULE timeout=5"], ["auth required pam_permit.so", "auth required MODULE reset-lockout"]] {
            let stack = try pamService(lines)
            let outcome = try pamtester(stack, "\"$(printf 'la\\377\\376user')\"", operations: "authenticate setcred")
            XCTAssertTrue(outcome.output.contains("User not known"), "\(lines): \(outcome.output)")
            XCTAssertFalse(outcome.output.contains("Aborted") || outcome.status > 128, "\(lines): \(outcome.output)")
        }
        XCTAssertTrue(service.isRunning)
    }

    /// Issue 20 item 13: polkit authorizes root before any rule runs, so the
    /// administrator's switch is `localauthd --no-verify-user`: VerifyUser is
    /// refused and the module falls through to the password at once.
    func testNoVerifyUserTurnsThePamFingerprintOff() async throws {
        try await enroll(as: "owner-finger")
        let state = service.stateDirectory
        service.stop()
        service = try ServiceProcess(bus: rig, stateDirectory: state, arguments: ["--no-verify-user"])
        let refused = try gdbus("VerifyUser", ["root", "{}"])
        XCTAssertEqual(errorName(refused), "org.example.LocalAuth.Error.PermissionDenied", refused.output)
        XCTAssertTrue(refused.output.contains("--no-verify-user"), refused.output)
        let stack = try pamService(["auth required MODULE timeout=20"])
        present("owner-finger")
        let outcome = try pamtester(stack, "root")
        XCTAssertTrue(outcome.output.contains(unavailable), outcome.output)
        XCTAssertFalse(outcome.output.contains(succeeded), outcome.output)
    }

    /// VerifyUser is for root: another uid naming root gets PermissionDenied
    /// and learns nothing about root's prints.
    func testOnlyRootMayVerifyAUser() async throws {
        try await enroll(as: "owner-finger")
        let refused = try gdbus("VerifyUser", ["root", "{}"], asNobody: true)
        XCTAssertEqual(errorName(refused), "org.example.LocalAuth.Error.PermissionDenied", refused.output)
        let unknown = try gdbus("VerifyUser", ["no-such-user-here", "{}"])
        XCTAssertEqual(errorName(unknown), "org.freedesktop.DBus.Error.InvalidArgs", unknown.output)
    }
}
