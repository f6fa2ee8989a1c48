import DBusCore
import Foundation
import LocalAuthShared
import RigSupport

// Rights rows (docs/RIGHTS.md): loading a secret (AuthorizeRight with a
// finger, then LoadSecret: until the app has its secret; the Deauthorize
// that follows is not timed) against a plain evaluation, and a P-256
// signature made by the service with a held authorization. localauthd only:
// fprintd has no rights.

struct RightsResults: Codable, Sendable {
    var evaluation: Summary?
    var loadSecret: Summary?
    var sign: Summary?
    var errors = 0
}

enum OurRights {
    static let identifier = "bench-secret"
    static let appID = "org.example.LocalAuthBench"
    static let options: DBusValue = .dictionary([LocalAuthRightsBus.Option.appID: .string(appID)])

    static func save(_ bus: BusConnection) async throws {
        let options: DBusValue = .dictionary([LocalAuthRightsBus.Option.appID: .string("org.example.LocalAuthBench"),
                                              LocalAuthRightsBus.Option.secret: .bytes(Array(repeating: 7, count: 32))])
        _ = try await bus.call(destination: OurService.name, path: OurService.path, interface: OurService.interface,
                               member: LocalAuthRightsBus.Method.saveRight,
                               arguments: [.string(identifier), .string(RightRequirementName.biometry.rawValue), options],
                               timeout: callTimeout)
    }

    /// AuthorizeRight (the SCAN goes to the sensor right after the call); the handle.
    static func authorize(_ bus: BusConnection, sensor: VirtualSensor) async throws -> String {
        async let reply = bus.call(destination: OurService.name, path: OurService.path, interface: OurService.interface,
                                   member: LocalAuthRightsBus.Method.authorizeRight,
                                   arguments: [.string(identifier), .string("localauth-bench"), options],
                                   timeout: callTimeout)
        try sensor.send("SCAN \(benchScanID)", acknowledged: false)
        guard let handle = try await reply.first?.string else { throw BenchError("AuthorizeRight gave no handle") }
        return handle
    }

    /// What an app does to load its secret: authorize, then load; the handle
    /// (to deauthorize once the app has its secret: not part of the wait).
    static func loadSecret(_ bus: BusConnection, sensor: VirtualSensor) async throws -> String {
        let handle = try await authorize(bus, sensor: sensor)
        let secret = try await bus.call(destination: OurService.name, path: OurService.path, interface: OurService.interface,
                                        member: LocalAuthRightsBus.Method.loadSecret, arguments: [.string(handle)],
                                        timeout: callTimeout)
        guard secret.first?.byteArray?.count == 32 else { throw BenchError("LoadSecret answered \(secret)") }
        return handle
    }

    static func deauthorize(_ bus: BusConnection, _ handle: String) async throws {
        _ = try await bus.call(destination: OurService.name, path: OurService.path, interface: OurService.interface,
                               member: LocalAuthRightsBus.Method.deauthorize, arguments: [.string(handle)],
                               timeout: callTimeout)
    }

    static func signBlocking(_ bus: BusConnection, handle: String) throws {
        let reply = try bus.callBlocking(destination: OurService.name, path: OurService.path, interface: OurService.interface,
                                         member: LocalAuthRightsBus.Method.sign,
                                         arguments: [.string(handle), .string("algid:sign:ECDSA:message-X962:SHA256"),
                                                     .bytes(Array("localauth-bench".utf8))],
                                         timeout: callTimeout)
        guard let signature = reply.first?.byteArray, signature.count >= 8 else { throw BenchError("Sign answered \(reply)") }
    }
}

extension Bench {
    /// Interleaved rounds of plain evaluations and secret loads, then signatures.
    func measureRights(_ ours: BusConnection, cycles: Int, signatures: Int) async throws -> RightsResults {
        var results = RightsResults()
        try await OurRights.save(ours)
        for _ in 0..<3 { try await OurRights.deauthorize(ours, try await OurRights.loadSecret(ours, sensor: oursSensor)) }
        var evaluations: [UInt64] = [], loads: [UInt64] = []
        var done = 0
        while done < cycles {
            let count = min(25, cycles - done)
            for _ in 0..<count {
                let begin = Clock.nanoseconds()
                do {
                    try await OurService.evaluate(ours, sensor: oursSensor)
                    evaluations.append(Clock.nanoseconds() - begin)
                } catch {
                    results.errors += 1
                    log("evaluation failed: \(error)")
                }
            }
            for _ in 0..<count {
                let begin = Clock.nanoseconds()
                do {
                    let handle = try await OurRights.loadSecret(ours, sensor: oursSensor)
                    loads.append(Clock.nanoseconds() - begin)
                    try await OurRights.deauthorize(ours, handle)
                } catch {
                    results.errors += 1
                    log("loading the secret failed: \(error)")
                }
            }
            done += count
            guard results.errors <= max(5, cycles / 10) else { throw BenchError("too many failed rights cycles (\(results.errors))") }
        }
        results.evaluation = Summary(nanoseconds: evaluations)
        results.loadSecret = Summary(nanoseconds: loads)
        let handle = try await OurRights.authorize(ours, sensor: oursSensor)
        let oursBus = ours
        _ = try await serial(50) { try OurRights.signBlocking(oursBus, handle: handle) }
        results.sign = Summary(nanoseconds: try await serial(signatures) { try OurRights.signBlocking(oursBus, handle: handle) })
        try await OurRights.deauthorize(ours, handle)
        return results
    }
}

func rightsRows(_ rights: RightsResults?, preflight: Summary?) -> [Row] {
    guard let rights, let evaluation = rights.evaluation, let load = rights.loadSecret else { return [] }
    var rows: [Row] = []
    let ratio = evaluation.median > 0 ? load.median / evaluation.median : .nan
    rows.append(Row(id: "secret-load-vs-evaluation", label: "load a secret (authorize + load), median", unit: "ms",
                    ours: load.median / 1000, baseline: evaluation.median / 1000, baselineName: "(evaluation)",
                    ratio: ratio, target: "≤ 1.2", met: ratio <= 1.2 && rights.errors == 0))
    if let sign = rights.sign {
        rows.append(Row(id: "sign-p256-median", label: "P-256 signature in the service, median", unit: "µs",
                        ours: sign.median, baseline: preflight?.median ?? .nan, baselineName: "(preflight)",
                        ratio: preflight.map { $0.median > 0 ? sign.median / $0.median : .nan } ?? .nan,
                        target: "", met: nil))
    }
    return rows
}
