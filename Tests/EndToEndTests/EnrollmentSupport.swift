import Foundation
import Glibc
import LocalAuthentication
import RigSupport
import XCTest

/// Collects EnrollStatus progress delivered on the library's thread.
final class ProgressRecorder: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [LAFingerprints.EnrollProgress] = []
    func append(_ progress: LAFingerprints.EnrollProgress) { lock.withLock { stored.append(progress) } }
    var values: [LAFingerprints.EnrollProgress] { lock.withLock { stored } }
    /// "status stage/stages" per step, for readable assertions.
    var lines: [String] { values.map { "\($0.status) \($0.stage)/\($0.stages)" } }
}

/// A flag set from one task and read from another.
final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.withLock { value = true } }
    var isSet: Bool { lock.withLock { value } }
}

extension RigTestCase {
    static let nobody: UInt32 = 65534

    /// Feeds `commands` to the service's virtual sensor, one each time the
    /// service asks for a finger (FingerRequests), in the background.
    @discardableResult
    func feed(_ commands: [String], to target: ServiceProcess? = nil) -> Task<Void, Error> {
        answer(commands.map { [$0] }, sensor: (target ?? service).sensorSocket)
    }

    /// Enrolls through the client library with options, one scan of `id` per stage.
    func enroll(_ finger: String, as id: String, user: String?, replace: Bool = false, stages: Int = 5,
                recorder: ProgressRecorder? = nil) async throws {
        let feeder = feed(Array(repeating: "SCAN \(id)", count: stages))
        try await LAFingerprints.enroll(finger, user: user, replace: replace) { recorder?.append($0) }
        try await feeder.value
    }

    /// The D-Bus error name in gdbus's message, if any.
    func errorName(_ outcome: Outcome) -> String? {
        guard let range = outcome.stderr.range(of: "GDBus.Error:") else { return nil }
        let rest = outcome.stderr[range.upperBound...]
        return rest.split(separator: ":", maxSplits: 1).first.map(String.init)
    }

    /// gdbus's `a{sv}` text for a `user` option (and `replace`).
    func options(user: String? = nil, replace: Bool = false) -> String {
        var entries: [String] = []
        if let user { entries.append("'user': <'\(user)'>") }
        if replace { entries.append("'replace': <true>") }
        return "{" + entries.joined(separator: ", ") + "}"
    }

    /// Where the service keeps `finger` of `uid` made on `reader`.
    func printPath(_ finger: String, uid: UInt32 = 0, reader: String = "virtual_device/0",
                   of target: ServiceProcess? = nil) -> String {
        "\((target ?? service!).stateDirectory)/prints/\(uid)/\(reader)/\(finger)"
    }

    /// The `id` line of a print file (new for every enrollment).
    func printID(_ path: String) -> String? {
        guard let text = try? String(contentsOfFile: path, encoding: .isoLatin1) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("id ") { return String(line.dropFirst(3)) }
        return nil
    }

    /// GetDomainState as busctl prints it ("ay 32 …").
    func domainState() throws -> String {
        let outcome = try callService("GetDomainState", "")
        XCTAssertEqual(outcome.status, 0, outcome.output)
        return outcome.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// File names below `directory` that name a finger (what the store holds).
    func fingerFiles(in directory: String) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.filter { LAFingerprints.fingerNames.contains($0) }.sorted()
    }

    func mode(of path: String) -> mode_t {
        var info = stat()
        XCTAssertEqual(lstat(path, &info), 0, path)
        return info.st_mode & 0o7777
    }

    /// localauthctl as a child process, on the rig's bus.
    func localauthctl(_ arguments: [String], asNobody: Bool = false, timeout: Double = 30) throws -> Outcome {
        let environment = ["DBUS_SYSTEM_BUS_ADDRESS": rig.address]
        if asNobody {
            return try runProgram("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", Paths.localauthctl] + arguments,
                                  environment: environment, timeout: timeout)
        }
        return try runProgram(Paths.localauthctl, arguments, environment: environment, timeout: timeout)
    }
}
