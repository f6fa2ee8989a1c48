import Foundation
import Glibc
import LocalAuthentication
import RigSupport
import XCTest

/// Prints kept on the reader's chip (issue 22, item 3), on libfprint's
/// `virtual_device_storage` (a match-on-chip reader: it keeps the prints it
/// enrolled, refuses a finger it holds, and identifies only prints it holds).
/// The chip's content is read through the administrator's ListReaderPrints.
final class ChipPrintsTests: RigTestCase, @unchecked Sendable {
    private var chipSocket = ""

    override func setUpWithError() throws {
        try super.setUpWithError()
        try rig.polkit("org.example.LocalAuth.manage", "yes")
        let state = service.stateDirectory
        service.stop()
        chipSocket = rig.directory + "/chip-\(UInt32.random(in: 0...UInt32.max)).sock"
        service = try ServiceProcess(bus: rig, stateDirectory: state, withReader: false,
                                     environment: ["FP_VIRTUAL_DEVICE_STORAGE": chipSocket,
                                                   "FP_DRIVERS_WHITELIST": "virtual_device_storage"],
                                     arguments: ["--scan-timeout", "10"])
    }

    private func chip(_ command: String) throws {
        try ServiceProcess.send(command, to: chipSocket)
    }

    /// Enrolls through the library, sending the commands of `answers[n]` to
    /// the chip (a scan each, or an error) when the service asks for a finger
    /// the (n+1)th time (`answer`, FingerRequests).
    private func enrollOnChip(_ finger: String, user: String? = nil, replace: Bool = false,
                              answers: [[String]]) async throws {
        let feeder = answer(answers, sensor: chipSocket)
        defer { feeder.cancel() }
        try await LAFingerprints.enroll(finger, user: user, replace: replace)
    }

    private func chipPrints() throws -> (owned: Int, orphans: Int) {
        let listed = try gdbus("ListReaderPrints", ["{}"])
        XCTAssertEqual(listed.status, 0, listed.output)
        let owned = listed.stdout.components(separatedBy: "'owned': <true>").count - 1
        let orphans = listed.stdout.components(separatedBy: "'owned': <false>").count - 1
        return (owned, orphans)
    }

    func testDeleteReplaceDuplicateFullAndTheOrphansCleanUp() async throws {
        // Enrolled: the chip holds it.
        try await enrollOnChip("right-index-finger", answers: Array(repeating: ["SCAN root-1"], count: 5))
        XCTAssertEqual(try chipPrints().owned, 1)

        // The same finger for another account: refused, without saying whose.
        do {
            try await enrollOnChip("left-thumb", user: "nobody", answers: [["SCAN root-1"]])
            XCTFail("a finger on the chip was enrolled again")
        } catch let error as LAFingerprints.ServiceError {
            XCTAssertEqual(error.shortName, "DuplicatePrint", "\(error)")
            XCTAssertFalse(error.message.contains("root"), "never says whose: \(error)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: printPath("left-thumb", uid: Self.nobody,
                                                                          reader: "virtual_device_storage/0")))
        XCTAssertEqual(try chipPrints().owned, 1)

        // Replacing frees the old print's slot: one print on the chip, not two.
        // (No duplicate check: the chip's only print is the one replaced.)
        try await enrollOnChip("right-index-finger", replace: true, answers: Array(repeating: ["SCAN root-2"], count: 5))
        XCTAssertEqual(try chipPrints().owned, 1)
        XCTAssertEqual(try chipPrints().orphans, 0, "the replaced print left the chip")
        let scan = present("root-2", sensor: chipSocket)
        let verified = await evaluate()
        try await scan.value
        XCTAssertTrue(verified.succeeded, "\(verified)")

        // A full chip: a named error. Meanwhile a print no record owns
        // appears on the chip (another system's, say). The service asks
        // once ("place finger") for the duplicate check's scan and the first
        // stage after it, so both go after that one ask, in order.
        do {
            try await enrollOnChip("left-thumb", answers: [["INSERT stranger", "SCAN new-finger", "ERROR 8"]])
            XCTFail("a full chip enrolled")
        } catch let error as LAFingerprints.ServiceError {
            XCTAssertEqual(error.shortName, "ReaderStorageFull", "\(error)")
            XCTAssertTrue(error.message.contains("localauthctl reader-prints --clean"), "\(error)")
        }

        // The administrator sees the orphan, and removes it alone.
        let shown = try runProgram(Paths.localauthctl, ["reader-prints"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address])
        XCTAssertTrue(shown.stdout.contains("virtual_device_storage/0: 2 print(s) on the chip, 1 owned, 1 orphan(s)"), shown.output)
        // Only an administrator: with the action's defaults, another uid is refused.
        try rig.polkit("org.example.LocalAuth.manage", nil)
        let refused = try gdbus("ListReaderPrints", ["{}"], asNobody: true)
        XCTAssertEqual(errorName(refused), "org.example.LocalAuth.Error.PermissionDenied", refused.output)
        let cleaned = try runProgram(Paths.localauthctl, ["reader-prints", "--clean"],
                                     environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address])
        XCTAssertTrue(cleaned.stdout.contains("Removed 1 print(s)"), cleaned.output)
        XCTAssertEqual(try chipPrints().owned, 1)
        XCTAssertEqual(try chipPrints().orphans, 0)

        // Deleting the finger deletes its print on the chip.
        try await LAFingerprints.delete("right-index-finger")
        let after = try chipPrints()
        XCTAssertEqual(after.owned + after.orphans, 0, "the chip is empty")
    }
}
