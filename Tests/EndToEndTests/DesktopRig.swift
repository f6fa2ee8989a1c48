import Foundation
import Glibc
import RigSupport
import XCTest

/// The rig as a desktop has it, for the tests of who is at the reader
/// (CallersTests, SessionSwitchTests): python-dbusmock's logind shaped like
/// real logind (Tests/Helpers/logind-desktop.py: places a process by its
/// cgroup, `NoSessionForPID` for user units and app scopes, the user's
/// `Display`, `Active`, `State`), callers run in the cgroups a desktop puts
/// them in (made here in the systemd hierarchy, as systemd would), and the
/// service runs with exactly the capabilities its systemd unit grants.
class DesktopRigTestCase: RigTestCase, @unchecked Sendable {
    var logind: Child?
    var cgroups: [String] = []
    static let hierarchy = "/sys/fs/cgroup/systemd"
    static let vault = "org.example.Vault"

    override func setUpWithError() throws {
        try super.setUpWithError()
        try startLogind()
        try desktop(["setup"])
        // The service follows logind from its start, with the unit's capabilities.
        service.stop()
        service = try ServiceProcess(bus: rig, launcher: try Self.unitLauncher())
    }

    override func tearDown() {
        super.tearDown()
        logind?.signal(SIGTERM)
        logind?.wait(timeout: 5)
        logind = nil
        for path in cgroups.reversed() { rmdir(Self.hierarchy + path) }
        cgroups = []
    }

    /// python-dbusmock's logind on the rig's bus, once it owns its name.
    func startLogind() throws {
        let log = rig.directory + "/mock-logind-\(UInt32.random(in: 0...UInt32.max)).log"
        logind = try Child("/usr/bin/python3", ["-m", "dbusmock", "--system", "--template", "logind"],
                           environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address], stdoutPath: log, stderrPath: log)
        try waitUntil("logind is on the bus") { try logindOnTheBus() }
    }

    func logindOnTheBus() throws -> Bool {
        try runProgram("/usr/bin/dbus-send", ["--bus=\(rig.address)", "--print-reply", "--dest=org.freedesktop.DBus",
                                              "/org/freedesktop/DBus", "org.freedesktop.DBus.NameHasOwner",
                                              "string:org.freedesktop.login1"]).stdout.contains("boolean true")
    }

    // MARK: The shipped unit's view

    /// setpriv's arguments for exactly the capabilities the unit grants
    /// (CapabilityBoundingSet=, AmbientCapabilities=, NoNewPrivileges=).
    static func unitLauncher() throws -> [String] {
        let unit = try String(contentsOfFile: Paths.root + "/systemd/localauthd.service.in", encoding: .utf8)
        func values(_ key: String) -> [String] {
            unit.split(separator: "\n").filter { $0.hasPrefix(key + "=") }
                .flatMap { $0.dropFirst(key.count + 1).split(separator: " ") }
                .map { $0.lowercased().replacingOccurrences(of: "cap_", with: "") }
        }
        let bounding = values("CapabilityBoundingSet")
        let ambient = values("AmbientCapabilities")
        var launcher = ["/usr/bin/setpriv", "--bounding-set=" + (["-all"] + bounding.map { "+" + $0 }).joined(separator: ","),
                        "--inh-caps=-all", "--ambient-caps=" + (["-all"] + ambient.map { "+" + $0 }).joined(separator: ",")]
        if unit.contains("\nNoNewPrivileges=yes") { launcher.append("--no-new-privs") }
        return launcher + ["--"]
    }

    // MARK: Helpers

    static let gdm = "/system.slice/gdm.service"

    /// gdm's daemon in gdm.service, and the greeter session it started: its
    /// leader (the greeter's worker) is the daemon's child, moved into the
    /// session's scope as pam_systemd does; logind has it as seat0's active
    /// session of class greeter, led by that child.
    func gdmWithGreeter() throws -> Child {
        try makeCgroup(Self.gdm)
        let scope = "/user.slice/user-116.slice/session-g1.scope"
        try makeCgroup(scope)
        let pidFile = rig.directory + "/greeter-\(UInt32.random(in: 0...UInt32.max)).pid"
        let daemon = try Child("/bin/sh", ["-c", """
            echo $$ > '\(Self.hierarchy + Self.gdm)/cgroup.procs' || exit 91
            sleep 600 &
            echo $! > '\(Self.hierarchy + scope)/cgroup.procs' || exit 92
            echo $! > '\(pidFile).tmp' && mv '\(pidFile).tmp' '\(pidFile)'
            trap 'kill $!; exit 0' TERM
            wait
            """], stdoutPath: pidFile + ".log", stderrPath: pidFile + ".log")
        try waitUntil("the greeter's leader runs") { FileManager.default.fileExists(atPath: pidFile) }
        let leader = readText(pidFile).trimmingCharacters(in: .whitespacesAndNewlines)
        try desktop(["session", "g1", "116", "Debian-gdm", "seat0", "true", "active", "greeter", "leader=\(leader)"])
        return daemon
    }

    /// dbus-monitor for EvaluationStatus, once it listens.
    func statusMonitor() throws -> (child: Child, path: String) {
        let path = rig.directory + "/status-\(UInt32.random(in: 0...UInt32.max)).out"
        let monitor = try Child("/usr/bin/dbus-monitor", ["--address", rig.address, "type='signal',member='EvaluationStatus'"],
                                stdoutPath: path, stderrPath: path)
        try waitForText("NameAcquired", in: path)
        return (monitor, path)
    }


    func desktop(_ arguments: [String]) throws {
        let outcome = try runProgram("/usr/bin/python3", [try testScript("logind-desktop.py"), rig.address] + arguments)
        XCTAssertEqual(outcome.status, 0, outcome.output)
    }

    /// gdbus's arguments for a call of our interface.
    static func call(_ member: String, _ values: [String], timeout: Int = 25) -> [String] {
        ["call", "--system", "--timeout", "\(timeout)", "--dest", "org.example.LocalAuth", "--object-path",
         "/org/example/LocalAuth", "--method", "org.example.LocalAuth.\(member)"] + values
    }

    /// A cgroup in the systemd hierarchy, as systemd makes them; `owner`: the
    /// uid it is delegated to (user@UID.service's subtree belongs to the user).
    func makeCgroup(_ path: String, owner: UInt32? = nil) throws {
        var partial = ""
        for component in path.split(separator: "/") {
            partial += "/" + component
            if mkdir(Self.hierarchy + partial, 0o755) == 0 { cgroups.append(partial) }
        }
        if let owner {
            for file in ["", "/cgroup.procs"] { chown(Self.hierarchy + path + file, owner, owner) }
        }
    }

    func wrapper(_ path: String) throws -> [String] {
        try makeCgroup(path)
        return ["/bin/sh", "-c", "echo $$ > '\(Self.hierarchy + path)/cgroup.procs' && exec \"$@\"", "sh"]
    }

    /// Runs `program` as root inside the cgroup `path`, on the rig's bus.
    func run(in path: String, _ program: String, _ arguments: [String]) throws -> Outcome {
        try runProgram(try wrapper(path)[0], Array(try wrapper(path).dropFirst()) + [program] + arguments,
                       environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address])
    }

    /// The shell that runs gdbus as `login` would: in `path`, in a session
    /// of its own whose controlling terminal is /dev/`vt` (setsid --ctty
    /// takes stdin's terminal).
    func consoleWrapper(_ vt: String, _ path: String, _ arguments: [String]) throws -> [String] {
        try makeCgroup(path)
        return ["/bin/sh", "-c", "echo $$ > '\(Self.hierarchy + path)/cgroup.procs' && exec /usr/bin/setsid --ctty --wait \"$@\" < /dev/\(vt)",
                "sh", "/usr/bin/gdbus"] + arguments
    }

    func run(onConsole vt: String, in path: String, _ arguments: [String]) throws -> Outcome {
        let wrap = try consoleWrapper(vt, path, arguments)
        return try runProgram(wrap[0], Array(wrap.dropFirst()), environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address])
    }

    func start(onConsole vt: String, in path: String, _ arguments: [String], output: String) throws -> Child {
        let wrap = try consoleWrapper(vt, path, arguments)
        return try Child(wrap[0], Array(wrap.dropFirst()), environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address],
                         stdoutPath: output, stderrPath: output)
    }

    func start(in path: String, _ program: String, _ arguments: [String], output: String) throws -> Child {
        let wrap = try wrapper(path)
        return try Child(wrap[0], Array(wrap.dropFirst()) + [program] + arguments,
                         environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address], stdoutPath: output, stderrPath: output)
    }
}
