import Foundation
import Glibc
import LocalAuthentication
import RigSupport
import XCTest

/// Several readers and hotplug, with libfprint's two virtual drivers as two
/// readers: `virtual_device` and `virtual_device_storage` (each on its own
/// socket). What cannot be shown here: a reader *appearing* while the service
/// runs (FpContext::device-added): libfprint creates virtual readers only
/// when it enumerates, at start; only USB readers are hotplugged.
final class ReaderTests: RigTestCase, @unchecked Sendable {
    private var storageSocket = ""

    override func setUpWithError() throws {
        try super.setUpWithError()
        try rig.polkit("org.example.LocalAuth.manage", nil)
    }

    /// Restarts the service with both virtual readers.
    private func startWithTwoReaders(arguments: [String] = []) throws {
        let state = service.stateDirectory
        service.stop()
        storageSocket = rig.directory + "/storage-\(UInt32.random(in: 0...UInt32.max)).sock"
        service = try ServiceProcess(bus: rig, stateDirectory: state,
                                     environment: ["FP_VIRTUAL_DEVICE_STORAGE": storageSocket,
                                                   "FP_DRIVERS_WHITELIST": "virtual_device:virtual_device_storage"],
                                     arguments: arguments)
    }

    private func storage(_ command: String) throws {
        try ServiceProcess.send(command, to: storageSocket)
    }

    private func biometryType() throws -> String {
        try busctl(["get-property", "org.example.LocalAuth", "/org/example/LocalAuth", "org.example.LocalAuth", "BiometryType"])
            .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func testEachUserIsServedByTheConfiguredReaderOrTheFirstWithTheirPrints() async throws {
        try startWithTwoReaders()
        XCTAssertTrue(service.log.contains("reader virtual_device/0 found"), service.log)
        XCTAssertTrue(service.log.contains("reader virtual_device_storage/0 found"), service.log)

        // No prints anywhere: the first reader.
        try await enroll("right-index-finger", as: "root-index", user: nil)
        let rootPrints = try await LAFingerprints.enrolledPrints()
        XCTAssertEqual(rootPrints.map(\.reader), ["virtual_device/0"])

        // Configured to the other reader: root's prints there are not offered.
        try startWithTwoReaders(arguments: ["--reader", "virtual_device_storage"])
        let preflight = try gdbus("CanEvaluatePolicy", ["1"])
        XCTAssertEqual(errorName(preflight), "org.example.LocalAuth.Error.BiometryNotEnrolled", preflight.output)
        let notOffered = try await LAFingerprints.enrolledPrints()
        XCTAssertEqual(notOffered.map(\.inUse), [false])
        // An administrator enrolls nobody on that reader.
        let feeder = present("nobody-thumb", times: 5, sensor: storageSocket)
        try await LAFingerprints.enroll("left-thumb", user: "nobody")
        try await feeder.value
        XCTAssertTrue(FileManager.default.fileExists(atPath: printPath("left-thumb", uid: Self.nobody, reader: "virtual_device_storage/0")))

        // Not configured: each user gets the first reader that has their prints.
        try startWithTwoReaders()
        let rootFingers = try await LAFingerprints.enrolledFingers()
        XCTAssertEqual(rootFingers, ["right-index-finger"])
        let nobodys = try gdbus("ListEnrolledFingers", [], asNobody: true)
        XCTAssertEqual(nobodys.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "(['left-thumb'],)", nobodys.output)
        // …and is verified on it (the storage driver knows a print once it holds its id).
        try rig.polkit("org.example.LocalAuth.evaluate", "yes")
        let insertAndScan = present("nobody-thumb", sensor: storageSocket, insertFirst: true)
        let verified = try gdbus("EvaluatePolicy", ["1", "Unlock", "{}"], asNobody: true)
        try await insertAndScan.value
        XCTAssertEqual(verified.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "(true,)", verified.output)
        present("root-index")
        let root = await evaluate()
        XCTAssertTrue(root.succeeded, "\(root)")

        XCTAssertEqual(try runProgram(Paths.localauthd, ["--reader", "/0"]).status, 2, "a malformed --reader is refused")
    }

    func testUnpluggedReadersAreNoticedAndAnnounced() async throws {
        // One of two readers goes: still a reader, nothing to announce. A
        // virtual reader hears UNPLUG only while open (it listens only then),
        // and readers open only for an operation: an enrollment on the
        // storage reader holds it open when it goes, and ends at once.
        try startWithTwoReaders(arguments: ["--reader", "virtual_device_storage"])
        let enrolling = Task.detached { try await LAFingerprints.enroll("left-thumb") }
        try storage("UNPLUG")
        let deadline = Date().addingTimeInterval(5)
        while !service.log.contains("reader virtual_device_storage/0 was removed") && Date() < deadline { usleep(20_000) }
        XCTAssertTrue(service.log.contains("reader virtual_device_storage/0 was removed"), service.log)
        let enrollment = await enrolling.result
        XCTAssertThrowsError(try enrollment.get(), "the enrollment on the unplugged reader ends")
        XCTAssertEqual(try biometryType(), "u 1")

        // Now the only reader.
        let state = service.stateDirectory
        service.stop()
        service = try ServiceProcess(bus: rig, stateDirectory: state)
        try await enroll("right-index-finger", as: "owner", user: nil)
        XCTAssertEqual(try biometryType(), "u 1")
        // The library keeps BiometryType per process (read once, then updated
        // by PropertiesChanged): read it now, so that the last assertion below
        // sees the cached value follow the signal.
        let before = LAContext()
        XCTAssertTrue(before.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: nil))
        XCTAssertEqual(before.biometryType, .touchID)

        let monitorLog = rig.directory + "/monitor-\(UInt32.random(in: 0...UInt32.max)).log"
        let monitor = try Child("/usr/bin/dbus-monitor", ["--address", rig.address,
                                "type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',path='/org/example/LocalAuth'"],
                                stdoutPath: monitorLog, stderrPath: "/dev/null")
        defer {
            monitor.signal(SIGTERM)
            monitor.wait(timeout: 5)
        }
        func monitored() -> String { (try? String(contentsOfFile: monitorLog, encoding: .utf8)) ?? "" }
        let ready = Date().addingTimeInterval(5)
        while !monitored().contains("NameAcquired") && Date() < ready { usleep(20_000) }

        // The last reader goes in the middle of an evaluation: it ends at once.
        let started = Date()
        let pending = try await startEvaluation()
        try service.sensor("UNPLUG")
        let result = await pending.value
        XCTAssertEqual(result.code, .systemCancel, "\(result)")
        XCTAssertLessThan(Date().timeIntervalSince(started), 5)

        XCTAssertEqual(try biometryType(), "u 0")
        let announced = Date().addingTimeInterval(5)
        while !monitored().contains("BiometryType") && Date() < announced { usleep(20_000) }
        let signal = monitored()
        XCTAssertTrue(signal.contains("member=PropertiesChanged") && signal.contains("string \"BiometryType\"")
                      && signal.contains("variant             uint32 0"), signal)
        let preflight = try gdbus("CanEvaluatePolicy", ["1"])
        XCTAssertEqual(errorName(preflight), "org.example.LocalAuth.Error.BiometryNotAvailable", preflight.output)
        let context = LAContext()
        var error: NSError?
        XCTAssertFalse(context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error))
        XCTAssertEqual(context.biometryType, LABiometryType.none)
    }
}
