import Foundation
import Glibc
import RigSupport
import XCTest

/// The real parts, started for a test: a private system-bus-like dbus-daemon
/// with the real polkitd on it (scripts/rig.sh), and localauthd with
/// libfprint's virtual sensor. Nothing here imitates our own components.
enum Paths {
    /// The package root, found from this file's location.
    static let root: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    /// Where `swift build` put the binaries that this test bundle belongs to.
    static let binaries: String = {
        for candidate in [Bundle.main.bundleURL, URL(fileURLWithPath: CommandLine.arguments[0])] {
            var url = candidate
            for _ in 0..<4 {
                if FileManager.default.isExecutableFile(atPath: url.appendingPathComponent("localauthd").path) {
                    return url.path
                }
                url.deleteLastPathComponent()
            }
        }
        return root + "/.build/debug"
    }()

    static var localauthd: String { binaries + "/localauthd" }
    static var localauthctl: String { binaries + "/localauthctl" }

    /// Test helpers (Python clients, agents, mocks) in Tests/Helpers.
    static func helper(_ name: String) -> String { root + "/Tests/Helpers/" + name }

    /// A program of the Examples package (a package of its own, like any
    /// app using LocalAuth). `make e2e` builds it first; a test run without
    /// it builds it once here.
    static func example(_ name: String) throws -> String {
        let path = root + "/Examples/.build/debug/" + name
        if !FileManager.default.isExecutableFile(atPath: path) {
            let built = try runProgram("/usr/bin/env", ["swift", "build", "--package-path", root + "/Examples"], timeout: 1200)
            guard built.status == 0 else { throw RigError("building Examples failed: \(built.output)") }
        }
        return path
    }
}

/// scripts/rig.sh: the private bus and polkitd, shared by a test class.
final class BusRig: @unchecked Sendable {
    let directory: String
    let address: String
    let polkitAnswers: String

    /// `exportAddress`: point this process's system bus (the client library) at it.
    init(exportAddress: Bool = true) throws {
        directory = "/tmp/localauth-rig-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let outcome = try runProgram(Paths.root + "/scripts/rig.sh", ["start", directory])
        guard outcome.status == 0 else { throw RigError("rig.sh start failed: \(outcome.output)") }
        let env = try String(contentsOfFile: directory + "/env", encoding: .utf8)
        var values: [String: String] = [:]
        for line in env.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
            if parts.count == 2 { values[parts[0]] = parts[1] }
        }
        guard let address = values["DBUS_SYSTEM_BUS_ADDRESS"], let answers = values["LOCALAUTH_TEST_POLKIT_DIR"] else {
            throw RigError("rig env incomplete: \(env)")
        }
        self.address = address
        polkitAnswers = answers
        // The client library in this process uses the system bus: this one.
        if exportAddress { setenv("DBUS_SYSTEM_BUS_ADDRESS", address, 1) }
    }

    /// Forces polkit's answer for `action` (yes, no, auth_self, …; nil: the action's defaults).
    func polkit(_ action: String, _ answer: String?) throws {
        let outcome = try runProgram(Paths.root + "/scripts/rig.sh", ["polkit", directory, action, answer ?? "default"])
        guard outcome.status == 0 else { throw RigError("rig.sh polkit failed: \(outcome.output)") }
    }

    /// polkitd (Debian's 122) can die on a check whose subject left the bus
    /// at the wrong moment; every later test would then fail for that alone.
    /// Started again before each test, with the bus and its clients kept.
    func revivePolkit() throws {
        let outcome = try runProgram(Paths.root + "/scripts/rig.sh", ["revive-polkit", directory])
        guard outcome.status == 0 else { throw RigError("rig.sh revive-polkit failed: \(outcome.output)") }
        if !outcome.output.isEmpty { print(outcome.output) }
    }

    func stop() {
        _ = try? runProgram(Paths.root + "/scripts/rig.sh", ["stop", directory])
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// One localauthd process on the rig's bus, with its own state directory and
/// virtual sensor socket.
final class ServiceProcess: @unchecked Sendable {
    private(set) var child: Child!
    let stateDirectory: String
    let sensorSocket: String
    let logPath: String
    let bus: BusRig

    /// `withReader: false` starts the service with no reader at all.
    /// `fprintdStore`: fprintd's store to read (default: an empty directory of
    /// this service, so that the machine's /var/lib/fprint never leaks in).
    /// `environment`: more variables (a second virtual reader, say).
    /// `launcher` runs it through another program (e.g. setpriv).
    init(bus: BusRig, stateDirectory: String? = nil, withReader: Bool = true,
         fprintdStore: String? = nil, environment extra: [String: String] = [:],
         arguments: [String] = [], launcher: [String] = []) throws {
        self.bus = bus
        let base = bus.directory + "/service-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        self.stateDirectory = stateDirectory ?? base + "/state"
        sensorSocket = base + "/vfp.sock"
        logPath = base + "/localauthd.log"
        var environment = ["DBUS_SYSTEM_BUS_ADDRESS": bus.address, "FP_DRIVERS_WHITELIST": "virtual_device"]
        // An empty value is dropped from the child's environment: no reader at all.
        environment["FP_VIRTUAL_DEVICE"] = withReader ? sensorSocket : ""
        environment.merge(extra) { $1 }
        let store = ["--fprintd-store", fprintdStore ?? base + "/fprintd-store"]
        // The machine's /etc/localauth/policy.conf never leaks in either: a
        // policy file of this service's own, absent unless a test writes one
        // (a later --policy in `arguments` wins).
        let policy = ["--policy", base + "/policy.conf"]
        let command = launcher + [Paths.localauthd, "--state-dir", self.stateDirectory, "--idle-timeout", "0"] + store + policy + arguments
        child = try Child(command[0], Array(command.dropFirst()),
                          environment: environment, stdoutPath: logPath, stderrPath: logPath)
        try waitForName()
    }

    /// Waits until the service owns its bus name (it takes it only when ready).
    private func waitForName() throws {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            guard child.isRunning else { throw RigError("localauthd exited: \(log)") }
            let outcome = try runProgram("/usr/bin/dbus-send", ["--bus=\(bus.address)", "--print-reply", "--dest=org.freedesktop.DBus",
                                                        "/org/freedesktop/DBus", "org.freedesktop.DBus.NameHasOwner",
                                                        "string:org.example.LocalAuth"])
            if outcome.stdout.contains("boolean true") { return }
            usleep(20_000)
        }
        throw RigError("localauthd did not take its name: \(log)")
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Sends one command to the virtual sensor (one connection per command),
    /// retrying the connect until the service has the device open.
    func sensor(_ command: String) throws {
        try ServiceProcess.send(command, to: sensorSocket)
    }

    /// Sends one command to the virtual sensor listening at `sensorSocket`,
    /// retrying the connect for `retryFor` seconds, and waits until the driver
    /// has taken it (a next command sent earlier would be dropped).
    static func send(_ command: String, to sensorSocket: String, retryFor: Double = 10) throws {
        try VirtualSensor(path: sensorSocket).send(command, connectTimeout: retryFor)
    }

    /// SIGTERM, then the exit status.
    @discardableResult
    func stop() -> Int32 {
        child.signal(SIGTERM)
        return child.wait(timeout: 10)
    }

    var isRunning: Bool { child.isRunning }

    func kill9() {
        child.signal(SIGKILL)
        child.wait()
    }
}
