import Foundation
import Glibc
import LocalAuthentication
import RigSupport
import XCTest

/// One reader, two daemons (issue 22): Debian's fprintd and localauthd on the
/// same virtual sensor. libfprint's virtual sensor does not model a USB
/// device's exclusive claim (whoever opens it last takes its socket), so
/// these tests watch what does show exclusivity honestly:
///
/// - the virtual device listens on its socket exactly while a program has it
///   open: `ss` says which processes listen at the path, so "fprintd has the
///   reader and localauthd does not" is a fact, not a guess;
/// - "held by another program" is an address that cannot be bound (its
///   directory moved away and a file put in its place, while the holder keeps
///   its socket): localauthd's open fails as on a claimed USB device, and
///   succeeds once the address is bindable again.
final class CoexistenceTests: RigTestCase, @unchecked Sendable {
    /// The sensor's directory: swapped for a file to stand for "held".
    private var sensorDirectory = ""
    private var sensorSocket: String { sensorDirectory + "/vfp.sock" }
    private var fprintdPID: pid_t = 0

    override func setUpWithError() throws {
        try super.setUpWithError()
        sensorDirectory = rig.directory + "/shared-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: sensorDirectory, withIntermediateDirectories: true)
        try restartService(arguments: ["--scan-timeout", "8"])
    }

    override func tearDown() {
        if fprintdPID > 0 {
            // Only the fprintd this test started, by its pid.
            kill(fprintdPID, SIGTERM)
            _ = Spawn.wait(fprintdPID, timeout: 5)
            fprintdPID = 0
        }
        super.tearDown()
    }

    private func restartService(arguments: [String] = []) throws {
        let state = service.stateDirectory
        service.stop()
        service = try ServiceProcess(bus: rig, stateDirectory: state,
                                     environment: ["FP_VIRTUAL_DEVICE": sensorSocket], arguments: arguments)
    }

    private func sensor(_ command: String, at socket: String? = nil) throws {
        try ServiceProcess.send(command, to: socket ?? sensorSocket)
    }

    /// The pids listening on `socket` now, by its address (`ss -xlp`): a
    /// socket whose path was taken over by a later bind still shows here.
    private func listeners(_ socket: String? = nil) throws -> Set<pid_t> {
        let path = socket ?? sensorSocket
        var pids: Set<pid_t> = []
        for line in try runProgram("/usr/bin/ss", ["-xlp"]).stdout.split(separator: "\n") {
            let columns = line.split(separator: " ", omittingEmptySubsequences: true)
            guard columns.contains(where: { $0 == path }) else { continue }
            var rest = Substring(line)
            while let range = rest.range(of: "pid=") {
                rest = rest[range.upperBound...]
                if let pid = pid_t(rest.prefix { $0.isNumber }) { pids.insert(pid) }
            }
        }
        return pids
    }

    private func startFprintd() throws {
        let started = try runProgram(Paths.root + "/scripts/rig.sh", ["fprintd", rig.directory, sensorSocket])
        XCTAssertEqual(started.status, 0, started.output)
        let text = try String(contentsOfFile: rig.directory + "/fprintd.pid", encoding: .utf8)
        fprintdPID = try XCTUnwrap(pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)))
    }

    /// What fprintd says when it wants a finger, on the rig bus: the client's
    /// EnrollStart (the device starts scanning), VerifyFingerSelected (sent
    /// after VerifyStart's reply), and each EnrollStatus "enroll-stage-passed"
    /// (it scans for the next stage). Not the VerifyStart call itself: a scan
    /// sent then can match before fprintd answers VerifyStart, and
    /// fprintd-verify, which hears the final VerifyStatus before its own
    /// call's reply, then waits for ever (seen on the rig: the match signal
    /// one serial before the reply; 2 runs in 8 on 7e74d12).
    private func fprintdAsks() throws -> BusWatch {
        try BusWatch(rig: rig, rules: ["type='method_call',interface='net.reactivated.Fprint.Device',member='EnrollStart'",
                                       "type='signal',interface='net.reactivated.Fprint.Device',member='VerifyFingerSelected'",
                                       "type='signal',interface='net.reactivated.Fprint.Device',member='EnrollStatus'"])
    }

    private static func isFprintdAsk(_ line: String) -> Bool {
        line.contains("member=EnrollStart") || line.contains("member=VerifyFingerSelected")
            || line == "string \"enroll-stage-passed\""
    }

    /// Waits until fprintd asked for a finger more than `seen` times.
    private func waitForFprintd(_ watch: BusWatch, toAskMoreThan seen: Int) throws {
        try watch.waitForMore(than: seen, timeout: 20, "fprintd asking for scan \(seen + 1)", Self.isFprintdAsk)
    }

    /// Runs one of fprintd's own tools for root, sending `SCAN id` each time
    /// fprintd asks for a finger, `scans` times.
    private func fprintdTool(_ tool: String, _ arguments: [String], scan id: String, scans: Int,
                             at socket: String? = nil) throws -> String {
        let output = rig.directory + "/\(tool)-\(UInt32.random(in: 0...UInt32.max)).out"
        let watch = try fprintdAsks()
        defer { watch.stop() }
        let client = try Child("/usr/bin/\(tool)", arguments,
                               environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address], stdoutPath: output, stderrPath: output)
        for scan in 0..<scans {
            try waitForFprintd(watch, toAskMoreThan: scan)
            try sensor("SCAN \(id)", at: socket)
        }
        let status = client.wait(timeout: 20)
        let text = readText(output)
        XCTAssertEqual(status, 0, text)
        return text
    }

    /// Enrolls `id` through the library: a scan each time localauthd asks.
    private func enrollLocally(_ id: String) async throws {
        let feeder = present(id, times: 5, sensor: sensorSocket)
        try await LAFingerprints.enroll("right-index-finger")
        try await feeder.value
    }

    /// Presents `id` when localauthd's next evaluation asks for a finger.
    private func presentLocally(_ id: String, at socket: String? = nil) -> Task<Void, Error> {
        present(id, sensor: socket ?? sensorSocket)
    }

    /// localauthd first: after its evaluation, and while an app observes
    /// LAEnvironment, the reader is free within 2 s and fprintd's Claim +
    /// VerifyStart gets it (fprintd-verify, a client nobody here wrote);
    /// after fprintd's Release localauthd evaluates again, no restart.
    func testFprintdGetsTheReaderAfterALocalAuthCallAndWhileAnAppObserves() async throws {
        try startFprintd()
        let enrolled = try fprintdTool("fprintd-enroll", ["-f", "right-index-finger", "root"], scan: "fp-root", scans: 5)
        XCTAssertTrue(enrolled.contains("enroll-completed"), enrolled)
        try waitUntil("fprintd released the reader") { try listeners().isEmpty }
        try await enrollLocally("la-root")

        let observer = EnvironmentObserver()
        LAEnvironment.currentUser.addObserver(observer)
        defer { LAEnvironment.currentUser.removeObserver(observer) }
        let scan = presentLocally("la-root")
        let result = await evaluate()
        try await scan.value
        XCTAssertTrue(result.succeeded, "\(result)")
        let ended = Date()
        XCTAssertTrue(service.log.contains("reader virtual_device/0 open"), "localauthd opened the reader for its evaluation")
        try waitUntil("localauthd closed the reader", timeout: 2) { try listeners().isEmpty }
        XCTAssertLessThan(Date().timeIntervalSince(ended), 2, "free within 2 s of the call, an observer subscribed")
        XCTAssertTrue(LAContext().canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: nil))

        // fprintd's Claim + VerifyStart: it alone listens, then it matches.
        let verified = try fprintdTool("fprintd-verify", ["root"], scan: "fp-root", scans: 1)
        XCTAssertTrue(verified.contains("verify-match"), verified)
        XCTAssertFalse(try listeners().contains(service.child.pid), "localauthd never took it back meanwhile")

        // After fprintd's Release: localauthd's next evaluation, same process.
        try waitUntil("fprintd released the reader") { try listeners().isEmpty }
        let again = presentLocally("la-root")
        let second = await evaluate()
        try await again.value
        XCTAssertTrue(second.succeeded, "\(second)")
        XCTAssertTrue(service.isRunning)
    }

    /// fprintd first: while it holds the reader, localauthd answers
    /// preflights and LAEnvironment without opening it; an evaluation that
    /// starts meanwhile hears "reader-busy", waits, and gets the reader once
    /// fprintd let it go, within the same call.
    func testWhileFprintdHoldsTheReaderPreflightsAnswerAndAnEvaluationWaitsForIt() async throws {
        try await enrollLocally("la-root")
        try waitUntil("localauthd closed the reader", timeout: 3) { try listeners().isEmpty }
        try startFprintd()
        let observer = EnvironmentObserver()
        LAEnvironment.currentUser.addObserver(observer)
        defer { LAEnvironment.currentUser.removeObserver(observer) }

        // fprintd-enroll holds the reader for its five scans; localauthd
        // answers preflights all along, and never opens it.
        let output = rig.directory + "/fprintd-enroll-held.out"
        let asks = try fprintdAsks()
        defer { asks.stop() }
        let client = try Child("/usr/bin/fprintd-enroll", ["-f", "left-thumb", "root"],
                               environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address], stdoutPath: output, stderrPath: output)
        try waitUntil("fprintd holds the reader") { try listeners() == [self.fprintdPID] }
        let opensBefore = service.log.components(separatedBy: "reader virtual_device/0 open").count
        for scan in 0..<5 {
            try waitForFprintd(asks, toAskMoreThan: scan)
            for _ in 0..<10 {
                XCTAssertTrue(LAContext().canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: nil))
                XCTAssertEqual(LAEnvironment.currentUser.state.biometry?.isEnrolled, true)
            }
            XCTAssertEqual(try listeners(), [fprintdPID], "after \(scan) scans only fprintd has the reader")
            try sensor("SCAN fp-thumb")
        }
        XCTAssertEqual(client.wait(timeout: 20), 0, readText(output))
        XCTAssertEqual(service.log.components(separatedBy: "reader virtual_device/0 open").count, opensBefore,
                       "no preflight opened the reader: \(service.log)")

        // fprintd-verify holds it again; this time the address is taken
        // from localauthd (moved away, a file in its place) as a claimed
        // USB device would be, while fprintd keeps its socket.
        let verifyOutput = rig.directory + "/fprintd-verify-held.out"
        let verifyAsks = try fprintdAsks()
        defer { verifyAsks.stop() }
        let verify = try Child("/usr/bin/fprintd-verify", ["-f", "left-thumb", "root"],
                               environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address],
                               stdoutPath: verifyOutput, stderrPath: verifyOutput)
        try waitUntil("fprintd holds the reader") { try listeners() == [self.fprintdPID] }
        let held = sensorDirectory + ".held"
        try FileManager.default.moveItem(atPath: sensorDirectory, toPath: held)
        XCTAssertTrue(FileManager.default.createFile(atPath: sensorDirectory, contents: Data()))

        let context = LAContext()
        let statuses = Collected<LAEvaluationStatus>()
        context.evaluationStatusHandler = { statuses.append($0) }
        let pending = Task { await self.evaluate(context: context) }
        try await waitFor(statuses, .readerBusy)
        XCTAssertTrue(service.log.contains("is in use by another program"), service.log)

        // fprintd matches and releases; the address comes back.
        try waitForFprintd(verifyAsks, toAskMoreThan: 0)
        try sensor("SCAN fp-thumb", at: held + "/vfp.sock")
        XCTAssertEqual(verify.wait(timeout: 10), 0, readText(verifyOutput))
        XCTAssertTrue(readText(verifyOutput).contains("verify-match"), readText(verifyOutput))
        try FileManager.default.removeItem(atPath: sensorDirectory)
        try? FileManager.default.removeItem(atPath: held)
        try FileManager.default.createDirectory(atPath: sensorDirectory, withIntermediateDirectories: true)
        try waitUntil("localauthd opened the reader") { try self.listeners() == [self.service.child.pid] }
        try sensor("SCAN la-root")
        let result = await pending.value
        XCTAssertTrue(result.succeeded, "the same evaluation got the reader once it was free: \(result)")
    }

    /// A reader that never frees: the evaluation ends at its time limit with
    /// a named error, and the next call tries afresh (nothing cached).
    func testAReaderThatStaysHeldEndsTheEvaluationWithReaderInUseAndNothingIsCached() async throws {
        try restartService(arguments: ["--scan-timeout", "2"])
        try await enrollLocally("la-root")
        try waitUntil("localauthd closed the reader", timeout: 3) { try listeners().isEmpty }
        try FileManager.default.removeItem(atPath: sensorDirectory)
        XCTAssertTrue(FileManager.default.createFile(atPath: sensorDirectory, contents: Data()))

        let started = Date()
        let held = try gdbus("EvaluatePolicy", ["1", "Unlock", "{}"])
        XCTAssertEqual(errorName(held), "org.example.LocalAuth.Error.ReaderInUse", held.output)
        XCTAssertTrue(held.stderr.contains("in use by another program"), held.output)
        XCTAssertLessThan(Date().timeIntervalSince(started), 4, "within the scan timeout")
        let preflight = try gdbus("CanEvaluatePolicy", ["1"])
        XCTAssertEqual(preflight.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "(true,)", preflight.output)

        try FileManager.default.removeItem(atPath: sensorDirectory)
        try FileManager.default.createDirectory(atPath: sensorDirectory, withIntermediateDirectories: true)
        let scan = presentLocally("la-root")
        let result = await evaluate()
        try await scan.value
        XCTAssertTrue(result.succeeded, "the next call opens it: \(result)")
    }

    /// Waits until the evaluation reported `wanted` (its status handler).
    private func waitFor(_ statuses: Collected<LAEvaluationStatus>, _ wanted: LAEvaluationStatus,
                         timeout: Double = 10) async throws {
        let deadline = Date().addingTimeInterval(timeout)
        while !statuses.values.contains(wanted) {
            guard Date() < deadline else { throw RigError("waited \(timeout) s for \(wanted.rawValue): \(statuses.values)") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}

private final class EnvironmentObserver: LAEnvironmentObserver, @unchecked Sendable {
    func environment(_ environment: LAEnvironment, stateDidChangeFromOldState oldState: LAEnvironmentState) {}
}
