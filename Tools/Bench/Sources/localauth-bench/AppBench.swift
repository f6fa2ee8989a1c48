import Foundation
import RigSupport

/// What an app pays for its preflight, through each client library, in a
/// process of its own: `LAContext()`, `canEvaluatePolicy`, `biometryType`
/// (issue 25). The baseline is fprintd's GetDefaultDevice + ListEnrolledFingers,
/// what an fprintd client needs to learn the same, on the same virtual sensor.
/// A fixed count (not --preflights), so that callgrind's two runs of 1,000
/// and 3,000 preflights still differ only by the service's CanEvaluatePolicy.
struct AppPreflights: Codable, Sendable {
    var swift: Summary?
    var c: Summary?
    /// `--compare-swift-app PATH`: the same helper built against another
    /// revision of the library, measured alternately with this one.
    var swiftCompared: Summary?
    var skipped: [String] = []
}

extension Bench {
    static let appPreflights = 1000

    func appPreflights() throws -> AppPreflights {
        var results = AppPreflights()
        let environment = ["DBUS_SYSTEM_BUS_ADDRESS": busAddress]
        let swiftHelper = Locations.executableDirectory + "/localauth-app-preflight"
        if let other = options.compareSwiftApp {
            // Paired: five rounds, each program in turn, so that drift hits both alike.
            var mine: [UInt64] = []
            var theirs: [UInt64] = []
            for _ in 0..<5 {
                theirs += try durations(of: other, count: Self.appPreflights / 5, environment: environment)
                mine += try durations(of: swiftHelper, count: Self.appPreflights / 5, environment: environment)
            }
            results.swift = Summary(nanoseconds: mine)
            results.swiftCompared = Summary(nanoseconds: theirs)
        } else if FileManager.default.isExecutableFile(atPath: swiftHelper) {
            results.swift = Summary(nanoseconds: try durations(of: swiftHelper, count: Self.appPreflights, environment: environment))
        } else {
            results.skipped.append("Swift library: no \(swiftHelper)")
        }
        // The C library: `make clientlib` builds it in .build/clientlib.
        guard let repository = Locations.repository,
            FileManager.default.fileExists(atPath: repository + "/.build/clientlib/meson-uninstalled/liblocalauth-1-uninstalled.pc")
        else {
            results.skipped.append("C library: no .build/clientlib (make clientlib)")
            return results
        }
        let build = repository + "/.build/clientlib"
        let program = directory + "/app-preflight-c"
        let compiled = try runProgram(
            "/bin/sh",
            [
                "-c",
                "cc -O2 -Wall -Werror -o '\(program)' '\(repository)/Tools/Bench/c/app-preflight.c' "
                    + "$(pkg-config --cflags --libs liblocalauth-1)",
            ],
            environment: ["PKG_CONFIG_PATH": build + "/meson-uninstalled"], timeout: 120)
        guard compiled.status == 0 else { throw BenchError("app-preflight.c did not compile: \(compiled.output)") }
        results.c = Summary(
            nanoseconds: try durations(
                of: program, count: Self.appPreflights,
                environment: environment.merging(["LD_LIBRARY_PATH": build]) { $1 }))
        return results
    }

    func durations(of program: String, count: Int, environment: [String: String]) throws -> [UInt64] {
        let outcome = try runProgram(program, [String(count)], environment: environment, timeout: 300)
        let values = outcome.stdout.split(separator: "\n").compactMap { UInt64($0) }
        guard outcome.status == 0, values.count == count else {
            throw BenchError("\(program) failed (\(outcome.status)): \(outcome.stderr)")
        }
        return values
    }
}

func appRows(_ app: AppPreflights?, fprintd: Summary?) -> [Row] {
    guard let app, let base = fprintd else { return [] }
    var rows: [Row] = []
    for (id, name, summary) in [
        ("app-preflight-swift", "Swift", app.swift), ("app-preflight-c", "C", app.c),
        ("app-preflight-swift-compared", "Swift, --compare-swift-app", app.swiftCompared),
    ] {
        guard let summary else { continue }
        let ratio = base.median > 0 ? summary.median / base.median : .nan
        rows.append(
            Row(
                id: id + "-median", label: "app preflight (\(name) library), median", unit: "µs",
                ours: summary.median, baseline: base.median, baselineName: "", ratio: ratio,
                target: "< 1", met: ratio < 1))
        rows.append(
            Row(
                id: id + "-p99", label: "app preflight (\(name) library), p99", unit: "µs",
                ours: summary.p99, baseline: base.p99, baselineName: "",
                ratio: base.p99 > 0 ? summary.p99 / base.p99 : .nan, target: "", met: nil))
    }
    return rows
}
