import Foundation
import Glibc
import LocalAuthentication
import RigSupport
import XCTest

/// `localauthd --fprintd` on libfprint's virtual_image reader (issue 23): real
/// image matching, NBIS minutiae detection and bozorth3, instead of
/// virtual_device's matching by name. The images are synthetic fingerprints
/// (Tests/Helpers/synthetic-fingerprint.py): each "finger" a seeded ridge
/// pattern, each scan of it shifted and noisy, so a match is libfprint's.
final class FprintdImageReaderTests: RigTestCase, @unchecked Sendable {
    private let fprintdActions = ["net.reactivated.fprint.device.verify", "net.reactivated.fprint.device.enroll",
                                  "net.reactivated.fprint.device.setusername"]
    private var imageSocket = ""
    private var presenter: Task<Void, Error>?

    override func setUpWithError() throws {
        // Not RigTestCase's service: this one reads images, and speaks fprintd too.
        try rig.revivePolkit()
        for action in ["org.example.LocalAuth.evaluate", "org.example.LocalAuth.enroll"] + fprintdActions {
            try rig.polkit(action, nil)
        }
        imageSocket = rig.directory + "/vimg-\(getpid()).sock"
        unlink(imageSocket)
        service = try ServiceProcess(bus: rig, environment: ["G_DEBUG": "fatal-criticals",
                                                             "FP_DRIVERS_WHITELIST": "virtual_image",
                                                             "FP_VIRTUAL_IMAGE": imageSocket],
                                     arguments: ["--fprintd"])
    }

    override func tearDown() {
        presenter?.cancel()
        presenter = nil
        unlink(imageSocket)
        super.tearDown()
    }

    /// Sends the scans `(finger, scan)` to the reader in order, each when the
    /// reader wants a finger: fprintd's finger-needed turning true (an image
    /// sent at any other time would be one libfprint is not waiting for).
    private func presentImages(_ scans: [(finger: String, scan: Int)]) throws {
        presenter?.cancel()
        let watch = try BusWatch(rig: rig, rules: ["type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'"])
        let helper = try testScript("synthetic-fingerprint.py")
        let socket = imageSocket
        presenter = Task.detached {
            defer { watch.stop() }
            for (index, scan) in scans.enumerated() {
                try Self.waitForFingerNeeded(more: index, watch: watch)
                try Task.checkCancellation()
                let sent = try runProgram("/usr/bin/python3", [helper, "send", socket, scan.finger, String(scan.scan)])
                guard sent.status == 0 else { throw RigError("sending \(scan) failed: \(sent.output)") }
            }
        }
    }

    /// Every scan of the last `presentImages` was taken (none left over).
    private func allPresented() async throws {
        try await presenter?.value
        presenter = nil
    }

    /// Waits until finger-needed has turned true more than `seen` times.
    private static func waitForFingerNeeded(more seen: Int, watch: BusWatch) throws {
        let deadline = Date().addingTimeInterval(60)
        while true {
            let lines = watch.lines
            let needed = zip(lines, lines.dropFirst()).filter {
                $0.0 == "string \"finger-needed\"" && $0.1.hasPrefix("variant") && $0.1.hasSuffix("boolean true")
            }.count
            if needed > seen { return }
            if Task.isCancelled { throw CancellationError() }
            guard Date() < deadline else { throw RigError("finger-needed did not turn true a \(seen + 1)th time") }
            usleep(10_000)
        }
    }

    /// Runs one of Debian's fprintd tools on the rig's bus to its end.
    private func run(_ tool: String, _ arguments: [String]) throws -> Outcome {
        try runProgram(tool, arguments, environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address])
    }

    func testImagesOfTheEnrolledFingerMatchAndAnotherFingersDoNot() async throws {
        // Enrollment: six scans of one finger, each a little shifted: the
        // duplicate check (an identify, reported as a stage), then the
        // reader's five stages (the last one reported as enroll-completed).
        try presentImages((1...6).map { ("alice-right-index", $0) })
        let enrolled = try run("/usr/bin/fprintd-enroll", ["-f", "right-index-finger", "root"])
        try await allPresented()
        XCTAssertEqual(enrolled.status, 0, enrolled.output)
        XCTAssertEqual(enrolled.output.components(separatedBy: "enroll-stage-passed").count - 1, 5, enrolled.output)
        XCTAssertTrue(enrolled.output.contains("Enroll result: enroll-completed"), enrolled.output)
        let store = (service.stateDirectory as NSString).deletingLastPathComponent + "/fprintd-store"
        XCTAssertTrue(FileManager.default.fileExists(atPath: store + "/root/virtual_image/0/7"), "the print in fprintd's layout")

        // A new scan of the same finger matches; another finger's does not.
        try presentImages([("alice-right-index", 6)])
        let match = try run("/usr/bin/fprintd-verify", ["root"])
        XCTAssertEqual(match.status, 0, match.output)
        XCTAssertTrue(match.output.contains("Verify result: verify-match (done)"), match.output)
        try await allPresented()
        try presentImages([("bob-right-index", 1)])
        let noMatch = try run("/usr/bin/fprintd-verify", ["root"])
        XCTAssertNotEqual(noMatch.status, 0, noMatch.output)
        XCTAssertTrue(noMatch.output.contains("Verify result: verify-no-match (done)"), noMatch.output)
        try await allPresented()

        // The same reader and print serve an app's LAContext.
        try presentImages([("alice-right-index", 7)])
        let unlocked = await evaluate()
        XCTAssertTrue(unlocked.succeeded, "\(unlocked)")
        try await allPresented()
        try presentImages((2...4).map { ("bob-right-index", $0) })
        let refused = await evaluate()
        XCTAssertEqual(refused.code, .authenticationFailed, "\(refused)")
        try await allPresented()

        XCTAssertEqual(service.stop(), 0, "localauthd --fprintd did not exit cleanly:\n\(service.log)")
    }
}
