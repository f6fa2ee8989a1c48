import CRigSpawn
import Glibc

/// Processes for the test rig and the benchmark, started with posix_spawn.
///
/// Output goes to files, never pipes: rig.sh leaves daemons running that would
/// hold a pipe open for ever. Children get descriptors 0, 1 and 2 only. Foundation's Process is not used: its exit
/// detection missed children here. Children start with no signal blocked and
/// default handlers, as from a shell (test runners block some signals in
/// their threads, and a child inherits that).
public enum Spawn {
    /// Starts `program`; stdout and stderr go to the given files (appended),
    /// stdin is /dev/null. An empty value in `environment` removes that variable.
    public static func start(_ program: String, _ arguments: [String], environment: [String: String] = [:],
                             stdoutPath: String, stderrPath: String) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdoutPath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        if stderrPath == stdoutPath {
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        } else {
            posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        }
        // Nothing else of ours: a descriptor opened without O_CLOEXEC (the
        // rig's lock, which `flock LOCK swift test …` leaves open in the test
        // process; a test's socket) would live on in a daemon that outlives
        // the test. An orphaned localauthd holding the lock once blocked every
        // later rig run for 40 minutes. (glibc 2.34+; Debian 12 has 2.36.)
        guard rig_spawn_file_actions_addclosefrom(&actions, 3) == 0 else {
            throw RigError("cannot start \(program): posix_spawn_file_actions_addclosefrom_np failed")
        }
        var merged = currentEnvironment()
        for (key, value) in environment { merged[key] = value }
        let argv = ([program] + arguments).map { strdup($0) } + [nil]
        let envp = merged.filter { !$0.value.isEmpty }.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t(), allSignals = sigset_t()
        sigemptyset(&noSignals)
        sigfillset(&allSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var pid: pid_t = 0
        let result = posix_spawn(&pid, program, &actions, &attributes, argv, envp)
        guard result == 0 else { throw RigError("cannot start \(program): \(String(cString: strerror(result)))") }
        return pid
    }

    /// Waits up to `timeout` seconds for a child of ours: its exit status
    /// (128 + signal for a signalled child), or nil if it still runs.
    public static func wait(_ pid: pid_t, timeout: Double) -> Int32? {
        let deadline = Clock.nanoseconds() + UInt64(max(0, timeout) * 1e9)
        while true {
            var raw: Int32 = 0
            let result = waitpid(pid, &raw, WNOHANG)
            if result == pid {
                let signal = raw & 0x7f
                return signal == 0 ? (raw >> 8) & 0xff : 128 + signal
            }
            if result < 0 { return -1 }   // not our child any more
            if Clock.nanoseconds() >= deadline { return nil }
            usleep(2_000)
        }
    }

    /// SIGTERM, then SIGKILL after `grace` seconds; reaps the child.
    @discardableResult
    public static func terminate(_ pid: pid_t, grace: Double = 5) -> Int32 {
        guard kill(pid, SIGTERM) == 0 else { return wait(pid, timeout: 0) ?? -1 }
        if let status = wait(pid, timeout: grace) { return status }
        kill(pid, SIGKILL)
        return wait(pid, timeout: 5) ?? -1
    }

    private static func currentEnvironment() -> [String: String] {
        var result: [String: String] = [:]
        var entry = environ
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            if let equals = text.firstIndex(of: "=") {
                result[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            entry += 1
        }
        return result
    }
}

/// A child process and, once it ended, its exit status.
public final class Child: @unchecked Sendable {
    public let pid: pid_t
    public private(set) var status: Int32?

    public init(_ program: String, _ arguments: [String], environment: [String: String] = [:],
                stdoutPath: String, stderrPath: String) throws {
        pid = try Spawn.start(program, arguments, environment: environment, stdoutPath: stdoutPath, stderrPath: stderrPath)
    }

    public var isRunning: Bool {
        if status != nil { return false }
        guard let ended = Spawn.wait(pid, timeout: 0) else { return true }
        status = ended
        return false
    }

    /// Waits up to `timeout` seconds, then SIGKILL; returns the exit status.
    @discardableResult
    public func wait(timeout: Double = 60) -> Int32 {
        if let status { return status }
        if let ended = Spawn.wait(pid, timeout: timeout) {
            status = ended
        } else {
            kill(pid, SIGKILL)
            status = Spawn.wait(pid, timeout: 5) ?? -1
        }
        return status!
    }

    public func signal(_ number: Int32) { if isRunning { kill(pid, number) } }
}

/// The output and status of a finished program.
public struct Outcome: Sendable {
    public let status: Int32
    public let stdout: String
    public let stderr: String
    public var output: String { stdout + stderr }
}

/// Runs a program to completion (bounded by `timeout`) and collects its output.
@discardableResult
public func runProgram(_ program: String, _ arguments: [String], environment: [String: String] = [:],
                       timeout: Double = 60) throws -> Outcome {
    let base = "/tmp/localauth-run-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
    defer {
        unlink(base + ".out")
        unlink(base + ".err")
    }
    let child = try Child(program, arguments, environment: environment, stdoutPath: base + ".out", stderrPath: base + ".err")
    let status = child.wait(timeout: timeout)
    return Outcome(status: status, stdout: readText(base + ".out"), stderr: readText(base + ".err"))
}

/// A file's contents as text ("" if it cannot be read).
public func readText(_ path: String) -> String {
    guard let file = fopen(path, "r") else { return "" }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let count = fread(&buffer, 1, buffer.count, file)
        if count == 0 { break }
        bytes += buffer[0..<count]
    }
    return String(decoding: bytes, as: UTF8.self)
}

/// A failure of the rig itself (not of what a test or benchmark measures).
public struct RigError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Monotonic time.
public enum Clock {
    public static func nanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}
