import Foundation
import Glibc
import RigSupport
import Synchronization

/// A failure of the benchmark itself (not of a measured call).
typealias BenchError = RigError

func log(_ text: String) {
    FileHandle.standardError.write(Data("localauth-bench: \(text)\n".utf8))
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
        let pid = try Spawn.start(program, arguments, environment: environment, stdoutPath: logPath, stderrPath: logPath)
        self.pid = pid
        cleanupID = Cleanup.shared.add { Spawn.terminate(pid) }
    }

    func stop() { Cleanup.shared.run(cleanupID) }
}
