import Foundation
import Glibc
import LocalAuthShared
import RigSupport
import Synchronization

/// What the rig's bus carries, as dbus-monitor prints it: for tests that wait
/// for an event on the bus (a status signal, an error reply) instead of a
/// fixed time. Ready once the bus has made it a monitor; stopped by `stop()`
/// or when the bus goes away.
final class BusWatch: @unchecked Sendable {
    private let monitor: Child
    private let log: String

    /// `rules`: dbus match rules, e.g. "type='signal',member='EvaluationStatus'".
    init(rig: BusRig, rules: [String]) throws {
        log = rig.directory + "/watch-\(UInt32.random(in: 0...UInt32.max)).log"
        monitor = try Child("/usr/bin/dbus-monitor", ["--address", rig.address] + rules, stdoutPath: log, stderrPath: "/dev/null")
        let ready = Date().addingTimeInterval(10)
        while !readText(log).contains("NameAcquired") {
            guard monitor.isRunning, Date() < ready else { throw RigError("dbus-monitor did not start: \(readText(log))") }
            usleep(10_000)
        }
    }

    /// The lines printed so far, trimmed.
    var lines: [String] { readText(log).split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) } }

    /// How many lines so far satisfy `matches`.
    func count(_ matches: (String) -> Bool) -> Int { lines.filter(matches).count }

    /// Waits until more than `seen` lines satisfy `matches`; throws after
    /// `timeout` s or when the monitor ended (the rig is gone).
    func waitForMore(than seen: Int, timeout: Double = 60, _ what: String, _ matches: (String) -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while count(matches) <= seen {
            if Task.isCancelled { throw CancellationError() }
            guard monitor.isRunning else { throw RigError("the bus went away while waiting for \(what)") }
            guard Date() < deadline else { throw RigError("waited \(timeout) s for \(what) on the bus: \(readText(log).suffix(2000))") }
            usleep(10_000)
        }
    }

    func stop() {
        monitor.signal(SIGTERM)
        _ = monitor.wait(timeout: 5)
    }
}

/// When localauthd asks for a finger: every EvaluationStatus (`place-finger`
/// when an evaluation holds the reader, `no-match` and the retries when it
/// scans again), and every EnrollStatus but the last of an enrollment
/// (`enroll-place-finger`, `enroll-stage-passed`, the retries). Each is one
/// scan the virtual sensor should get, whichever caller it was for.
enum FingerRequests {
    static let rules = [
        "type='signal',interface='\(LocalAuthBus.interface)',member='\(LocalAuthBus.Signal.evaluationStatus)'",
        "type='signal',interface='\(LocalAuthBus.interface)',member='\(LocalAuthBus.Signal.enrollStatus)'",
    ]
    static let asks = Set(
        (EvaluationProgress.allCases.map(\.rawValue)
            + EnrollProgress.allCases.filter { !ends.contains($0) }.map(\.rawValue)).map { "string \"\($0)\"" })
    static let ends: Set<EnrollProgress> = [.completed, .failed, .duplicate, .dataFull]
    static func isAsk(_ line: String) -> Bool { asks.contains(line) }

    /// The presenter in charge. Tests run one at a time and each `present`
    /// is for the call that follows it, so a new one replaces the last: a
    /// presenter whose call ended without asking (refused at once, locked
    /// out) never feeds a later call or enrollment.
    private static let current = Mutex<Task<Void, Error>?>(nil)

    static func takeOver(_ presenter: Task<Void, Error>?) {
        current.withLock { current in
            current?.cancel()
            current = presenter
        }
    }
}

extension RigTestCase {
    /// Presents `id` to the virtual sensor each time the service asks for a
    /// finger (FingerRequests), `times` times, in the background; call it
    /// before the call that will ask. `sensor` is another reader's socket
    /// (default: the service's virtual_device); `insertFirst` first stores
    /// the print in a reader that keeps prints (virtual_device_storage).
    @discardableResult
    func present(_ id: String, times: Int = 1, sensor: String? = nil, insertFirst: Bool = false) -> Task<Void, Error> {
        var answers = Array(repeating: ["SCAN \(id)"], count: times)
        if insertFirst, times > 0 { answers[0].insert("INSERT \(id)", at: 0) }
        return answer(answers, sensor: sensor ?? service.sensorSocket)
    }

    /// Sends the commands of `answers[n]` to the virtual sensor at `sensor`
    /// when the service asks for a finger the (n+1)th time, in the background.
    func answer(_ answers: [[String]], sensor: String) -> Task<Void, Error> {
        let watch: BusWatch
        do {
            watch = try BusWatch(rig: rig, rules: FingerRequests.rules)
        } catch {
            return Task { throw error }
        }
        let presenter = Task.detached {
            defer { watch.stop() }
            for (index, commands) in answers.enumerated() {
                try watch.waitForMore(than: index, "request \(index + 1) of \(answers.count) for a finger", FingerRequests.isAsk)
                try Task.checkCancellation()
                for command in commands { try ServiceProcess.send(command, to: sensor) }
            }
        }
        FingerRequests.takeOver(presenter)
        return presenter
    }
}
