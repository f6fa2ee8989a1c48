// localauth-bench: measures localauthd beside Debian's fprintd, in one run, on
// one private bus with the real polkitd, each daemon on its own libfprint
// virtual sensor with the same enrolled virtual finger. The same client code
// (DBusCore) drives both. See BENCHMARKS.md for what each row means.
import DBusCore
import Foundation
import Glibc
import RigSupport
import LocalAuthShared

let usage = """
    Usage: localauth-bench [--json FILE] [--preflights N] [--cycles N] [--clients N]
                           [--calls-per-client N] [--startup-trials N] [--quick] [--keep]
                           [--localauthd PATH] [--signatures N]
                           [--compare-swift-app PATH] [--no-curves | --curves-only]

    Needs root (the rig starts polkitd; polkit always authorizes root, so no
    prompt or rule is involved). Starts scripts/rig.sh in a temporary directory,
    localauthd (--localauthd, or the one beside this program), and /usr/libexec/fprintd;
    stops all of them at the end. Writes the table to stdout and JSON to FILE
    (default bench-results.json, which git ignores), and the curves' plot to
    FILE with .json replaced by -curves.svg.

      --preflights N        serial preflights per daemon, and Pings (default 10000)
      --cycles N            whole evaluations per daemon (default 300)
      --clients N           concurrent callers, one connection each (default 64)
      --calls-per-client N  preflights per concurrent caller (default 200)
      --startup-trials N    starts of each daemon (default 10)
      --signatures N        P-256 signatures in the rights row (default max(200, preflights / 10));
                            fixed for callgrind's two runs, so that only the preflights differ
      --compare-swift-app PATH  localauth-app-preflight built against another revision of the
                            library: its app preflights alternate with this one's (paired rows)
      --quick               small counts, for trying the benchmark out
      --no-curves           only the table (the curves take about a minute more)
      --curves-only         only the curves (localauthd alone: no fprintd table)
      --keep                keep the temporary directory (logs) afterwards
      --localauthd PATH     the daemon to measure (`make bench` passes the release build's)
      --tpm-only            only the TPM row (TPM sign vs software sign; no rig, no root)
      --replot FILE.json    no run: the curves of an earlier run's JSON, fitted again, as the
                            table and the SVG beside that JSON (no rig, no root)

    """

struct Options {
    var json = "bench-results.json"
    var preflights = 10_000
    var cycles = 300
    var clients = 64
    var callsPerClient = 200
    var startupTrials = 10
    /// Signatures in the rights row; nil: max(200, preflights / 10).
    var signatures: Int?
    /// Another build of localauth-app-preflight, measured alternately with this one.
    var compareSwiftApp: String?
    var keep = false
    var tpmOnly = false
    var localauthd: String?
    var curves = true
    var curvesOnly = false
    var curveCounts = CurveCounts()

    /// The plot beside the JSON: bench-results.json → bench-results-curves.svg.
    var plotPath: String {
        (json.hasSuffix(".json") ? String(json.dropLast(5)) : json) + "-curves.svg"
    }

    static func parse(_ arguments: [String]) -> Options {
        var options = Options()
        var rest = arguments[...]
        func fail(_ message: String) -> Never {
            FileHandle.standardError.write(Data("localauth-bench: \(message)\n\n\(usage)".utf8))
            exit(2)
        }
        func count(_ option: String) -> Int {
            guard let text = rest.popFirst(), let value = Int(text), value > 0, value <= 1_000_000 else {
                fail("\(option) needs a count from 1 to 1000000")
            }
            return value
        }
        while let argument = rest.popFirst() {
            switch argument {
            case "--json":
                guard let file = rest.popFirst() else { fail("--json needs a file") }
                options.json = file
            case "--preflights": options.preflights = count(argument)
            case "--cycles": options.cycles = count(argument)
            case "--clients": options.clients = count(argument)
            case "--calls-per-client": options.callsPerClient = count(argument)
            case "--startup-trials": options.startupTrials = count(argument)
            case "--signatures": options.signatures = count(argument)
            case "--compare-swift-app":
                guard let path = rest.popFirst() else { fail("--compare-swift-app needs a path") }
                options.compareSwiftApp = path
            case "--quick":
                options.preflights = 1000
                options.cycles = 40
                options.callsPerClient = 40
                options.startupTrials = 3
                options.curveCounts = .quick
            case "--no-curves": options.curves = false
            case "--curves-only": options.curvesOnly = true
            case "--keep": options.keep = true
            case "--tpm-only": options.tpmOnly = true
            case "--localauthd":
                guard let path = rest.popFirst() else { fail("--localauthd needs a path") }
                options.localauthd = path
            case "-h", "--help":
                print(usage, terminator: "")
                exit(0)
            default: fail("unknown option \(argument)")
            }
        }
        return options
    }
}

/// Where things are: localauthd as given or beside this executable, rig.sh in the package.
enum Locations {
    static let executableDirectory: String = {
        let resolved = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return (resolved as NSString).deletingLastPathComponent
    }()
    nonisolated(unsafe) static var localauthd = executableDirectory + "/localauthd"
    static let fprintd = "/usr/libexec/fprintd"

    /// The package root: the nearest directory above the executable (or the
    /// current one) that has scripts/rig.sh.
    static let repository: String? = {
        for start in [executableDirectory, FileManager.default.currentDirectoryPath] {
            var url = URL(fileURLWithPath: start)
            for _ in 0..<6 {
                if FileManager.default.isExecutableFile(atPath: url.path + "/scripts/rig.sh") { return url.path }
                url.deleteLastPathComponent()
            }
        }
        return nil
    }()
}

/// The whole run.
final class Bench: Sendable {
    let options: Options
    let directory: String
    let rigScript: String
    let clientLoop = EventLoop.startThread(name: "bench-client")
    /// The concurrent callers' connections are spread over these threads.
    let callerLoops = (0..<4).map { EventLoop.startThread(name: "bench-callers-\($0)") }
    let oursSensor: VirtualSensor
    let fprintdSensor: VirtualSensor

    init(options: Options, repository: String) {
        self.options = options
        directory = "/tmp/localauth-bench-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        rigScript = repository + "/scripts/rig.sh"
        oursSensor = VirtualSensor(path: directory + "/localauthd-vfp.sock")
        fprintdSensor = VirtualSensor(path: directory + "/fprintd-vfp.sock")
    }

    var busAddress: String { "unix:path=\(directory)/system_bus_socket" }
    var oursState: String { directory + "/localauthd-state" }
    var fprintdState: String { directory + "/fprintd-state" }

    func connect(on loop: EventLoop? = nil) throws -> BusConnection {
        try BusConnection.connect(to: .address(busAddress), loop: loop ?? clientLoop)
    }

    // MARK: Daemons

    func rig(_ arguments: [String]) throws {
        let outcome = try runProgram(rigScript, arguments, timeout: 60)
        guard outcome.status == 0 else {
            throw BenchError("rig.sh \(arguments.joined(separator: " ")) failed (\(outcome.status)): \(outcome.output)")
        }
    }

    func startLocalauthd(log: String) throws -> Child {
        // An fprintd store of its own (empty): the machine's /var/lib/fprint
        // must not decide what the benchmark enrolls or matches.
        let fprintdStore = directory + "/localauthd-fprintd-store"
        mkdir(fprintdStore, 0o700)
        return try Child(Locations.localauthd, ["--state-dir", oursState, "--idle-timeout", "0",
                                                "--fprintd-store", fprintdStore],
                                  environment: ["DBUS_SYSTEM_BUS_ADDRESS": busAddress,
                                                "FP_VIRTUAL_DEVICE": oursSensor.path,
                                                "FP_DRIVERS_WHITELIST": "virtual_device"],
                                  logPath: log)
    }

    /// fprintd exactly as `rig.sh fprintd` starts it, but as our own child,
    /// so that its start-up can be timed without the script's overhead.
    func startFprintd(log: String) throws -> Child {
        try Child(Locations.fprintd, ["-t"],
                                  environment: ["DBUS_SYSTEM_BUS_ADDRESS": busAddress,
                                                "STATE_DIRECTORY": fprintdState,
                                                "FP_VIRTUAL_DEVICE": fprintdSensor.path,
                                                "FP_DRIVERS_WHITELIST": "virtual_device"],
                                  logPath: log)
    }

    func hasOwner(_ bus: BusConnection, _ name: String) async throws -> Bool {
        let reply = try await bus.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                       interface: "org.freedesktop.DBus", member: "NameHasOwner",
                                       arguments: [.string(name)], timeout: callTimeout)
        return reply.first?.bool == true
    }

    func waitForName(_ bus: BusConnection, _ name: String, present: Bool, timeout: Double = 20) async throws {
        let deadline = Clock.nanoseconds() + UInt64(timeout * 1e9)
        while try await hasOwner(bus, name) != present {
            guard Clock.nanoseconds() < deadline else {
                throw BenchError("\(name) \(present ? "did not appear" : "did not go away") in \(Int(timeout)) s")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    // MARK: Measurements

    /// `count` blocking calls on a thread of their own; durations in ns.
    func serial(_ count: Int, _ call: @escaping @Sendable () throws -> Void) async throws -> [UInt64] {
        try await onThread {
            var samples: [UInt64] = []
            samples.reserveCapacity(count)
            for _ in 0..<count {
                let start = Clock.nanoseconds()
                try call()
                samples.append(Clock.nanoseconds() - start)
            }
            return samples
        }
    }

    /// `clients` connections, each doing `calls` preflights at once with the others.
    func concurrent(_ preflight: @escaping @Sendable (BusConnection) async throws -> Void) async throws -> Concurrency {
        let outcome = try await concurrent(clients: options.clients, calls: options.callsPerClient, preflight)
        return Concurrency(clients: options.clients, callsPerClient: options.callsPerClient, seconds: outcome.seconds,
                           throughputPerSecond: outcome.throughputPerSecond, latency: Summary(nanoseconds: outcome.samples),
                           errors: outcome.errors, firstError: outcome.firstError)
    }

    struct ConcurrentOutcome {
        let samples: [UInt64]
        let errors: Int
        let firstError: String?
        let seconds: Double
        var throughputPerSecond: Double { Double(samples.count) / seconds }
    }

    func concurrent(clients: Int, calls: Int,
                    _ preflight: @escaping @Sendable (BusConnection) async throws -> Void) async throws -> ConcurrentOutcome {
        var connections: [BusConnection] = []
        for index in 0..<clients { connections.append(try connect(on: callerLoops[index % callerLoops.count])) }
        defer { for connection in connections { connection.close() } }
        // Each caller's first call is not timed (its connection's first use).
        for connection in connections { try await preflight(connection) }

        let start = Clock.nanoseconds()
        let outcomes = await withTaskGroup(of: ([UInt64], Int, String?).self) { group in
            for connection in connections {
                group.addTask {
                    var samples: [UInt64] = []
                    samples.reserveCapacity(calls)
                    var errors = 0
                    var firstError: String?
                    for _ in 0..<calls {
                        let begin = Clock.nanoseconds()
                        do {
                            try await preflight(connection)
                            samples.append(Clock.nanoseconds() - begin)
                        } catch {
                            errors += 1
                            if firstError == nil { firstError = "\(error)" }
                        }
                    }
                    return (samples, errors, firstError)
                }
            }
            var all: [([UInt64], Int, String?)] = []
            for await outcome in group { all.append(outcome) }
            return all
        }
        return ConcurrentOutcome(samples: outcomes.flatMap(\.0), errors: outcomes.reduce(0) { $0 + $1.1 },
                                 firstError: outcomes.compactMap(\.2).first,
                                 seconds: Double(Clock.nanoseconds() - start) / 1e9)
    }

    /// Process start to the first successful preflight, `trials` times.
    func startup(name: String, trial: Int, start: (String) throws -> Child,
                 preflight: @escaping @Sendable (BusConnection) async throws -> Void) async throws -> UInt64 {
        do {
            let bus = try connect()
            defer { bus.close() }
            let owners = Mailbox<String>()
            try await bus.subscribe(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus",
                                    member: "NameOwnerChanged", extraMatch: ",arg0='\(name)'") { message in
                let arguments = message.arguments
                if arguments.count == 3, let owner = arguments[2].string, !owner.isEmpty { owners.put(owner) }
            }
            let begin = Clock.nanoseconds()
            let child = try start(directory + "/startup-\(name)-\(trial).log")
            defer { child.stop() }
            guard await owners.take(timeout: 30) != nil else {
                throw BenchError("\(name) did not take its name within 30 s (trial \(trial))")
            }
            // The name may come before the daemon can answer: retry (bounded).
            var attempt = 0
            while true {
                do {
                    try await preflight(bus)
                    break
                } catch {
                    attempt += 1
                    guard attempt < 5000 else {
                        throw BenchError("\(name) never answered a preflight: \(error)")
                    }
                    try await Task.sleep(for: .milliseconds(1))
                }
            }
            let elapsed = Clock.nanoseconds() - begin
            child.stop()
            try await waitForName(bus, name, present: false)
            return elapsed
        }
    }

    // MARK: The run

    func run() async throws -> Results {
        var results = Results()
        results.machine = machineDescription()
        results.settings = ["preflights": options.preflights, "cycles": options.cycles, "clients": options.clients,
                            "callsPerClient": options.callsPerClient, "startupTrials": options.startupTrials,
                            "curvePreflights": options.curveCounts.preflights, "curveCycles": options.curveCounts.cycles,
                            "curveAppPreflights": options.curveCounts.appPreflights,
                            "curveConcurrentCallsPerRound": options.curveCounts.concurrentCallsPerRound]

        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        Cleanup.shared.add { [directory, rigScript] in
            _ = try? runProgram(rigScript, ["stop", directory], timeout: 30)
        }
        log("starting the rig in \(directory)")
        try rig(["start", directory])
        if options.curvesOnly {
            results.curves = try await runCurves(counts: options.curveCounts)
            return results
        }
        let control = try connect()

        log("starting localauthd and fprintd")
        let oursDaemon = try startLocalauthd(log: directory + "/localauthd.log")
        let oursPID = oursDaemon.pid
        try await waitForName(control, OurService.name, present: true)
        try rig(["fprintd", directory, fprintdSensor.path])
        guard let text = try? String(contentsOfFile: directory + "/fprintd.pid", encoding: .utf8),
              let fprintdPID = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw BenchError("rig.sh fprintd wrote no pid")
        }
        try await Task.sleep(for: .milliseconds(500))
        let maps = (try? String(contentsOfFile: "/proc/\(oursPID)/maps", encoding: .utf8)) ?? ""
        results.machine["localauthd Swift runtime"] = maps.contains("libswiftCore.so") ? "shared libraries" : "linked in (static)"
        let oursAfterStart = residentKiB(of: oursPID) ?? -1
        let fprintdAfterStart = residentKiB(of: fprintdPID) ?? -1

        // Separate connections: fprintd's Claim belongs to one connection.
        let ours = try connect()
        let fprintd = try await Fprintd.Client(bus: try connect())
        let device = try await Fprintd.defaultDevice(fprintd.bus)

        log("enrolling \(benchFinger) (virtual print \(benchScanID)) in both")
        try await OurService.enroll(ours, sensor: oursSensor)
        try await Fprintd.enroll(fprintd, device: device, sensor: fprintdSensor)
        try OurService.preflightBlocking(ours)
        try Fprintd.preflightBlocking(fprintd.bus)

        try await Task.sleep(for: .seconds(1))
        let oursIdle = residentKiB(of: oursPID) ?? -1
        let fprintdIdle = residentKiB(of: fprintdPID) ?? -1

        // 1. Preflight, interleaved in rounds so that drift hits all three alike.
        log("preflight: \(options.preflights) each of Ping, CanEvaluatePolicy, GetDefaultDevice+ListEnrolledFingers")
        let oursBus = ours, fprintdBus = fprintd.bus
        _ = try await serial(200) { try OurService.pingBlocking(oursBus) }
        _ = try await serial(200) { try OurService.preflightBlocking(oursBus) }
        _ = try await serial(200) { try Fprintd.preflightBlocking(fprintdBus) }
        var pings: [UInt64] = [], oursPreflights: [UInt64] = [], fprintdPreflights: [UInt64] = []
        let rounds = 10
        for round in 0..<rounds {
            let share = options.preflights / rounds + (round < options.preflights % rounds ? 1 : 0)
            pings += try await serial(share) { try OurService.pingBlocking(oursBus) }
            oursPreflights += try await serial(share) { try OurService.preflightBlocking(oursBus) }
            fprintdPreflights += try await serial(share) { try Fprintd.preflightBlocking(fprintdBus) }
        }
        results.ping = Summary(nanoseconds: pings)
        results.localauthd.preflight = Summary(nanoseconds: oursPreflights)
        results.fprintd.preflight = Summary(nanoseconds: fprintdPreflights)
        let oursAfter10k = residentKiB(of: oursPID) ?? -1
        let fprintdAfter10k = residentKiB(of: fprintdPID) ?? -1
        var oursCalls = 2 * (200 + options.preflights) + 2

        // 1b. What an app pays: the same preflight through the client libraries.
        log("app preflight: \(Bench.appPreflights) each through the Swift and the C library")
        let app = try await onThread { [self] in try appPreflights() }
        results.app = app
        for skipped in app.skipped { results.notes.append("app preflight skipped: " + skipped) }
        // Each library: 20 + N CanEvaluatePolicy, and a BiometryType Get when it first asks.
        oursCalls += [app.swift, app.c].compactMap { $0 }.count * (Bench.appPreflights + 21)
        var fprintdCalls = 2 * (200 + options.preflights) + 8

        // 2. Whole evaluations with a finger that matches at once.
        log("evaluation: \(options.cycles) cycles each")
        for _ in 0..<5 {
            try await OurService.evaluate(ours, sensor: oursSensor)
            try await Fprintd.evaluate(fprintd, device: device, sensor: fprintdSensor)
        }
        var oursCycles: [UInt64] = [], fprintdCycles: [UInt64] = []
        var oursErrors = 0, fprintdErrors = 0
        let perRound = 50
        var done = 0
        while done < options.cycles {
            let count = min(perRound, options.cycles - done)
            for _ in 0..<count {
                let begin = Clock.nanoseconds()
                do {
                    try await OurService.evaluate(ours, sensor: oursSensor)
                    oursCycles.append(Clock.nanoseconds() - begin)
                } catch {
                    oursErrors += 1
                    log("localauthd evaluation failed: \(error)")
                }
            }
            for _ in 0..<count {
                let begin = Clock.nanoseconds()
                do {
                    try await Fprintd.evaluate(fprintd, device: device, sensor: fprintdSensor)
                    fprintdCycles.append(Clock.nanoseconds() - begin)
                } catch {
                    fprintdErrors += 1
                    log("fprintd evaluation failed: \(error)")
                }
            }
            done += count
            guard oursErrors + fprintdErrors <= max(5, options.cycles / 10) else {
                throw BenchError("too many failed evaluations (localauthd \(oursErrors), fprintd \(fprintdErrors))")
            }
        }
        results.localauthd.evaluation = Summary(nanoseconds: oursCycles)
        results.localauthd.evaluationErrors = oursErrors
        results.fprintd.evaluation = Summary(nanoseconds: fprintdCycles)
        results.fprintd.evaluationErrors = fprintdErrors
        oursCalls += options.cycles + 5
        fprintdCalls += 4 * (options.cycles + 5)

        // 2a. Evaluations that open the reader (issue 22). localauthd keeps a
        // reader open only for the linger after an operation (1 s); back to
        // back, the cycles above find it open. Here each starts after the
        // linger, so it opens the device as fprintd's Claim does every cycle;
        // fprintd's cycles below get the same pause before each.
        let openCycles = max(10, options.cycles / 10)
        log("evaluation with the reader closed before: \(openCycles) cycles")
        var withOpen: [UInt64] = []
        let asked = try await OurService.statuses(ours)
        for _ in 0..<openCycles {
            try await Task.sleep(for: .milliseconds(1300))   // past the 1 s linger: closed
            let begin = Clock.nanoseconds()
            try await OurService.evaluateWhenAsked(ours, sensor: oursSensor, statuses: asked)
            withOpen.append(Clock.nanoseconds() - begin)
        }
        results.localauthd.evaluationWithOpen = Summary(nanoseconds: withOpen)
        oursCalls += openCycles
        // fprintd's cycle after the same idle pause: what waking up after a
        // pause costs (cold caches, a sleeping loop) is in both columns.
        var fprintdAfterPause: [UInt64] = []
        for _ in 0..<openCycles {
            try await Task.sleep(for: .milliseconds(1300))
            let begin = Clock.nanoseconds()
            try await Fprintd.evaluate(fprintd, device: device, sensor: fprintdSensor)
            fprintdAfterPause.append(Clock.nanoseconds() - begin)
        }
        results.fprintd.evaluationWithOpen = Summary(nanoseconds: fprintdAfterPause)
        fprintdCalls += 4 * openCycles

        // 2b. Rights (docs/RIGHTS.md, RightsBench.swift): localauthd only.
        let rightsCycles = max(20, options.cycles / 2), signatures = options.signatures ?? max(200, options.preflights / 10)
        log("rights: \(rightsCycles) secret loads beside as many evaluations, \(signatures) signatures")
        results.rights = try await measureRights(ours, cycles: rightsCycles, signatures: signatures)
        oursCalls += rightsCycles * 4 + signatures + 70

        // 3. Many callers at once.
        log("concurrency: \(options.clients) callers × \(options.callsPerClient) preflights, each daemon")
        results.localauthd.concurrency = try await concurrent { try await OurService.preflight($0) }
        results.fprintd.concurrency = try await concurrent { try await Fprintd.preflight($0) }
        oursCalls += options.clients * (options.callsPerClient + 1)
        fprintdCalls += 2 * options.clients * (options.callsPerClient + 1)

        // 4. Memory at the end.
        try await Task.sleep(for: .seconds(1))
        results.localauthd.memory = Memory(pid: oursPID, afterStartKiB: oursAfterStart, idleKiB: oursIdle,
                                           after10kKiB: oursAfter10k, atEndKiB: residentKiB(of: oursPID) ?? -1,
                                           callsAtEnd: oursCalls)
        results.fprintd.memory = Memory(pid: fprintdPID, afterStartKiB: fprintdAfterStart, idleKiB: fprintdIdle,
                                        after10kKiB: fprintdAfter10k, atEndKiB: residentKiB(of: fprintdPID) ?? -1,
                                        callsAtEnd: fprintdCalls)

        // 5. Start-up: both daemons are stopped, then started again and again.
        log("start-up: \(options.startupTrials) starts each")
        ours.close()
        fprintd.bus.close()
        oursDaemon.stop()
        kill(fprintdPID, SIGTERM)   // rig.sh started it; `rig.sh stop` checks the pid file too
        try await waitForName(control, OurService.name, present: false)
        try await waitForName(control, Fprintd.name, present: false)
        var oursStarts: [UInt64] = [], fprintdStarts: [UInt64] = []
        for trial in 0..<options.startupTrials {
            oursStarts.append(try await startup(name: OurService.name, trial: trial,
                                                start: { try self.startLocalauthd(log: $0) },
                                                preflight: { try await OurService.preflight($0) }))
            fprintdStarts.append(try await startup(name: Fprintd.name, trial: trial,
                                                   start: { try self.startFprintd(log: $0) },
                                                   preflight: { try await Fprintd.preflight($0) }))
        }
        results.localauthd.startup = Summary(nanoseconds: oursStarts)
        results.localauthd.startupTrials = oursStarts.map { Double($0) / 1e6 }
        results.fprintd.startup = Summary(nanoseconds: fprintdStarts)
        results.fprintd.startupTrials = fprintdStarts.map { Double($0) / 1e6 }
        control.close()

        results.rows = rows(results) + appRows(results.app, fprintd: results.fprintd.preflight) + rightsRows(results.rights, preflight: results.localauthd.preflight)
        let tpm = TPMBench.measure(directory: directory)
        if let row = tpm.row { results.rows.append(row) }
        results.notes.append(tpm.note)
        if options.curves {
            log("curves: localauthd alone, a fresh start on the same state")
            results.curves = try await runCurves(counts: options.curveCounts)
        }
        return results
    }

    private func machineDescription() -> [String: String] {
        var info: [String: String] = ["cpus": String(ProcessInfo.processInfo.activeProcessorCount)]
        var name = utsname()
        uname(&name)
        info["kernel"] = withUnsafeBytes(of: name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        if let cpu = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
           let line = cpu.split(separator: "\n").first(where: { $0.hasPrefix("model name") }) {
            info["cpu"] = line.split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) }
        }
        if let load = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) {
            info["loadavg"] = load.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        return info
    }
}

func rows(_ results: Results) -> [Row] {
    var rows: [Row] = []
    func ratio(_ a: Double, _ b: Double) -> Double { b > 0 ? a / b : .nan }
    let ours = results.localauthd, theirs = results.fprintd
    if let mine = ours.preflight, let floor = results.ping {
        rows.append(Row(id: "preflight-vs-ping", label: "preflight vs Ping, median", unit: "µs",
                        ours: mine.median, baseline: floor.median, baselineName: "(Ping)",
                        ratio: ratio(mine.median, floor.median), target: "≤ 1.5",
                        met: ratio(mine.median, floor.median) <= 1.5))
    }
    if let mine = ours.preflight, let base = theirs.preflight {
        rows.append(Row(id: "preflight-median", label: "preflight, median", unit: "µs", ours: mine.median,
                        baseline: base.median, baselineName: "", ratio: ratio(mine.median, base.median),
                        target: "< 1", met: mine.median < base.median))
        rows.append(Row(id: "preflight-p99", label: "preflight, p99", unit: "µs", ours: mine.p99,
                        baseline: base.p99, baselineName: "", ratio: ratio(mine.p99, base.p99), target: "", met: nil))
    }
    if let mine = ours.evaluation, let base = theirs.evaluation {
        rows.append(Row(id: "evaluation-median", label: "evaluation, median", unit: "ms", ours: mine.median / 1000,
                        baseline: base.median / 1000, baselineName: "", ratio: ratio(mine.median, base.median),
                        target: "≤ 0.5", met: ratio(mine.median, base.median) <= 0.5 && ours.evaluationErrors == 0))
        rows.append(Row(id: "evaluation-p99", label: "evaluation, p99", unit: "ms", ours: mine.p99 / 1000,
                        baseline: base.p99 / 1000, baselineName: "", ratio: ratio(mine.p99, base.p99),
                        target: "", met: nil))
    }
    if let mine = ours.evaluationWithOpen, let base = theirs.evaluationWithOpen ?? theirs.evaluation {
        rows.append(Row(id: "evaluation-open-median", label: "evaluation incl. open, median", unit: "ms",
                        ours: mine.median / 1000, baseline: base.median / 1000, baselineName: "",
                        ratio: ratio(mine.median, base.median), target: "≤ 0.5",
                        met: ratio(mine.median, base.median) <= 0.5))
        rows.append(Row(id: "evaluation-open-p99", label: "evaluation incl. open, p99", unit: "ms",
                        ours: mine.p99 / 1000, baseline: base.p99 / 1000, baselineName: "",
                        ratio: ratio(mine.p99, base.p99), target: "", met: nil))
    }
    if let mine = ours.concurrency, let base = theirs.concurrency {
        rows.append(Row(id: "concurrent-throughput", label: "\(mine.clients) callers, throughput", unit: "calls/s",
                        ours: mine.throughputPerSecond, baseline: base.throughputPerSecond, baselineName: "",
                        ratio: ratio(mine.throughputPerSecond, base.throughputPerSecond), target: "", met: nil))
        rows.append(Row(id: "concurrent-p99", label: "\(mine.clients) callers, p99", unit: "ms",
                        ours: mine.latency.p99 / 1000, baseline: base.latency.p99 / 1000, baselineName: "",
                        ratio: ratio(mine.latency.p99, base.latency.p99),
                        target: "< 10 ms, 0 errors (\(mine.errors) / \(base.errors))",
                        met: mine.latency.p99 < 10_000 && mine.errors == 0))
    }
    if let mine = ours.memory, let base = theirs.memory {
        rows.append(Row(id: "rss-idle", label: "idle RSS", unit: "MB", ours: Double(mine.idleKiB) / 1024,
                        baseline: Double(base.idleKiB) / 1024, baselineName: "",
                        ratio: ratio(Double(mine.idleKiB), Double(base.idleKiB)), target: "≤ 1",
                        met: mine.idleKiB <= base.idleKiB))
        rows.append(Row(id: "rss-after-10k", label: "RSS after \(results.settings["preflights"] ?? 0) preflights", unit: "MB",
                        ours: Double(mine.after10kKiB) / 1024, baseline: Double(base.after10kKiB) / 1024,
                        baselineName: "", ratio: ratio(Double(mine.after10kKiB), Double(base.after10kKiB)),
                        target: "", met: nil))
        rows.append(Row(id: "rss-end", label: "RSS at the end", unit: "MB",
                        ours: Double(mine.atEndKiB) / 1024, baseline: Double(base.atEndKiB) / 1024,
                        baselineName: "", ratio: ratio(Double(mine.atEndKiB), Double(base.atEndKiB)),
                        target: "", met: nil))
    }
    if let mine = ours.startup, let base = theirs.startup {
        rows.append(Row(id: "startup-median", label: "start-up to first answer, median", unit: "ms",
                        ours: mine.median / 1000, baseline: base.median / 1000, baselineName: "",
                        ratio: ratio(mine.median, base.median), target: "≤ 1", met: mine.median <= base.median))
    }
    return rows
}

// MARK: main

if CommandLine.arguments.count == 3, CommandLine.arguments[1] == "--subscribe-helper",
   let count = Int(CommandLine.arguments[2]), count > 0, count <= 64 {
    // The curves' subscribers (CurveWork.swift), as another uid.
    exit(await subscribeHelper(count: count))
}
if CommandLine.arguments.count == 3, CommandLine.arguments[1] == "--replot" {
    let json = CommandLine.arguments[2]
    let decoder = JSONDecoder()
    decoder.nonConformingFloatDecodingStrategy = .convertFromString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
    do {
        var curves = try decoder.decode(Results.self, from: Data(contentsOf: URL(fileURLWithPath: json))).curves
        for index in curves.indices { curves[index].finish() }
        print(curvesTable(curves))
        var options = Options()
        options.json = json
        try curvesPlot(curves).write(toFile: options.plotPath, atomically: true, encoding: .utf8)
        log("wrote \(options.plotPath)")
        exit(0)
    } catch {
        log("cannot replot \(json): \(error)")
        exit(1)
    }
}
let options = Options.parse(Array(CommandLine.arguments.dropFirst()))
if let localauthd = options.localauthd { Locations.localauthd = localauthd }
if options.tpmOnly {
    let directory = NSTemporaryDirectory() + "localauth-bench-tpm-\(getpid())"
    let tpm = TPMBench.measure(directory: directory)
    try? FileManager.default.removeItem(atPath: directory)
    print(tpm.row.map { table([$0]) } ?? "", tpm.note, separator: "\n")
    exit(tpm.row == nil ? 1 : 0)
}
guard geteuid() == 0 else {
    log("must run as root: the rig starts polkitd, and root is the caller polkit always authorizes")
    exit(2)
}
guard let repository = Locations.repository else {
    log("cannot find scripts/rig.sh above \(Locations.executableDirectory) or the current directory")
    exit(2)
}
guard FileManager.default.isExecutableFile(atPath: Locations.localauthd) else {
    log("no localauthd at \(Locations.localauthd): pass --localauthd, or run `make bench`")
    exit(2)
}

// Stop everything on ^C or SIGTERM too.
nonisolated(unsafe) var signalSources: [DispatchSourceSignal] = []
for number in [SIGINT, SIGTERM, SIGHUP] {
    signal(number, SIG_IGN)
    let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
    source.setEventHandler {
        log("signal \(number): stopping what was started")
        Cleanup.shared.runAll()
        exit(128 + number)
    }
    source.resume()
    signalSources.append(source)
}
// A last guard against anything unbounded: the whole run has 30 minutes.
DispatchQueue.global().asyncAfter(deadline: .now() + 1800) {
    log("the run took more than 30 minutes; stopping")
    Cleanup.shared.runAll()
    exit(3)
}

let bench = Bench(options: options, repository: repository)
var status: Int32 = 0
do {
    let results = try await bench.run()
    if !results.rows.isEmpty { print(table(results.rows)) }
    if !results.curves.isEmpty {
        print("\nCurves (localauthd alone; latencies in µs; slope: least squares of the median, p99 for callers, on the work)\n")
        print(curvesTable(results.curves))
        try curvesPlot(results.curves).write(toFile: options.plotPath, atomically: true, encoding: .utf8)
        log("wrote \(options.plotPath)")
    }
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
    try encoder.encode(results).write(to: URL(fileURLWithPath: options.json))
    log("wrote \(options.json)")
} catch {
    log("failed: \(error)")
    log("logs are in \(bench.directory)")
    status = 1
}
Cleanup.shared.runAll()
if !options.keep && status == 0 {
    try? FileManager.default.removeItem(atPath: bench.directory)
}
exit(status)
