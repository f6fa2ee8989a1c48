import Foundation
import Glibc
import RigSupport
import XCTest

/// Issue 30 item 1 on the rig: one call from any local user must not take the
/// service down. The service runs as the unit runs it (`--fprintd`, the
/// unit's capabilities, and the unit's `MemoryMax` as a memory cgroup that
/// the kernel enforces), and uid 65534 sends calls as large as the system
/// bus lets through (its max_message_size is 32 MiB) — a Properties name, a
/// method argument, on both bus names, several at once.
/// On 1c36356 one Properties.Get of fprintd's Device with a 30 MB name raised
/// the service's VmHWM from 19 MB to 618 MB (an OOM kill under the unit) and
/// sent the 30 MB back in the error.
final class LargeCallTests: RigTestCase, @unchecked Sendable {
    private var cgroup: String?
    /// The unit's MemoryMax (systemd/localauthd.service.in), in bytes.
    private static let memoryMax: Int = {
        let unit = (try? String(contentsOfFile: Paths.root + "/systemd/localauthd.service.in", encoding: .utf8)) ?? ""
        let value = unit.split(separator: "\n").first { $0.hasPrefix("MemoryMax=") }?.dropFirst("MemoryMax=".count) ?? ""
        guard value.hasSuffix("M"), let megabytes = Int(value.dropLast()) else { return 0 }
        return megabytes << 20
    }()
    /// Just under the system bus's largest message (Debian's dbus-daemon: 32 MiB with the header).
    private static let largestMessage = 33_500_000

    override func setUpWithError() throws {
        try super.setUpWithError()
        service.stop()
        let group = "/sys/fs/cgroup/memory/localauth-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        guard mkdir(group, 0o755) == 0 else { throw RigError("no memory cgroup at \(group): \(errno)") }
        cgroup = group
        XCTAssertGreaterThan(Self.memoryMax, 0, "no MemoryMax in the unit")
        try String(Self.memoryMax).write(toFile: group + "/memory.limit_in_bytes", atomically: false, encoding: .utf8)
        // The launcher moves itself into the cgroup, then becomes the service
        // with the unit's capabilities (as systemd starts it).
        let enter = ["/bin/sh", "-c", "echo $$ > \(group)/cgroup.procs && exec \"$@\"", "enter-cgroup"]
        service = try ServiceProcess(
            bus: rig, environment: ["G_DEBUG": "fatal-criticals"], arguments: ["--fprintd"],
            launcher: enter + (try CallersTests.unitLauncher()))
    }

    override func tearDown() {
        super.tearDown()
        if let cgroup { rmdir(cgroup) }
        cgroup = nil
    }

    private func status(_ key: String) -> Int {
        let status = readText("/proc/\(service.child.pid)/status")
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(key + ":") }) else { return -1 }
        return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) ?? -1
    }

    /// Starts large-calls.py as uid 65534; `counts` reads its `kind=N` lines once it ended.
    private func startLargeCalls(_ target: String, bytes: Int, count: Int) throws -> (Child, String) {
        let output = rig.directory + "/large-calls-\(target)-\(UInt32.random(in: 0...UInt32.max)).out"
        let child = try startAs(
            65534, "/usr/bin/python3", [try testScript("large-calls.py"), target, String(bytes), String(count)],
            output: output)
        return (child, output)
    }

    private func counts(_ started: (Child, String)) -> [String: Int] {
        XCTAssertEqual(started.0.wait(timeout: 200), 0, readText(started.1))
        var counts: [String: Int] = [:]
        for line in readText(started.1).split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
            if parts.count == 2 { counts[parts[0]] = Int(parts[1]) }
        }
        return counts
    }

    private let limitsExceeded = "error org.freedesktop.DBus.Error.LimitsExceeded"
    private let ourLimit = "error org.example.LocalAuth.Error.LimitExceeded"

    func testOneHugePropertiesNameIsRefusedBeforeItIsDecoded() throws {
        let before = status("VmHWM")
        let answers = counts(try startLargeCalls("fprintd-property", bytes: Self.largestMessage, count: 1))
        let after = status("VmHWM")
        print(
            "VmHWM before \(before) KiB, after a \(Self.largestMessage)-byte Properties name \(after) KiB; \(answers); "
                + "the cgroup's peak \(readText(cgroup! + "/memory.max_usage_in_bytes").trimmingCharacters(in: .whitespacesAndNewlines)) "
                + "bytes of \(Self.memoryMax)")
        XCTAssertTrue(service.isRunning, "the service died (OOM under the unit's MemoryMax?):\n\(service.log)")
        XCTAssertEqual(answers[limitsExceeded], 1, "\(answers)")
        XCTAssertLessThan(answers["longest-error"] ?? .max, 1024, "the name came back in the error: \(answers)")
        // What libdbus holds to read one message (its buffer and the
        // message's copy), and nothing of ours: on 1c36356 +600 MB.
        XCTAssertLessThan(after - before, (2 * Self.largestMessage + (8 << 20)) / 1024, "VmHWM grew from \(before) to \(after) KiB")
    }

    /// Large calls of different sizes, one after another and then several at
    /// once, cost no more than two copies of the largest (libdbus's buffer and
    /// the message's copy) and leave nothing resident once refused. On c686a26
    /// the first large body freed raised glibc's mmap threshold to its size,
    /// so the next smaller bodies came from the heap and stayed resident after
    /// their refusal (RSS +28 MB for good after the 29 MB call), and the next
    /// large call came on top of that: VmHWM +93.5 MB (2.86 x 33.5 MB) after
    /// these three calls alone, 3 and 4 copies with several at once.
    func testLargeCallsOfManySizesCostTwoCopiesAtMostAndLeaveNothingResident() throws {
        let (rssBefore, hwmBefore) = (status("VmRSS"), status("VmHWM"))
        XCTAssertEqual(counts(try startLargeCalls("fprintd-property", bytes: 30_000_000, count: 1))[limitsExceeded], 1)
        XCTAssertEqual(counts(try startLargeCalls("fprintd-method", bytes: 29_000_000, count: 1))[limitsExceeded], 1)
        let rssBetween = status("VmRSS")
        XCTAssertEqual(counts(try startLargeCalls("fprintd-property", bytes: Self.largestMessage, count: 1))[limitsExceeded], 1)
        let hwmBetween = status("VmHWM")
        // Four sizes at once, two of each: a smaller body's hole is followed by a larger body.
        let sizes = [
            ("fprintd-method", 30_500_000), ("localauth", 31_500_000), ("fprintd-manager", 32_500_000),
            ("fprintd-property", 33_400_000),
        ]
        let started = try sizes.map { try startLargeCalls($0.0, bytes: $0.1, count: 2) }
        for ((target, _), child) in zip(sizes, started) {
            let answers = counts(child)
            XCTAssertEqual((answers[limitsExceeded] ?? 0) + (answers[ourLimit] ?? 0), 2, "\(target): \(answers)")
        }
        let (rssAfter, hwmAfter) = (status("VmRSS"), status("VmHWM"))
        print(
            "VmRSS \(rssBefore) KiB before, \(rssBetween) after a 30 MB and a 29 MB call, \(rssAfter) after 8 more at once; "
                + "VmHWM \(hwmBefore) -> \(hwmBetween) after a 33.5 MB call -> \(hwmAfter) KiB")
        XCTAssertTrue(service.isRunning, "the service died (OOM under the unit's MemoryMax?):\n\(service.log)")
        // What is left of refused calls: next to nothing beside the message.
        XCTAssertLessThan(rssBetween - rssBefore, Self.largestMessage / 8 / 1024, "RSS grew from \(rssBefore) to \(rssBetween) KiB")
        XCTAssertLessThan(rssAfter - rssBefore, Self.largestMessage / 8 / 1024, "RSS grew from \(rssBefore) to \(rssAfter) KiB")
        XCTAssertLessThan(hwmBetween - hwmBefore, (2 * Self.largestMessage + (8 << 20)) / 1024, "VmHWM grew from \(hwmBefore) to \(hwmBetween) KiB")
        XCTAssertLessThan(hwmAfter - hwmBefore, (2 * Self.largestMessage + (8 << 20)) / 1024, "VmHWM grew from \(hwmBefore) to \(hwmAfter) KiB")
    }

    /// Several large calls at once, on every object of both names: libdbus
    /// holds at most `ServiceLimits.bufferedIncomingBytes` of them beyond the
    /// one it reads, each is refused unread, and the service stays up.
    func testConcurrentHugeCallsOnBothNamesStayUnderTheUnitsMemory() throws {
        let before = status("VmHWM")
        let targets = ["fprintd-property", "fprintd-method", "fprintd-manager", "localauth"]
        let started = try targets.map { try startLargeCalls($0, bytes: Self.largestMessage, count: 2) }
        var answers: [String: [String: Int]] = [:]
        for (target, child) in zip(targets, started) { answers[target] = counts(child) }
        let after = status("VmHWM")
        print(
            "VmHWM before \(before) KiB, after 8 concurrent \(Self.largestMessage)-byte calls \(after) KiB; \(answers); "
                + "the cgroup's peak \(readText(cgroup! + "/memory.max_usage_in_bytes").trimmingCharacters(in: .whitespacesAndNewlines)) "
                + "bytes of \(Self.memoryMax)")
        XCTAssertTrue(service.isRunning, "the service died (OOM under the unit's MemoryMax?):\n\(service.log)")
        // Each is refused: by the service, or by the bus while the service
        // reads no more (its queue for us is full: LimitsExceeded too).
        for target in targets {
            let refused = (answers[target]?[limitsExceeded] ?? 0) + (answers[target]?[ourLimit] ?? 0)
            XCTAssertEqual(refused, 2, "\(target): \(answers)")
        }
        for (target, counts) in answers {
            XCTAssertLessThan(counts["longest-error"] ?? .max, 1024, "\(target): an argument came back in the error")
        }
        // One message read at a time: no more than for a single one.
        XCTAssertLessThan(after - before, (2 * Self.largestMessage + (8 << 20)) / 1024, "VmHWM grew from \(before) to \(after) KiB")
        // Alone, a large call to org.example.LocalAuth keeps our contract's name.
        XCTAssertEqual(counts(try startLargeCalls("localauth", bytes: 1 << 20, count: 1))[ourLimit], 1)
        // Still serving everyone.
        let preflight = try callService("CanEvaluatePolicy", "u", ["1"])
        XCTAssertFalse(preflight.output.contains("LimitExceeded"), preflight.output)
    }
}
