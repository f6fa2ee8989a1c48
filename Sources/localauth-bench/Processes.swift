import Foundation
import Glibc
import Synchronization

/// A failure of the benchmark itself (not of a measured call).
struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Monotonic time in nanoseconds (CLOCK_MONOTONIC).
@inline(__always)
func monotonicNanos() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

func log(_ text: String) {
    FileHandle.standardError.write(Data("localauth-bench: \(text)\n".utf8))
}

/// Children started with posix_spawn, output to a file (never a pipe: rig.sh
/// leaves daemons running that would hold a pipe open). Foundation's Process
/// is not used, as in the end-to-end tests.
enum Spawn {
    static func start(_ program: String, _ arguments: [String], environment: [String: String] = [:],
                      logPath: String) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, logPath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let merged = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let argv = ([program] + arguments).map { strdup($0) } + [nil]
        let envp = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        // Children start with no signal blocked and default handlers.
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
        guard result == 0 else { throw BenchError("cannot start \(program): \(String(cString: strerror(result)))") }
        return pid
    }

    /// Waits up to `timeout` seconds for a child of ours; nil if it still runs.
    static func wait(_ pid: pid_t, timeout: Double) -> Int32? {
        let deadline = monotonicNanos() + UInt64(timeout * 1e9)
        while true {
            var raw: Int32 = 0
            let result = waitpid(pid, &raw, WNOHANG)
            if result == pid {
                let signal = raw & 0x7f
                return signal == 0 ? (raw >> 8) & 0xff : 128 + signal
            }
            if result < 0 { return -1 }   // not our child any more
            if monotonicNanos() > deadline { return nil }
            usleep(2_000)
        }
    }

    /// SIGTERM, then SIGKILL after `grace` seconds; reaps the child.
    static func terminate(_ pid: pid_t, grace: Double = 5) {
        guard kill(pid, SIGTERM) == 0 else {
            _ = wait(pid, timeout: 0)
            return
        }
        if wait(pid, timeout: grace) == nil {
            kill(pid, SIGKILL)
            _ = wait(pid, timeout: 5)
        }
    }

    /// Runs a program to completion (bounded); returns its status and output.
    static func run(_ program: String, _ arguments: [String], logPath: String,
                    timeout: Double = 60) throws -> (status: Int32, output: String) {
        let offset = (try? FileManager.default.attributesOfItem(atPath: logPath)[.size] as? Int) ?? 0
        let pid = try start(program, arguments, logPath: logPath)
        guard let status = wait(pid, timeout: timeout) else {
            kill(pid, SIGKILL)
            _ = wait(pid, timeout: 5)
            throw BenchError("\(program) \(arguments.joined(separator: " ")) did not finish in \(Int(timeout)) s")
        }
        let data = FileManager.default.contents(atPath: logPath) ?? Data()
        return (status, String(decoding: data.dropFirst(offset), as: UTF8.self))
    }
}

/// Resident memory of a process, from /proc/PID/status (VmRSS), in KiB.
func residentKiB(of pid: pid_t) -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
    for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
    }
    return nil
}

/// What to undo at exit, also on SIGINT/SIGTERM: child pids and the rig.
final class Cleanup: Sendable {
    static let shared = Cleanup()
    private let actions = Mutex<[(id: Int, action: @Sendable () -> Void)]>([])
    private let nextID = Atomic<Int>(0)

    @discardableResult
    func add(_ action: @escaping @Sendable () -> Void) -> Int {
        let id = nextID.add(1, ordering: .relaxed).newValue
        actions.withLock { $0.append((id, action)) }
        return id
    }

    /// Runs one registered action now and forgets it.
    func run(_ id: Int) {
        let action = actions.withLock { list -> (@Sendable () -> Void)? in
            guard let index = list.firstIndex(where: { $0.id == id }) else { return nil }
            return list.remove(at: index).action
        }
        action?()
    }

    /// Runs everything still registered, newest first.
    func runAll() {
        let all = actions.withLock { list in
            defer { list.removeAll() }
            return list
        }
        for entry in all.reversed() { entry.action() }
    }
}

/// A daemon we started: stopped (SIGTERM, then SIGKILL) by `stop()` or, at
/// the latest, by the exit cleanup; never signalled after it was reaped.
final class Child: Sendable {
    let pid: pid_t
    private let cleanupID: Int

    init(_ program: String, _ arguments: [String], environment: [String: String], logPath: String) throws {
        let pid = try Spawn.start(program, arguments, environment: environment, logPath: logPath)
        self.pid = pid
        cleanupID = Cleanup.shared.add { Spawn.terminate(pid) }
    }

    func stop() { Cleanup.shared.run(cleanupID) }
}
