import Foundation
import Glibc
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
}

/// The output and status of a finished process.
struct Outcome {
    let status: Int32
    let stdout: String
    let stderr: String
    var output: String { stdout + stderr }
}

/// A child process started with posix_spawn. Output goes to files, not pipes:
/// scripts that leave daemons running (rig.sh) would otherwise hold a pipe
/// open for ever. Foundation's Process is not used because its exit detection
/// missed children here.
final class Child: @unchecked Sendable {
    let pid: pid_t
    private(set) var status: Int32?

    init(_ program: String, _ arguments: [String], environment: [String: String] = [:],
         stdoutPath: String, stderrPath: String) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdoutPath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        let merged = ProcessInfo.processInfo.environment.merging(environment) { $1 }.filter { !$0.value.isEmpty }
        let argv = ([program] + arguments).map { strdup($0) } + [nil]
        let envp = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        // The test runner blocks some signals in its threads; a child must
        // start with none blocked and default handlers, as from a shell.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t(), allSignals = sigset_t()
        sigemptyset(&noSignals)
        sigfillset(&allSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var child: pid_t = 0
        let result = posix_spawn(&child, program, &actions, &attributes, argv, envp)
        guard result == 0 else { throw RigError("cannot start \(program): \(String(cString: strerror(result)))") }
        pid = child
    }

    var isRunning: Bool {
        if status != nil { return false }
        var raw: Int32 = 0
        let result = waitpid(pid, &raw, WNOHANG)
        if result == pid {
            status = Child.decode(raw)
            return false
        }
        return result == 0
    }

    /// Waits up to `timeout` seconds; then SIGKILL. Returns the exit status
    /// (128 + signal for a signalled child).
    @discardableResult
    func wait(timeout: Double = 60) -> Int32 {
        let deadline = Date().addingTimeInterval(timeout)
        while isRunning && Date() < deadline { usleep(5_000) }
        if isRunning {
            kill(pid, SIGKILL)
            var raw: Int32 = 0
            waitpid(pid, &raw, 0)
            status = Child.decode(raw)
        }
        return status ?? -1
    }

    func signal(_ number: Int32) { if isRunning { kill(pid, number) } }

    private static func decode(_ raw: Int32) -> Int32 {
        let signal = raw & 0x7f
        return signal == 0 ? (raw >> 8) & 0xff : 128 + signal
    }
}

/// Runs a program to completion (bounded by `timeout`).
@discardableResult
func runProgram(_ program: String, _ arguments: [String], environment: [String: String] = [:],
                timeout: Double = 60) throws -> Outcome {
    let base = NSTemporaryDirectory() + "localauth-run-\(UUID().uuidString)"
    defer {
        unlink(base + ".out")
        unlink(base + ".err")
    }
    let child = try Child(program, arguments, environment: environment, stdoutPath: base + ".out", stderrPath: base + ".err")
    let status = child.wait(timeout: timeout)
    return Outcome(status: status,
                   stdout: (try? String(contentsOfFile: base + ".out", encoding: .utf8)) ?? "",
                   stderr: (try? String(contentsOfFile: base + ".err", encoding: .utf8)) ?? "")
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

    func stop() {
        _ = try? runProgram(Paths.root + "/scripts/rig.sh", ["stop", directory])
        try? FileManager.default.removeItem(atPath: directory)
    }
}

struct RigError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
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
        let command = launcher + [Paths.localauthd, "--state-dir", self.stateDirectory, "--idle-timeout", "0"] + store + arguments
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
    /// retrying the connect for `retryFor` seconds (0: one attempt).
    static func send(_ command: String, to sensorSocket: String, retryFor: Double = 10) throws {
        let deadline = Date().addingTimeInterval(retryFor)
        while true {
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw RigError("socket: \(errno)") }
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                let bytes = Array(sensorSocket.utf8.prefix(raw.count - 1))
                raw.copyBytes(from: bytes)
                raw[bytes.count] = 0
            }
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            if connected == 0 {
                let data = Array(command.utf8)
                // MSG_NOSIGNAL: a service killed meanwhile must not SIGPIPE the tests.
                _ = data.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                // The driver closes the connection once it has taken the
                // command; a next connection before that would drop it.
                var timeout = timeval(tv_sec: 2, tv_usec: 0)
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                var scratch = [UInt8](repeating: 0, count: 256)
                while scratch.withUnsafeMutableBytes({ read(fd, $0.baseAddress, $0.count) }) > 0 {}
                close(fd)
                return
            }
            close(fd)
            guard Date() < deadline else { throw RigError("virtual sensor \(sensorSocket) does not accept: \(errno)") }
            usleep(20_000)
        }
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
