import Foundation
@testable import LocalAuthService
import XCTest

/// A root caller in no session (Callers/LoginScreen.swift; docs/SECURITY.md,
/// "Login before a session"): `login` on the console in front and gdm's
/// worker while its greeter is in front are at the reader; sshd's own PAM
/// never is.
final class LoginScreenTests: XCTestCase {
    typealias Facts = LoginScreen.Facts

    /// tty_nr as the kernel encodes it (new_encode_dev): major in bits 8–19,
    /// minor's low byte in 0–7 and its high bits from 20 on.
    static func device(_ major: UInt32, _ minor: UInt32) -> UInt32 {
        (minor & 0xff) | (major << 8) | ((minor & ~0xff) << 12)
    }

    static let gdm = "/system.slice/gdm.service"
    static let greeter = LoginScreen.Session(
        sessionClass: "greeter", remote: false, active: true, state: "active",
        launcherCgroup: gdm)

    func testTheVirtualConsolesAreMajorFourMinorOneToSixtyThree() {
        XCTAssertEqual(LoginScreen.virtualConsole(ttyNr: Self.device(4, 1)), 1)
        XCTAssertEqual(LoginScreen.virtualConsole(ttyNr: Self.device(4, 63)), 63)
        XCTAssertNil(LoginScreen.virtualConsole(ttyNr: 0), "no controlling terminal")
        XCTAssertNil(LoginScreen.virtualConsole(ttyNr: Self.device(4, 0)), "/dev/tty0 is no one's console")
        XCTAssertNil(LoginScreen.virtualConsole(ttyNr: Self.device(4, 64)), "ttyS0, a serial line")
        XCTAssertNil(LoginScreen.virtualConsole(ttyNr: Self.device(136, 3)), "a pty (/dev/pts/3)")
        XCTAssertNil(LoginScreen.virtualConsole(ttyNr: Self.device(5, 1)), "/dev/console")
        XCTAssertNil(LoginScreen.virtualConsole(ttyNr: Self.device(4, 1) | (1 << 20)), "minor 257 is no VT")
    }

    /// login from getty@tty3: its terminal is tty3; at the reader while tty3
    /// is on screen, someone else's VT otherwise.
    func testLoginOnTheConsoleInFrontIsAtTheReaderAndOnAnotherVTItIsNot() {
        let login = Facts(
            uid: 0, controllingTTY: Self.device(4, 3), foregroundVT: "tty3",
            cgroup: "/system.slice/system-getty.slice/getty@tty3.service")
        XCTAssertEqual(LoginScreen.presence(login), .local)
        var behind = login
        behind.foregroundVT = "tty2"
        XCTAssertEqual(LoginScreen.presence(behind), .inactive)
        var noVTs = login
        noVTs.foregroundVT = nil
        XCTAssertEqual(LoginScreen.presence(noVTs), .noSeat)
        var user = login
        user.uid = 1000
        XCTAssertEqual(LoginScreen.presence(user), .noSeat, "only root runs a login")
    }

    /// gdm's worker: in gdm.service, no terminal, the greeter in front.
    func testGdmsWorkerIsAtTheReaderWhileItsGreeterIsInFront() {
        let worker = Facts(uid: 0, controllingTTY: 0, foregroundVT: "tty1", cgroup: Self.gdm, activeSession: Self.greeter)
        XCTAssertEqual(LoginScreen.presence(worker), .local)
        var userInFront = worker
        userInFront.activeSession?.sessionClass = "user"
        XCTAssertEqual(LoginScreen.presence(userInFront), .noSeat, "a person's session is in front, not the login screen")
        var noneInFront = worker
        noneInFront.activeSession = nil
        XCTAssertEqual(LoginScreen.presence(noneInFront), .noSeat)
        let changes: [(inout LoginScreen.Session) -> Void] = [
            { $0.remote = true }, { $0.active = false },
            { $0.state = "online" }, { $0.launcherCgroup = nil },
        ]
        for change in changes {
            var facts = worker
            change(&facts.activeSession!)
            XCTAssertEqual(LoginScreen.presence(facts), .noSeat, "\(facts)")
        }
        var reparented = worker
        reparented.activeSession?.launcherCgroup = "/init.scope"
        reparented.cgroup = "/init.scope"
        XCTAssertEqual(LoginScreen.presence(reparented), .noSeat, "only a system service's own cgroup")
    }

    /// gdm's XDMCP and Remote Login displays: a remote greeter session
    /// started by the same gdm daemon. Its worker has the local worker's
    /// shape, so while one exists the greeter rule admits no worker of that
    /// service (fails closed, whatever PAM_RHOST says); a remote greeter of
    /// another service, none; one whose starter cannot be read, fails closed.
    /// On c686a26 the worker was at the reader with a remote greeter open.
    func testNoWorkerOfAServiceThatServesARemoteGreeterIsAtTheReader() {
        var worker = Facts(uid: 0, controllingTTY: 0, foregroundVT: "tty1", cgroup: Self.gdm, activeSession: Self.greeter)
        XCTAssertEqual(LoginScreen.presence(worker), .local)
        var remote = Self.greeter
        remote.remote = true
        remote.active = false
        remote.state = "online"
        worker.remoteGreeters = [remote]
        XCTAssertEqual(LoginScreen.presence(worker), .noSeat)
        remote.launcherCgroup = "/system.slice/lightdm.service"
        worker.remoteGreeters = [remote]
        XCTAssertEqual(LoginScreen.presence(worker), .local, "another service's remote greeter")
        remote.launcherCgroup = nil
        worker.remoteGreeters = [remote]
        XCTAssertEqual(LoginScreen.presence(worker), .noSeat, "a starter that cannot be read fails closed")
    }

    /// A display manager's worker that holds a VT not yet in front (the one
    /// the new session will get) is still judged by its greeter; the same
    /// VT with no greeter in front is someone else's screen.
    func testAWorkerOnAVTBehindIsJudgedByItsGreeter() {
        let worker = Facts(
            uid: 0, controllingTTY: Self.device(4, 2), foregroundVT: "tty1", cgroup: Self.gdm, activeSession: Self.greeter)
        XCTAssertEqual(LoginScreen.presence(worker), .local)
        var noGreeter = worker
        noGreeter.activeSession = nil
        XCTAssertEqual(LoginScreen.presence(noGreeter), .inactive)
        var otherService = worker
        otherService.cgroup = "/system.slice/ssh.service"
        XCTAssertEqual(LoginScreen.presence(otherService), .inactive)
    }

    /// sshd's PAM: root, in ssh.service, no terminal. Never, whatever is on
    /// screen: the greeter, a console, nothing.
    func testSshdsOwnPamIsNeverAtTheReader() {
        let sshd = Facts(uid: 0, controllingTTY: 0, foregroundVT: "tty1", cgroup: "/system.slice/ssh.service")
        XCTAssertEqual(LoginScreen.presence(sshd), .noSeat)
        var atTheGreeter = sshd
        atTheGreeter.activeSession = Self.greeter
        XCTAssertEqual(LoginScreen.presence(atTheGreeter), .noSeat)
        // A process in the user's session on the pty sshd gave it is in a
        // session, judged by logind; here, a pty in no session is nothing.
        var onAPty = atTheGreeter
        onAPty.controllingTTY = Self.device(136, 0)
        XCTAssertEqual(LoginScreen.presence(onAPty), .noSeat)
        var unreadable = atTheGreeter
        unreadable.cgroup = nil
        XCTAssertEqual(LoginScreen.presence(unreadable), .noSeat)
    }

    func testTheCgroupPathIsSystemdsHierarchyElseTheUnifiedOne() {
        XCTAssertEqual(
            ProcessFacts.cgroupPath(cgroup: "9:name=systemd:/system.slice/gdm.service\n8:pids:/\n0::/x\n"),
            "/system.slice/gdm.service")
        XCTAssertEqual(ProcessFacts.cgroupPath(cgroup: "0::/system.slice/ssh.service\n"), "/system.slice/ssh.service")
        XCTAssertNil(ProcessFacts.cgroupPath(cgroup: "1:cpu:/\n"))
        let fields = ProcessFacts.statFields(stat: "123 (a) b) S 1 123 123 1027 123 4194560")
        XCTAssertEqual(fields.flatMap(ProcessFacts.controllingTTY(fields:)), 1027)
        XCTAssertEqual(LoginScreen.virtualConsole(ttyNr: 1027), 3)
    }
}

/// Issue 30, item 8: a machine whose logind has run since boot is one with
/// logind, whether it is on the bus at the service's start or not.
final class LogindAwayTests: XCTestCase {
    func testLogindHasRunOnlyUnderSystemdWithItsSeatDirectory() throws {
        let root = NSTemporaryDirectory() + "logind-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root + "/run/systemd/seats", withIntermediateDirectories: true)
        XCTAssertFalse(Logind.logindHasRun(root: root, busAddress: nil), "not booted with systemd (a container's init, the rig)")
        try FileManager.default.createDirectory(atPath: root + "/run/systemd/system", withIntermediateDirectories: true)
        XCTAssertTrue(Logind.logindHasRun(root: root, busAddress: nil))
        XCTAssertTrue(Logind.logindHasRun(root: root, busAddress: "unix:path=/run/dbus/system_bus_socket"))
        XCTAssertFalse(
            Logind.logindHasRun(root: root, busAddress: "unix:path=/tmp/localauth-rig-1/bus"),
            "a private bus never had the machine's logind")
        try FileManager.default.removeItem(atPath: root + "/run/systemd/seats")
        XCTAssertFalse(Logind.logindHasRun(root: root, busAddress: nil), "systemd without logind")
    }
}
