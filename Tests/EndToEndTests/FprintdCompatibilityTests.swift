import Foundation
import Glibc
import LocalAuthentication
import RigSupport
import XCTest

/// People who enrolled with fprintd need not enroll again: a print made by
/// Debian's fprintd on the rig (its own virtual sensor, same driver and device
/// id as ours) is accepted by our evaluation, and fprintd's store is only read.
final class FprintdCompatibilityTests: RigTestCase, @unchecked Sendable {
    /// Every file below `directory`: path -> contents and mtime.
    private func snapshot(_ directory: String) -> [String: String] {
        var result: [String: String] = [:]
        let enumerator = FileManager.default.enumerator(atPath: directory)
        while let relative = enumerator?.nextObject() as? String {
            let path = directory + "/" + relative
            var info = stat()
            lstat(path, &info)
            let contents = (try? Data(contentsOf: URL(fileURLWithPath: path)).base64EncodedString()) ?? "dir"
            result[relative] = "\(info.st_mode) \(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec) \(contents)"
        }
        return result
    }

    /// Enrolls root's right index finger with fprintd-enroll, on fprintd's own virtual sensor.
    private func enrollWithFprintd(scan id: String) throws -> String {
        let socket = rig.directory + "/fprintd-vfp.sock"
        let started = try runProgram(Paths.root + "/scripts/rig.sh", ["fprintd", rig.directory, socket])
        XCTAssertEqual(started.status, 0, started.output)
        addTeardownBlock { [rig] in
            // Only the fprintd this test started, by its pid.
            if let text = try? String(contentsOfFile: rig.directory + "/fprintd.pid", encoding: .utf8),
               let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                kill(pid, SIGTERM)
            }
        }
        // fprintd asks for a finger when fprintd-enroll starts the enrollment
        // (EnrollStart) and after each stage (its EnrollStatus "enroll-stage-passed").
        let watch = try BusWatch(rig: rig, rules: ["type='method_call',interface='net.reactivated.Fprint.Device',member='EnrollStart'",
                                                   "type='signal',interface='net.reactivated.Fprint.Device',member='EnrollStatus'"])
        defer { watch.stop() }
        func isAsk(_ line: String) -> Bool { line.contains("member=EnrollStart") || line == "string \"enroll-stage-passed\"" }
        let output = rig.directory + "/fprintd-enroll.out"
        let client = try Child("/usr/bin/fprintd-enroll", ["-f", "right-index-finger", "root"],
                               environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address], stdoutPath: output, stderrPath: output)
        for scan in 0..<5 {
            try watch.waitForMore(than: scan, timeout: 20, "fprintd asking for scan \(scan + 1)", isAsk)
            try ServiceProcess.send("SCAN \(id)", to: socket)
        }
        let status = client.wait(timeout: 20)
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        XCTAssertEqual(status, 0, text)
        XCTAssertTrue(text.contains("enroll-completed"), text)
        return rig.directory + "/fprintd-state"
    }

    func testAPrintEnrolledWithFprintdIsAcceptedAndItsStoreNeverWritten() async throws {
        let store = try enrollWithFprintd(scan: "fprintd-owner")
        let file = store + "/root/virtual_device/0/7"
        XCTAssertTrue(FileManager.default.fileExists(atPath: file), "fprintd's print should be at \(file)")
        let before = snapshot(store)

        service.stop()
        service = try ServiceProcess(bus: rig, fprintdStore: store)

        // Listed, with its source; usable by preflight and evaluation.
        let prints = try await LAFingerprints.enrolledPrints()
        XCTAssertEqual(prints.map { "\($0.finger) \($0.source) \($0.reader) \($0.inUse) \($0.readOnly)" },
                       ["right-index-finger fprintd virtual_device/0 true true"])
        XCTAssertNotNil(prints.first?.created, "fprintd stores the enroll date")
        let list = try localauthctl(["list"])
        XCTAssertTrue(list.stdout.contains("right-index-finger  fprintd (read-only)  virtual_device/0"), list.output)
        let preflight = try callService("CanEvaluatePolicy", "u", ["1"])
        XCTAssertEqual(preflight.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "b true", preflight.output)
        present("fprintd-owner")
        let accepted = await evaluate()
        XCTAssertTrue(accepted.succeeded, "\(accepted)")
        present("someone-else", times: 3)
        let refused = await evaluate()
        XCTAssertEqual(refused.code, .authenticationFailed, "\(refused)")

        // Enrolled is enrolled: refused without replace; never deleted there.
        let again = try gdbus("Enroll", ["right-index-finger"])
        XCTAssertEqual(errorName(again), "org.example.LocalAuth.Error.AlreadyEnrolled", again.output)
        let delete = try gdbus("DeleteEnrolledFinger", ["right-index-finger"])
        XCTAssertEqual(errorName(delete), "org.example.LocalAuth.Error.ReadOnly", delete.output)

        // Replacing puts our print in front of fprintd's, in our store only.
        try await enroll("right-index-finger", as: "ours", user: nil, replace: true)
        let both = try await LAFingerprints.enrolledPrints()
        XCTAssertEqual(both.map { "\($0.source) \($0.inUse)" }.sorted(), ["fprintd false", "localauth true"])
        present("ours")
        let ours = await evaluate()
        XCTAssertTrue(ours.succeeded, "\(ours)")
        // Deleting ours brings fprintd's back, and the tool says why it is still there.
        let deleted = try localauthctl(["delete", "right-index-finger"])
        XCTAssertEqual(deleted.status, 0, deleted.output)
        XCTAssertTrue(deleted.stdout.contains("Still enrolled through fprintd's store"), deleted.output)
        let fingers = try await LAFingerprints.enrolledFingers()
        XCTAssertEqual(fingers, ["right-index-finger"])
        try await LAFingerprints.deleteAll()
        let stillThere = try await LAFingerprints.enrolledPrints()
        XCTAssertEqual(stillThere.map(\.source), ["fprintd"])

        XCTAssertEqual(snapshot(store), before, "fprintd's store must not change")

        // A damaged or mismatched file in (a copy of) fprintd's store is skipped and logged.
        let copy = rig.directory + "/fprintd-copy-\(UInt32.random(in: 0...UInt32.max))"
        let copied = try runProgram("/bin/cp", ["-a", store, copy])
        XCTAssertEqual(copied.status, 0, copied.output)
        try Data("garbage".utf8).write(to: URL(fileURLWithPath: copy + "/root/virtual_device/0/8"))
        try FileManager.default.createDirectory(atPath: copy + "/nobody/virtual_device/0", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: copy + "/root/virtual_device/0/7", toPath: copy + "/nobody/virtual_device/0/7")
        service.stop()
        service = try ServiceProcess(bus: rig, fprintdStore: copy)
        let rootFingers = try await LAFingerprints.enrolledFingers()
        XCTAssertEqual(rootFingers, ["right-index-finger"])
        let nobodys = try await LAFingerprints.enrolledPrints(user: "nobody")
        XCTAssertEqual(nobodys, [], "root's print copied under nobody's name is not nobody's")
        let log = service.log
        XCTAssertTrue(log.contains("print file \(copy)/root/virtual_device/0/8 (fprintd's store) is corrupt"), log)
        XCTAssertTrue(log.contains("print file \(copy)/nobody/virtual_device/0/7 (fprintd's store) is foreign"), log)
    }
}
