import DBusCore
import Foundation
import Glibc
import LocalAuthShared
import RigSupport

// The curves' measurements (Curves.swift has the model, CurveWork.swift the
// work they grow). localauthd only: a daemon of its own, started after the
// table on the same state (root's finger enrolled), stopped at the end.

/// Counts of the curves' measurements (--quick makes them smaller).
struct CurveCounts: Sendable {
    var preflights = 2000
    var cycles = 100
    var appPreflights = 500
    var concurrentCallsPerRound = 1536
    var users = [1, 100, 1000, 10_000]
    var subscribers = [0, 16, 256]
    var rights = [1, 100, 1000]
    /// Not 256: the bus allows 256 connections per uid (dbus-daemon's
    /// system-bus default), and the service, polkitd, the logind and UPower
    /// stand-ins and the bench's own connections are root's too.
    var callers = [1, 8, 64, 240]

    static let quick = CurveCounts(
        preflights: 400, cycles: 20, appPreflights: 200, concurrentCallsPerRound: 384,
        users: [1, 100, 1000], subscribers: [0, 16, 256], rights: [1, 100, 250],
        callers: [1, 8, 64, 240])
}

extension Bench {
    static let curveRounds = 5

    /// Samples taken in rounds at one point: the statistic of each round is kept for the noise.
    func point(
        x: Int, statistic: String = "median", rounds: Int = curveRounds,
        _ round: (Int) async throws -> (samples: [UInt64], errors: Int)
    ) async throws -> CurvePoint {
        var all: [UInt64] = []
        var perRound: [Double] = []
        var errors = 0
        for index in 0..<rounds {
            let outcome = try await round(index)
            all += outcome.samples
            errors += outcome.errors
            let summary = Summary(nanoseconds: outcome.samples)
            perRound.append(statistic == "p99" ? summary.p99 : summary.median)
        }
        return CurvePoint(x: x, summary: Summary(nanoseconds: all), rounds: perRound, errors: errors)
    }

    func preflightPoint(_ bus: BusConnection, x: Int, counts: CurveCounts) async throws -> CurvePoint {
        _ = try await serial(50) { try OurService.preflightBlocking(bus) }
        return try await point(x: x) { _ in
            (try await serial(counts.preflights / Self.curveRounds) { try OurService.preflightBlocking(bus) }, 0)
        }
    }

    func evaluationPoint(_ bus: BusConnection, x: Int, counts: CurveCounts, scanID: String = benchScanID) async throws -> CurvePoint {
        try await point(x: x) { _ in
            var samples: [UInt64] = []
            var errors = 0
            for _ in 0..<max(1, counts.cycles / Self.curveRounds) {
                let begin = Clock.nanoseconds()
                do {
                    try await OurService.evaluate(bus, sensor: oursSensor, scanID: scanID)
                    samples.append(Clock.nanoseconds() - begin)
                } catch {
                    errors += 1
                    log("curve evaluation failed: \(error)")
                    guard errors <= 3 else { throw BenchError("curve evaluations keep failing: \(error)") }
                }
            }
            return (samples, errors)
        }
    }

    /// The app's whole preflight through the Swift library (AppBench.swift's
    /// helper), in rounds cut from one run of the helper process.
    func appPreflightPoint(x: Int, counts: CurveCounts) throws -> CurvePoint? {
        let helper = Locations.executableDirectory + "/localauth-app-preflight"
        guard FileManager.default.isExecutableFile(atPath: helper) else { return nil }
        let samples = try durations(of: helper, count: counts.appPreflights, environment: ["DBUS_SYSTEM_BUS_ADDRESS": busAddress])
        let size = max(1, samples.count / Self.curveRounds)
        let rounds = stride(from: 0, to: samples.count, by: size).map { Summary(nanoseconds: Array(samples[$0..<min(samples.count, $0 + size)])).median }
        return CurvePoint(x: x, summary: Summary(nanoseconds: samples), rounds: rounds)
    }

    // MARK: The run

    func runCurves(counts: CurveCounts) async throws -> [Curve] {
        let started = Clock.nanoseconds()
        let daemon = try startLocalauthd(log: directory + "/curves-localauthd.log")
        defer { daemon.stop() }
        let control = try connect()
        defer { control.close() }
        try await waitForName(control, OurService.name, present: true)
        let ours = try connect()
        defer { ours.close() }
        if (try? OurService.preflightBlocking(ours)) == nil {
            log("curves: enrolling \(benchFinger)")
            try await enroll(ours, finger: benchFinger)
        }
        for _ in 0..<5 { try await OurService.evaluate(ours, sensor: oursSensor) }

        var curves: [Curve] = []
        var lap = Clock.nanoseconds()
        func timed(_ name: String, _ more: [Curve]) {
            curves += more
            log("curves: \(name) took \(String(format: "%.1f", Double(Clock.nanoseconds() - lap) / 1e9)) s")
            lap = Clock.nanoseconds()
        }
        timed("callers", try await callerCurves(counts: counts))
        timed("subscribers", try await subscriberCurves(ours, counts: counts))
        timed("users", try await userCurves(ours, counts: counts))
        timed("rights", try await rightsCurves(ours, counts: counts))
        timed("prints", try await printCurves(ours, counts: counts))
        for index in curves.indices { curves[index].finish() }
        log("curves took \(String(format: "%.1f", Double(Clock.nanoseconds() - started) / 1e9)) s")
        return curves
    }

    /// Concurrent callers: each its own connection, all at once; p99 of a preflight.
    func callerCurves(counts: CurveCounts) async throws -> [Curve] {
        var curve = Curve(
            id: "callers-preflight", call: "preflight", axis: "concurrent callers", per: 1,
            perName: "caller", statistic: "p99", shouldBeFlat: false,
            note: "p99 must grow with callers once they outnumber the cores (queueing); throughput should not fall")
        for clients in counts.callers {
            log("curves: \(clients) concurrent callers")
            let calls = max(6, counts.concurrentCallsPerRound / clients)
            var throughputs: [Double] = []
            var point = try await point(x: clients, statistic: "p99", rounds: 3) { _ in
                let outcome = try await concurrent(clients: clients, calls: calls) { try await OurService.preflight($0) }
                throughputs.append(outcome.throughputPerSecond)
                if let first = outcome.firstError { log("curves: \(clients) callers: \(outcome.errors) errors, e.g. \(first)") }
                return (outcome.samples, outcome.errors)
            }
            point.throughput = throughputs.reduce(0, +) / Double(throughputs.count)
            curve.points.append(point)
        }
        return [curve]
    }

    /// EnvironmentChanged subscribers (other uids' connections) while root calls.
    func subscriberCurves(_ ours: BusConnection, counts: CurveCounts) async throws -> [Curve] {
        let axis = "LAEnvironment subscribers"
        var preflight = Curve(id: "subscribers-preflight", call: "preflight", axis: axis, per: 100, perName: "subscribers", shouldBeFlat: true)
        var app = Curve(
            id: "subscribers-app-preflight", call: "app preflight (Swift library)", axis: axis, per: 100,
            perName: "subscribers", shouldBeFlat: true)
        var evaluation = Curve(id: "subscribers-evaluation", call: "evaluation", axis: axis, per: 100, perName: "subscribers", shouldBeFlat: true)
        let perUID = ServiceLimits.environmentSubscribersPerUser
        let (accounts, fake) = subscriberAccounts(((counts.subscribers.max() ?? 0) + perUID - 1) / perUID)
        if fake > 0 { preflight.note = "\(fake) of the subscribing uids had no account on this machine" }
        var helpers: [Child] = []
        defer { for helper in helpers { helper.stop() } }
        for total in counts.subscribers {
            while helpers.count * perUID < total {
                let index = helpers.count
                helpers.append(try await startSubscribers(accounts[index], perUID: min(perUID, total - index * perUID), index: index))
            }
            log("curves: \(total) subscribers")
            preflight.points.append(try await preflightPoint(ours, x: total, counts: counts))
            if let point = try await onThread({ [self] in try appPreflightPoint(x: total, counts: counts) }) { app.points.append(point) }
            evaluation.points.append(try await evaluationPoint(ours, x: total, counts: counts))
        }
        return [preflight, app, evaluation]
    }

    /// Other users with prints in the store (fake uids), while root calls.
    func userCurves(_ ours: BusConnection, counts: CurveCounts) async throws -> [Curve] {
        let axis = "users with prints"
        var preflight = Curve(id: "users-preflight", call: "preflight", axis: axis, per: 1000, perName: "users", shouldBeFlat: true)
        var app = Curve(
            id: "users-app-preflight", call: "app preflight (Swift library)", axis: axis, per: 1000,
            perName: "users", shouldBeFlat: true)
        var evaluation = Curve(id: "users-evaluation", call: "evaluation", axis: axis, per: 1000, perName: "users", shouldBeFlat: true)
        let template = try rootPrint()
        var written = 0
        defer { removeFakePrints(count: written) }
        for users in counts.users {
            while written + 1 < users {
                try writeFakePrint(uid: Self.fakeUID(written), template: template)
                written += 1
            }
            log("curves: \(users) users with prints")
            preflight.points.append(try await preflightPoint(ours, x: users, counts: counts))
            if let point = try await onThread({ [self] in try appPreflightPoint(x: users, counts: counts) }) { app.points.append(point) }
            evaluation.points.append(try await evaluationPoint(ours, x: users, counts: counts))
        }
        return [preflight, app, evaluation]
    }

    /// Rights of root (software keys): ListRights of one app, LoadSecret with a held authorization.
    func rightsCurves(_ ours: BusConnection, counts: CurveCounts) async throws -> [Curve] {
        let axis = "rights per user"
        var list = Curve(
            id: "rights-list", call: "ListRights (one app)", axis: axis, per: 1000, perName: "rights",
            shouldBeFlat: false, note: "lists the rights of the caller's app: min(rights, 250) entries, 4 apps of 250 at 1,000")
        var load = Curve(id: "rights-load", call: "LoadSecret (authorized)", axis: axis, per: 1000, perName: "rights", shouldBeFlat: true)
        var authorizeLoad = Curve(
            id: "rights-authorize-load", call: "AuthorizeRight + LoadSecret", axis: axis, per: 1000,
            perName: "rights", shouldBeFlat: true)
        try await removeAllRights(ours, app: OurRights.appID)
        var saved = 0
        for rights in counts.rights {
            let savingStarted = Clock.nanoseconds()
            while saved < rights {
                try await saveCurveRight(ours, number: saved)
                saved += 1
            }
            log("curves: \(rights) rights (saving took \(Int(Double(Clock.nanoseconds() - savingStarted) / 1e6)) ms)")
            let app = Self.curveApp(0)
            let identifier = Self.rightIdentifier(min(rights, Self.rightsPerApp) - 1)
            let options: DBusValue = .dictionary([LocalAuthRightsBus.Option.appID: .string(app)])
            let listed = min(rights, Self.rightsPerApp)
            let listCalls = max(20, counts.preflights / 10)
            list.points.append(
                try await point(x: rights) { _ in
                    (
                        try await serial(listCalls / Self.curveRounds) {
                            let reply = try ours.callBlocking(
                                destination: OurService.name, path: OurService.path, interface: OurService.interface,
                                member: LocalAuthRightsBus.Method.listRights, arguments: [options], timeout: callTimeout)
                            guard case .array(_, let entries)? = reply.first, entries.count == listed else {
                                throw BenchError("ListRights listed \(reply.first.map { "\($0)".prefix(80) } ?? "nothing"), not \(listed)")
                            }
                        }, 0
                    )
                })
            let handle = try await authorizeCurveRight(ours, app: app, identifier: identifier)
            load.points.append(
                try await point(x: rights) { _ in
                    (try await serial(counts.preflights / Self.curveRounds) { try self.loadSecretBlocking(ours, handle: handle) }, 0)
                })
            try await OurRights.deauthorize(ours, handle)
            authorizeLoad.points.append(
                try await point(x: rights) { _ in
                    var samples: [UInt64] = []
                    for _ in 0..<max(1, counts.cycles / 2 / Self.curveRounds) {
                        let begin = Clock.nanoseconds()
                        let held = try await authorizeCurveRight(ours, app: app, identifier: identifier)
                        try await loadSecret(ours, handle: held)
                        samples.append(Clock.nanoseconds() - begin)
                        try await OurRights.deauthorize(ours, held)
                    }
                    return (samples, 0)
                })
        }
        for index in 0..<(saved + Self.rightsPerApp - 1) / Self.rightsPerApp { try? await removeAllRights(ours, app: Self.curveApp(index)) }
        return [list, load, authorizeLoad]
    }

    func authorizeCurveRight(_ bus: BusConnection, app: String, identifier: String) async throws -> String {
        async let reply = bus.call(
            destination: OurService.name, path: OurService.path, interface: OurService.interface,
            member: LocalAuthRightsBus.Method.authorizeRight,
            arguments: [
                .string(identifier), .string("localauth-bench"),
                .dictionary([LocalAuthRightsBus.Option.appID: .string(app)]),
            ],
            timeout: callTimeout)
        try oursSensor.send("SCAN \(benchScanID)", acknowledged: false)
        guard let handle = try await reply.first?.string else { throw BenchError("AuthorizeRight gave no handle") }
        return handle
    }

    func loadSecret(_ bus: BusConnection, handle: String) async throws {
        let secret = try await bus.call(
            destination: OurService.name, path: OurService.path, interface: OurService.interface,
            member: LocalAuthRightsBus.Method.loadSecret, arguments: [.string(handle)],
            timeout: callTimeout)
        guard secret.first?.byteArray?.count == 32 else { throw BenchError("LoadSecret answered \(secret)") }
    }

    func loadSecretBlocking(_ bus: BusConnection, handle: String) throws {
        let secret = try bus.callBlocking(
            destination: OurService.name, path: OurService.path, interface: OurService.interface,
            member: LocalAuthRightsBus.Method.loadSecret, arguments: [.string(handle)],
            timeout: callTimeout)
        guard secret.first?.byteArray?.count == 32 else { throw BenchError("LoadSecret answered \(secret)") }
    }

    /// Root's own prints, 1 and 10 (all fingers), measured in alternating
    /// rounds: the 9 other fingers' files are moved out of the store and back
    /// between rounds (the service reads the directories on every call), so
    /// that drift in this shared machine hits both points alike.
    ///
    /// libfprint's virtual_device can only verify (no identify): each scan is
    /// compared with one print, first the finger that matched last time
    /// (Evaluation/FingerprintScan.swift), so the realistic scan is that finger's (a person's
    /// usual one). Another finger costs one more touch per print tried before
    /// it (BENCHMARKS.md, "Curves").
    func printCurves(_ ours: BusConnection, counts: CurveCounts) async throws -> [Curve] {
        let axis = "prints per user"
        // A preflight needs one usable print; the store is checked print by print (one lstat each).
        var preflight = Curve(id: "prints-preflight", call: "preflight", axis: axis, per: 1, perName: "print", shouldBeFlat: true)
        var app = Curve(
            id: "prints-app-preflight", call: "app preflight (Swift library)", axis: axis, per: 1, perName: "print",
            shouldBeFlat: true)
        var evaluation = Curve(
            id: "prints-evaluation", call: "evaluation", axis: axis, per: 1, perName: "print", shouldBeFlat: true,
            note: "verify-only reader: the finger that matched last is tried first, one print per scan")
        for finger in Self.otherFingers { try await enroll(ours, finger: finger) }
        let folder = oursState + "/prints/0/" + (try rootPrint().relative as NSString).deletingLastPathComponent
        let aside = oursState + "/prints-aside"
        mkdir(aside, 0o700)
        func show(all: Bool) throws {
            for finger in Self.otherFingers {
                let (from, to) = all ? (aside + "/" + finger, folder + "/" + finger) : (folder + "/" + finger, aside + "/" + finger)
                guard rename(from, to) == 0 else { throw BenchError("rename \(from) → \(to): \(String(cString: strerror(errno)))") }
            }
        }
        defer { try? show(all: true) }
        let points = [1, 1 + Self.otherFingers.count]
        var samples: [String: [Int: [[UInt64]]]] = [:]
        let helper = Locations.executableDirectory + "/localauth-app-preflight"
        let withApp = FileManager.default.isExecutableFile(atPath: helper)
        try show(all: false)
        var showing = 1
        for round in 0..<Self.curveRounds {
            log("curves: prints per user, round \(round + 1) of \(Self.curveRounds)")
            for prints in round % 2 == 0 ? points : points.reversed() {
                if prints != showing {
                    try show(all: prints > 1)
                    showing = prints
                }
                _ = try await serial(20) { try OurService.preflightBlocking(ours) }
                samples["preflight", default: [:]][prints, default: []].append(
                    try await serial(counts.preflights / Self.curveRounds) { try OurService.preflightBlocking(ours) })
                if withApp {
                    let count = counts.appPreflights / Self.curveRounds
                    samples["app", default: [:]][prints, default: []].append(
                        try await onThread { [self] in
                            try durations(of: helper, count: count, environment: ["DBUS_SYSTEM_BUS_ADDRESS": busAddress])
                        })
                }
                var cycles: [UInt64] = []
                for _ in 0..<max(1, counts.cycles / Self.curveRounds) {
                    let begin = Clock.nanoseconds()
                    try await OurService.evaluate(ours, sensor: oursSensor)
                    cycles.append(Clock.nanoseconds() - begin)
                }
                samples["evaluation", default: [:]][prints, default: []].append(cycles)
            }
        }
        func fill(_ curve: inout Curve, _ key: String) {
            for prints in points {
                guard let rounds = samples[key]?[prints] else { continue }
                curve.points.append(
                    CurvePoint(
                        x: prints, summary: Summary(nanoseconds: rounds.flatMap { $0 }),
                        rounds: rounds.map { Summary(nanoseconds: $0).median }))
            }
        }
        fill(&preflight, "preflight")
        fill(&app, "app")
        fill(&evaluation, "evaluation")
        return withApp ? [preflight, app, evaluation] : [preflight, evaluation]
    }
}
