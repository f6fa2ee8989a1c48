import Foundation
import Glibc
import RigSupport
import XCTest

/// Who is asking, and is that person at the reader (issue 20, items 1, 2, 4,
/// 5, 6), as a desktop has it: the service runs with exactly the
/// capabilities its systemd unit grants (read from
/// systemd/localauthd.service.in), logind is python-dbusmock's template
/// shaped like real logind (Tests/Helpers/logind-desktop.py: places a process
/// by its cgroup, `NoSessionForPID` for user units and app scopes, the
/// user's `Display`, `Active`, `State`), and callers run in the cgroups a
/// desktop puts them in (made here in the systemd hierarchy, as
/// systemd would).
final class CallersTests: DesktopRigTestCase, @unchecked Sendable {
    func testTheServiceRunsWithExactlyTheUnitsCapabilities() throws {
        let status = try String(contentsOfFile: "/proc/\(service.child.pid)/status", encoding: .utf8)
        let ptrace: UInt64 = 1 << 19   // CAP_SYS_PTRACE
        for field in ["CapEff", "CapPrm", "CapBnd"] {
            let line = status.split(separator: "\n").first { $0.hasPrefix(field + ":") }
            let value = line.flatMap { UInt64($0.split(separator: "\t").last ?? "", radix: 16) }
            XCTAssertEqual(value, ptrace, "\(field): \(String(describing: line))")
        }
        XCTAssertTrue(status.contains("NoNewPrivs:\t1"))
    }

    /// Item 6: under the unit, another uid's program is still known: each app
    /// gets its own domain state (under a unit without CAP_SYS_PTRACE every
    /// app got the same one, and polkit's dialog said "An application").
    func testUnderTheUnitEachProgramOfAnotherUidGetsItsOwnDomainState() throws {
        let gdbus = try self.gdbus("GetDomainState", [], asNobody: true)
        XCTAssertEqual(gdbus.status, 0, gdbus.output)
        let busctl = try callService("GetDomainState", "", asNobody: true)
        XCTAssertEqual(busctl.status, 0, busctl.output)
        let again = try self.gdbus("GetDomainState", [], asNobody: true)
        XCTAssertEqual(gdbus.stdout, again.stdout, "the same program gets the same state")
        XCTAssertNotEqual(Self.bytes(gdbus.stdout), Self.bytes(busctl.stdout),
                          "gdbus and busctl are different programs: \(gdbus.stdout) vs \(busctl.stdout)")
        XCTAssertFalse(service.log.contains("cannot read the executable"), service.log)
    }

    /// Item 6: polkit's password dialog (policy 2, here pkttyagent's text)
    /// names the program that asks, another uid's under the unit too (it
    /// said "An application" when the unit gave no CAP_SYS_PTRACE).
    func testUnderTheUnitPolkitsPasswordDialogNamesTheProgram() throws {
        try rig.polkit("org.example.LocalAuth.evaluate", "yes")
        let outcome = try localauthctlAsOwner(["evaluate", "--policy", "owner", "--reason", "Open the vault"],
                                              password: TestAccount.password)
        XCTAssertEqual(outcome.status, 0, outcome.output)
        XCTAssertTrue(outcome.output.contains("localauthctl asks you to confirm that you are the owner of this account: Open the vault"),
                      outcome.output)
        XCTAssertFalse(outcome.output.contains("An application"), outcome.output)
    }

    /// The numbers of a byte array as gdbus ("[byte 0x12, …]") or busctl ("ay 32 18 …") prints it.
    static func bytes(_ text: String) -> [Int] {
        text.split(whereSeparator: { " ,[]()\n".contains($0) }).compactMap { part in
            part.hasPrefix("0x") ? Int(part.dropFirst(2), radix: 16) : Int(part)
        }.suffix(32)
    }

    // MARK: Presence (items 1, 2)

    /// Item 1: an app started from the menu runs in an app-*.scope of
    /// user@UID.service, where logind's GetSessionByPID says NoSessionForPID;
    /// it is judged by its user's display session, which is active and local.
    func testAnAppInAUserScopeIsAllowedWhenItsDisplaySessionIsActiveAndLocal() async throws {
        try await enroll(as: "owner-finger")
        try desktop(["session", "c1", "0", "root", "seat0", "true", "active", "display"])
        let app = try run(in: "/user.slice/user-0.slice/user@0.service/app.slice/app-org.example.Editor-1.scope",
                          "/usr/bin/gdbus", Self.call("CanEvaluatePolicy", ["1"]))
        XCTAssertEqual(app.status, 0, app.output)
        XCTAssertEqual(app.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "(true,)", app.output)
    }

    /// Item 2: once another user switched in, the first user's session is
    /// inactive ("online"): its apps, in the session or in a scope judged by
    /// it, are not at the reader.
    func testASessionSwitchedAwayFromIsNotAtTheReader() async throws {
        try await enroll(as: "owner-finger")
        try desktop(["session", "c1", "0", "root", "seat0", "false", "online", "display"])
        try desktop(["session", "c2", "65534", "nobody", "seat0", "true", "active", "display"])
        for cgroup in ["/user.slice/user-0.slice/session-c1.scope",
                       "/user.slice/user-0.slice/user@0.service/app.slice/app-org.example.Editor-2.scope"] {
            for member in ["CanEvaluatePolicy", "EvaluatePolicy"] {
                let arguments = member == "CanEvaluatePolicy" ? ["1"] : ["1", "Unlock", "{}"]
                let refused = try run(in: cgroup, "/usr/bin/gdbus", Self.call(member, arguments, timeout: 5))
                XCTAssertEqual(errorName(refused), "org.example.LocalAuth.Error.NotAtTheReader", "\(cgroup) \(member): \(refused.output)")
                XCTAssertTrue(refused.output.contains("not the active one"), refused.output)
            }
        }
        // Switched back: the same session is at the reader again (read at every call).
        try desktop(["set", "c1", "true", "active"])
        let back = try run(in: "/user.slice/user-0.slice/session-c1.scope", "/usr/bin/gdbus",
                           Self.call("CanEvaluatePolicy", ["1"]))
        XCTAssertEqual(back.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "(true,)", back.output)
    }

    /// Item 2: a session left "closing" after logout (a tmux still running)
    /// is not at the reader, even if logind still calls it active.
    func testAClosingSessionIsNotAtTheReader() async throws {
        try await enroll(as: "owner-finger")
        try desktop(["session", "c3", "0", "root", "seat0", "true", "closing"])
        let refused = try run(in: "/user.slice/user-0.slice/session-c3.scope", "/usr/bin/gdbus",
                              Self.call("CanEvaluatePolicy", ["1"]))
        XCTAssertEqual(errorName(refused), "org.example.LocalAuth.Error.NotAtTheReader", refused.output)
    }

    /// Item 2, the attack: user A (uid 65534), in a session switched away
    /// from, loops `su root`; pam_localauth calls VerifyUser from inside su
    /// (root, in A's session scope). No scan may be queued for the victim's
    /// prints: NotAtTheReader at once. From the active session it scans.
    func testVerifyUserFromAnInactiveSessionIsRefused() async throws {
        try await enroll(as: "owner-finger")
        try desktop(["session", "c1", "0", "root", "seat0", "true", "active", "display"])
        try desktop(["session", "c5", "65534", "nobody", "seat0", "false", "online", "display"])
        let started = Date()
        let su = try run(in: "/user.slice/user-65534.slice/session-c5.scope", "/usr/bin/gdbus",
                         Self.call("VerifyUser", ["root", "{'request-id': <'su-1'>}"], timeout: 10))
        XCTAssertEqual(errorName(su), "org.example.LocalAuth.Error.NotAtTheReader", su.output)
        XCTAssertLessThan(Date().timeIntervalSince(started), 5, "refused at once, no scan queued")
        XCTAssertFalse(service.log.contains("verified for a PAM module"), service.log)

        // The victim's own, active session: the scan runs and their finger verifies.
        let output = rig.directory + "/verify-\(UInt32.random(in: 0...UInt32.max)).out"
        let signals = rig.directory + "/status-\(UInt32.random(in: 0...UInt32.max)).out"
        let monitor = try Child("/usr/bin/dbus-monitor", ["--address", rig.address,
                                                          "type='signal',member='EvaluationStatus'"],
                                stdoutPath: signals, stderrPath: signals)
        defer { monitor.signal(SIGTERM); monitor.wait(timeout: 5) }
        try waitForText("NameAcquired", in: signals)
        let victim = try start(in: "/user.slice/user-0.slice/session-c1.scope", "/usr/bin/gdbus",
                               Self.call("VerifyUser", ["root", "{'request-id': <'su-2'>}"], timeout: 30), output: output)
        try waitForText("place-finger", in: signals)
        try service.sensor("SCAN owner-finger")
        victim.wait(timeout: 20)
        XCTAssertTrue(readText(output).contains("()"), readText(output))
    }

    /// The same attack through the real PAM stack: pamtester (as su would)
    /// runs pam_localauth inside user A's inactive session; the module gets
    /// NotAtTheReader at once and answers PAM_AUTHINFO_UNAVAIL, so the stack
    /// moves on to the password and no scan is queued.
    func testPamFromAnInactiveSessionQueuesNoScan() async throws {
        let module = Paths.root + "/.build/pam/pam_localauth.so"
        if !FileManager.default.fileExists(atPath: module) { _ = try runProgram("/usr/bin/make", ["-C", Paths.root, "pam"]) }
        try await enroll(as: "owner-finger")
        try desktop(["session", "c1", "0", "root", "seat0", "true", "active", "display"])
        try desktop(["session", "c5", "65534", "nobody", "seat0", "false", "online", "display"])
        let name = "localauth-callers-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try "auth required \(module) timeout=20\n".write(toFile: "/etc/pam.d/" + name, atomically: true, encoding: .utf8)
        defer { unlink("/etc/pam.d/" + name) }
        let started = Date()
        let su = try run(in: "/user.slice/user-65534.slice/session-c5.scope", "/usr/bin/pamtester",
                         ["-v", name, "root", "authenticate"])
        XCTAssertTrue(su.output.contains("Authentication service cannot retrieve authentication info"), su.output)
        XCTAssertLessThan(Date().timeIntervalSince(started), 10, "no wait for a finger")
        XCTAssertTrue(service.log.contains("is not at the reader: inactive"), service.log)
        XCTAssertFalse(service.log.contains("verified for a PAM module"), service.log)
    }

    // MARK: Login before a session (issue 29: the console and the login screen)

    /// `login` started by getty@ttyN runs PAM as root in the getty service,
    /// in no session, its controlling terminal the VT (agetty made it so);
    /// while a getty's VT is in front, logind names no active session on
    /// seat0. On this VT in front it verifies the person; on a VT behind it
    /// is NotAtTheReader at once. (On main: NotAtTheReader "noSeat" both ways.)
    func testLoginOnTheConsoleInFrontVerifiesAndOnAVTBehindIsRefused() async throws {
        guard let front = try? String(contentsOfFile: "/sys/class/tty/tty0/active", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines), !front.isEmpty else {
            throw XCTSkip("this machine has no virtual consoles (/sys/class/tty/tty0/active)")
        }
        let behind = front == "tty5" ? "tty6" : "tty5"
        try await enroll(as: "owner-finger")
        // Someone logged in earlier and switched to a text console: their session is not in front.
        try desktop(["session", "c1", "0", "root", "seat0", "false", "online", "display"])
        try desktop(["seat-active", "seat0", "none"])

        let refused = try run(onConsole: behind, in: "/system.slice/system-getty.slice/getty@\(behind).service",
                              Self.call("VerifyUser", ["root", "{'request-id': <'login-behind'>}"], timeout: 10))
        XCTAssertEqual(errorName(refused), "org.example.LocalAuth.Error.NotAtTheReader", refused.output)
        XCTAssertTrue(refused.output.contains("not the active one"), refused.output)

        let output = rig.directory + "/login-\(UInt32.random(in: 0...UInt32.max)).out"
        let signals = try statusMonitor()
        defer { signals.child.signal(SIGTERM); signals.child.wait(timeout: 5) }
        let login = try start(onConsole: front, in: "/system.slice/system-getty.slice/getty@\(front).service",
                              Self.call("VerifyUser", ["root", "{'request-id': <'login-front'>}"], timeout: 30),
                              output: output)
        try waitForText("place-finger", in: signals.path)
        try service.sensor("SCAN owner-finger")
        login.wait(timeout: 20)
        XCTAssertTrue(readText(output).contains("()"), readText(output) + service.log)
        XCTAssertTrue(service.log.contains("console \(front) is in front"), service.log)
    }

    /// gdm's worker runs the user's PAM conversation as root in gdm.service,
    /// in no session, while the greeter session (class greeter, started by
    /// the same gdm daemon) is active on seat0: pam_localauth verifies the
    /// finger. sshd's own PAM at the same moment (root in ssh.service, no
    /// terminal) is NotAtTheReader at once, no scan queued, whatever
    /// PAM_RHOST says: here the machine's own host name (what sshd with
    /// UseDNS=yes sets for a connection from 127.0.1.1, Debian's address of
    /// the host name), which the module counts as local and sends on to the
    /// service. (On 1c36356 both are refused: the worker with "noSeat".)
    func testGdmsWorkerVerifiesWhileItsGreeterIsInFrontAndSshdsPamNever() async throws {
        let module = Paths.root + "/.build/pam/pam_localauth.so"
        if !FileManager.default.fileExists(atPath: module) { _ = try runProgram("/usr/bin/make", ["-C", Paths.root, "pam"]) }
        try await enroll(as: "owner-finger")
        let greeter = try gdmWithGreeter()
        defer { greeter.signal(SIGTERM); greeter.wait(timeout: 5) }
        let name = "localauth-login-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try "auth required \(module) timeout=20\n".write(toFile: "/etc/pam.d/" + name, atomically: true, encoding: .utf8)
        defer { unlink("/etc/pam.d/" + name) }

        var host = [CChar](repeating: 0, count: 256)
        gethostname(&host, host.count - 1)
        let started = Date()
        let sshd = try run(in: "/system.slice/ssh.service", "/usr/bin/pamtester",
                           ["-v", "-I", "rhost=" + String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self), name, "root", "authenticate"])
        XCTAssertTrue(sshd.output.contains("Authentication service cannot retrieve authentication info"), sshd.output)
        XCTAssertLessThan(Date().timeIntervalSince(started), 5, "no wait for a finger")
        XCTAssertTrue(service.log.contains("is not at the reader: noSeat"), service.log)
        XCTAssertFalse(service.log.contains("verified for a PAM module"), service.log)

        let output = rig.directory + "/gdm-worker-\(UInt32.random(in: 0...UInt32.max)).out"
        let signals = try statusMonitor()
        defer { signals.child.signal(SIGTERM); signals.child.wait(timeout: 5) }
        let worker = try start(in: Self.gdm, "/usr/bin/pamtester", ["-v", name, "root", "authenticate"], output: output)
        try waitForText("place-finger", in: signals.path)
        try service.sensor("SCAN owner-finger")
        worker.wait(timeout: 20)
        XCTAssertTrue(readText(output).contains("successfully authenticated"), readText(output) + service.log)
        XCTAssertTrue(service.log.contains("seat0's greeter is in front"), service.log)
    }

    /// The fprintd variant: `localauthd --fprintd` replaces fprintd, and gdm's
    /// `gdm-fingerprint` runs pam_fprintd in the same worker shape: the right
    /// finger verifies; a wrong one fails and counts toward the lockout.
    /// sshd's own PAM with pam_fprintd (no PAM_RHOST: pam_fprintd refuses a
    /// remote one itself) is refused by the service before any scan.
    /// (On 1c36356 the worker's VerifyStart was refused "Not at the reader".)
    func testPamFprintdAtTheLoginScreenVerifiesAndCountsAndSshdsPamIsRefused() async throws {
        for action in ["net.reactivated.fprint.device.verify"] { try rig.polkit(action, nil) }
        service.stop()
        service = try ServiceProcess(bus: rig, arguments: ["--fprintd"], launcher: try Self.unitLauncher())
        try await enroll(as: "owner-finger")
        let greeter = try gdmWithGreeter()
        defer { greeter.signal(SIGTERM); greeter.wait(timeout: 5) }
        let name = "localauth-gdm-fingerprint-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try "auth required pam_fprintd.so max-tries=1 timeout=20\n".write(toFile: "/etc/pam.d/" + name, atomically: true,
                                                                          encoding: .utf8)
        defer { unlink("/etc/pam.d/" + name) }

        let sshd = try run(in: "/system.slice/ssh.service", "/usr/bin/pamtester", ["-v", name, "root", "authenticate"])
        XCTAssertFalse(sshd.output.contains("successfully authenticated"), sshd.output)
        XCTAssertTrue(service.log.contains("is not at the reader: noSeat"), service.log)

        for (finger, expected) in [("owner-finger", "successfully authenticated"), ("stranger", "Failed to match fingerprint")] {
            let output = rig.directory + "/gdm-fingerprint-\(UInt32.random(in: 0...UInt32.max)).out"
            let worker = try start(in: Self.gdm, "/usr/bin/stdbuf", ["-o0", "/usr/bin/pamtester", "-v", name, "root", "authenticate"],
                                   output: output)
            try waitForText("fingerprint reader", in: output, timeout: 15)
            try service.sensor("SCAN \(finger)")
            worker.wait(timeout: 20)
            XCTAssertTrue(readText(output).contains(expected), "\(finger): " + readText(output) + service.log)
            XCTAssertEqual(readText(output).contains("successfully authenticated"), finger == "owner-finger", readText(output))
        }
        XCTAssertTrue(service.log.contains("through fprintd's interface (1 of 5 in a row)"), service.log)
    }

    /// The same worker is nobody once a person's session is in front (the
    /// greeter switched away from), and a root program of another system
    /// service is nobody while the greeter is in front.
    func testOnlyTheGreetersOwnServiceWhileTheGreeterIsInFront() async throws {
        try await enroll(as: "owner-finger")
        let greeter = try gdmWithGreeter()
        defer { greeter.signal(SIGTERM); greeter.wait(timeout: 5) }
        let other = try run(in: "/system.slice/cron.service", "/usr/bin/gdbus",
                            Self.call("VerifyUser", ["root", "{'request-id': <'cron'>}"], timeout: 10))
        XCTAssertEqual(errorName(other), "org.example.LocalAuth.Error.NotAtTheReader", other.output)
        try desktop(["session", "c1", "0", "root", "seat0", "true", "active", "display"])
        try desktop(["set", "g1", "false", "online"])
        let worker = try run(in: Self.gdm, "/usr/bin/gdbus",
                             Self.call("VerifyUser", ["root", "{'request-id': <'gdm'>}"], timeout: 10))
        XCTAssertEqual(errorName(worker), "org.example.LocalAuth.Error.NotAtTheReader", worker.output)
        XCTAssertFalse(service.log.contains("verified for a PAM module"), service.log)
    }

    // MARK: logind restarting (issue 30, item 8)

    /// logind leaves the bus mid-run (a restart, a crash): the service has
    /// seen it, so its absence is no "machine without logind" where callers
    /// count as local: nobody is at the reader until it is back, then the
    /// same session is judged again. (On main: "(true,)" while it is away.)
    func testWhileLogindIsAwayNobodyIsAtTheReaderAndWhenItIsBackTheSessionIsJudgedAgain() async throws {
        try await enroll(as: "owner-finger")
        try desktop(["session", "c1", "0", "root", "seat0", "true", "active", "display"])
        let scope = "/user.slice/user-0.slice/session-c1.scope"
        let before = try run(in: scope, "/usr/bin/gdbus", Self.call("CanEvaluatePolicy", ["1"]))
        XCTAssertEqual(before.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "(true,)", before.output)

        logind?.signal(SIGTERM)
        logind?.wait(timeout: 5)
        logind = nil
        try waitUntil("logind left the bus") { !(try logindOnTheBus()) }
        for member in ["CanEvaluatePolicy", "VerifyUser"] {
            let arguments = member == "VerifyUser" ? ["root", "{'request-id': <'away'>}"] : ["1"]
            let away = try run(in: scope, "/usr/bin/gdbus", Self.call(member, arguments, timeout: 10))
            XCTAssertEqual(errorName(away), "org.example.LocalAuth.Error.NotAtTheReader", "\(member): \(away.output)")
            XCTAssertTrue(away.output.contains("logind"), away.output)
        }
        // A new connection, placed while logind is away, too.
        let fresh = try run(in: "/user.slice/user-0.slice/user@0.service/app.slice/app-org.example.Editor-9.scope",
                            "/usr/bin/gdbus", Self.call("CanEvaluatePolicy", ["1"]))
        XCTAssertEqual(errorName(fresh), "org.example.LocalAuth.Error.NotAtTheReader", fresh.output)
        XCTAssertTrue(service.log.contains("logind left the bus"), service.log)

        try startLogind()
        try desktop(["setup"])
        try desktop(["session", "c1", "0", "root", "seat0", "true", "active", "display"])
        let back = try run(in: scope, "/usr/bin/gdbus", Self.call("CanEvaluatePolicy", ["1"]))
        XCTAssertEqual(back.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "(true,)", back.output + service.log)
    }

    // MARK: exec after connect (issue 30, item 10)

    /// A process of another uid connects, calls once, then execs another
    /// program (a copy of python3: another file) that keeps the connection.
    /// The service read the executable when it made the record and compares
    /// it at each call: the next call is PermissionDenied. (On main: "again
    /// ok", the call served as the first program's.)
    func testACallerThatExecsAnotherProgramAfterItsFirstCallIsRefused() throws {
        let outcome = try execAfterConnect("first")
        XCTAssertTrue(outcome.stdout.contains("first ok"), outcome.output + service.log)
        XCTAssertTrue(outcome.stdout.contains("again error org.example.LocalAuth.Error.PermissionDenied"),
                      outcome.output + service.log)
        XCTAssertTrue(service.log.contains("runs another executable than when it connected"), service.log)
    }

    /// The same without a first call: the service follows new unique names
    /// on the bus and reads each new connection's process then, so an exec
    /// a second after connecting is caught at the first call. (On main:
    /// "again ok", the record was made at that call, of the new program.)
    func testACallerThatExecsBeforeItsFirstCallIsRefusedOnceTheServiceSawItConnect() throws {
        let outcome = try execAfterConnect("quiet")
        XCTAssertTrue(outcome.stdout.contains("again error org.example.LocalAuth.Error.PermissionDenied"),
                      outcome.output + service.log)
    }

    private func execAfterConnect(_ mode: String) throws -> Outcome {
        let trusted = rig.directory + "/trusted-program"
        if !FileManager.default.fileExists(atPath: trusted) {
            try FileManager.default.copyItem(atPath: URL(fileURLWithPath: "/usr/bin/python3").resolvingSymlinksInPath().path, toPath: trusted)
            chmod(trusted, 0o755)
        }
        return try runAs(65534, "/usr/bin/python3", [try testScript("exec-after-connect.py"), mode, trusted])
    }

    // MARK: Prompt agents (item 1)

    /// The sheet started by our user unit (or autostart) runs in no session:
    /// it registers for its user's display session.
    func testAPromptAgentInAUserUnitRegistersForTheDisplaySession() async throws {
        try desktop(["session", "c1", "0", "root", "seat0", "true", "active", "display"])
        let agent = try run(in: "/user.slice/user-0.slice/user@0.service/app.slice/localauth-prompt.service",
                            "/usr/bin/gdbus", Self.call("RegisterPromptAgent", ["/org/example/LocalAuth/PromptAgent"]))
        XCTAssertEqual(agent.status, 0, agent.output)
        XCTAssertTrue(service.log.contains("registered for uid 0 (/org/freedesktop/login1/session/c1)"), service.log)
        // A system service's process (no session, no user) still cannot.
        let daemon = try run(in: "/system.slice/example.service", "/usr/bin/gdbus",
                             Self.call("RegisterPromptAgent", ["/org/example/LocalAuth/PromptAgent"]))
        XCTAssertEqual(errorName(daemon), "org.example.LocalAuth.Error.PermissionDenied", daemon.output)
    }

    /// Item 9: at most `maximumAgentsPerUser` (4) prompt agents per uid.
    /// Reaching it needs one session per agent (one agent per session): uid 0
    /// logged in five times, an agent in each; the fifth is refused
    /// LimitExceeded, while another uid still registers.
    func testTheFifthPromptAgentOfOneUidIsRefusedAndAnotherUidStillRegisters() throws {
        var agents: [Child] = []
        defer { for agent in agents { agent.signal(SIGTERM); agent.wait(timeout: 5) } }
        let helper = try testScript("hold-agent.py")
        func agent(_ session: String, uid: UInt32) throws -> String {
            let output = rig.directory + "/agent-\(session)-\(UInt32.random(in: 0...UInt32.max)).out"
            let setpriv = uid == 0 ? [] : ["/usr/bin/setpriv"] + Self.dropTo(uid)
            let program = setpriv.first ?? "/usr/bin/python3"
            let arguments = Array(setpriv.dropFirst()) + (uid == 0 ? [] : ["/usr/bin/python3"]) + [helper, rig.address]
            agents.append(try start(in: "/user.slice/user-\(uid).slice/session-\(session).scope", program, arguments,
                                    output: output))
            try waitUntil("agent in \(session) answered") { readText(output).contains("registered") || readText(output).contains("refused") }
            return readText(output).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        for index in 1...4 {
            try desktop(["session", "a\(index)", "0", "root", "seat0", index == 1 ? "true" : "false", index == 1 ? "active" : "online"])
            XCTAssertEqual(try agent("a\(index)", uid: 0), "registered", "agent \(index)")
        }
        try desktop(["session", "a5", "0", "root", "seat0", "false", "online"])
        XCTAssertEqual(try agent("a5", uid: 0), "refused org.example.LocalAuth.Error.LimitExceeded", service.log)
        try desktop(["session", "b1", "65534", "nobody", "seat1", "true", "active"])
        XCTAssertEqual(try agent("b1", uid: 65534), "registered", service.log)
    }

    // MARK: EnvironmentChanged follows the session (item 2)

    /// A subscriber's `biometry-usable` follows its session: switched away
    /// from (logind's PropertiesChanged for `Active`), it hears not usable;
    /// switched back, usable again (it kept the presence it subscribed with).
    func testASubscriberHearsBiometryUnusableWhenItsSessionIsSwitchedAwayAndUsableWhenBack() async throws {
        try await enroll(as: "owner-finger")
        try desktop(["session", "c1", "0", "root", "seat0", "true", "active", "display"])
        let heard = rig.directory + "/environment-\(UInt32.random(in: 0...UInt32.max)).out"
        let listener = try start(in: "/user.slice/user-0.slice/session-c1.scope", "/usr/bin/python3",
                                 [try testScript("mock-world.py"), rig.address, "listen", heard], output: heard + ".log")
        defer { listener.signal(SIGTERM); listener.wait(timeout: 5) }
        try waitForText("subscribed", in: heard)
        try desktop(["session", "c2", "65534", "nobody", "seat0", "true", "active", "display"])
        try desktop(["set", "c1", "false", "online"])
        try waitForText("biometry-usable=False", in: heard)
        try desktop(["set", "c1", "true", "active"])
        try waitForText("biometry-usable=True", in: heard)
        let lines = readText(heard).split(separator: "\n")
        XCTAssertEqual(lines.filter { $0.hasPrefix("changed") }.count, 2, readText(heard))
    }

    // MARK: Sandboxes (item 5)

    /// The attack: an unprivileged host program names its own scope
    /// `app-flatpak-<ID>-1.scope` (as `systemd-run --user --scope
    /// --unit=app-flatpak-org.example.Vault-1` does; systemd delegates the
    /// user's subtree to the user, so it moves itself in) and asks for the
    /// Flatpak app's rights. Refused: UnprovenSandbox.
    func testAHostProgramInAForgedFlatpakScopeIsRefused() throws {
        let scope = "/user.slice/user-65534.slice/user@65534.service/app.slice/app-flatpak-\(Self.vault)-1.scope"
        try makeCgroup(scope, owner: 65534)
        let procs = Self.hierarchy + scope + "/cgroup.procs"
        let forged = try runProgram("/usr/bin/setpriv", Self.dropTo(65534) + [
            "/bin/sh", "-c", "echo $$ > '\(procs)' && exec /usr/bin/gdbus \"$@\"", "sh"] + Self.call("ListRights", ["{}"]),
                                    environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address])
        XCTAssertEqual(errorName(forged), "org.example.LocalAuth.Error.UnprovenSandbox", forged.output)
        let save = try runProgram("/usr/bin/setpriv", Self.dropTo(65534) + [
            "/bin/sh", "-c", "echo $$ > '\(procs)' && exec /usr/bin/gdbus \"$@\"", "sh"]
            + Self.call("RemoveAllRights", ["{}"]), environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address])
        XCTAssertTrue(save.output.contains("UnprovenSandbox") || save.output.contains("PermissionDenied"), save.output)
    }

    /// What does prove a Flatpak sandbox, under the unit's capabilities: the
    /// process runs in a root of its own (a mount namespace and chroot) holding
    /// /.flatpak-info (what bwrap sets up), with the scope naming the same app.
    func testARealSandboxOfAnotherUidIsProvenUnderTheUnit() throws {
        let scope = "/user.slice/user-65534.slice/user@65534.service/app.slice/app-flatpak-\(Self.vault)-2.scope"
        try makeCgroup(scope, owner: 65534)
        let procs = Self.hierarchy + scope + "/cgroup.procs"
        let script = """
            echo $$ > '\(procs)' || exit 91
            R=$(mktemp -d /tmp/fake-flatpak.XXXXXX) && mount -t tmpfs tmpfs "$R" || exit 90
            for entry in /*; do
                name=${entry#/}
                if [ -L "$entry" ]; then ln -s "$(readlink "$entry")" "$R/$name"
                elif [ -d "$entry" ]; then mkdir "$R/$name" && mount --rbind "$entry" "$R/$name"
                fi
            done
            printf '[Application]\\nname=\(Self.vault)\\n' > "$R/.flatpak-info"
            exec chroot "$R" /usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups \
                env DBUS_SYSTEM_BUS_ADDRESS='\(rig.address)' /usr/bin/gdbus \(Self.call("ListRights", ["{}"]).map { "'\($0)'" }.joined(separator: " "))
            """
        let sandboxed = try runProgram("/usr/bin/unshare", ["--mount", "--propagation", "private", "/bin/sh", "-c", script])
        XCTAssertEqual(sandboxed.status, 0, sandboxed.output)
        XCTAssertTrue(sandboxed.stdout.contains("[]"), sandboxed.output)
    }
}
