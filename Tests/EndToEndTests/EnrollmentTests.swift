import Foundation
import Glibc
import LocalAuthentication
import XCTest

/// Enrollment, listing, deletion and who may do them, against the real
/// service, polkitd and virtual sensor.
final class EnrollmentTests: RigTestCase, @unchecked Sendable {
    override func setUpWithError() throws {
        try super.setUpWithError()
        try rig.polkit("org.example.LocalAuth.manage", nil)
    }

    func testEnrollReportsEveryStageAndRetry() async throws {
        let recorder = ProgressRecorder()
        // Stage 1, three scans that do not count (too short, another finger,
        // …), then the others: every one is reported with where it stands.
        let feeder = feed(["SCAN owner", "RETRY 1", "SCAN someone-else", "SCAN owner", "RETRY 2", "RETRY 3",
                           "SCAN owner", "SCAN owner", "SCAN owner"])
        try await LAFingerprints.enroll("right-index-finger", user: nil) { recorder.append($0) }
        try await feeder.value
        XCTAssertEqual(recorder.lines, [
            "enroll-place-finger 0/5",
            "enroll-stage-passed 1/5", "enroll-swipe-too-short 1/5", "enroll-retry-scan 1/5",
            "enroll-stage-passed 2/5", "enroll-finger-not-centered 2/5", "enroll-remove-and-retry 2/5",
            "enroll-stage-passed 3/5", "enroll-stage-passed 4/5", "enroll-stage-passed 5/5",
            "enroll-completed 5/5",
        ])

        // The reader decides the number of stages.
        try service.sensor("SET_ENROLL_STAGES 3")
        let three = ProgressRecorder()
        try await enroll("left-thumb", as: "thumb", user: nil, stages: 3, recorder: three)
        XCTAssertEqual(three.lines, ["enroll-place-finger 0/3", "enroll-stage-passed 1/3", "enroll-stage-passed 2/3",
                                     "enroll-stage-passed 3/3", "enroll-completed 3/3"])

        // Root-only files, one per print, with our header and libfprint's print.
        let path = printPath("right-index-finger")
        XCTAssertEqual(mode(of: path), 0o600)
        for directory in ["prints", "prints/0", "prints/0/virtual_device", "prints/0/virtual_device/0"] {
            XCTAssertEqual(mode(of: service.stateDirectory + "/" + directory), 0o700, directory)
        }
        let header = try String(contentsOfFile: path, encoding: .isoLatin1)
        for line in ["LOCALAUTH-PRINT 1\n", "\nuid 0\n", "\nfinger right-index-finger\n", "\ndriver virtual_device\n",
                     "\ndevice-id 0\n", "\ncreated ", "\nsha256 ", "\n\nFP3"] {
            XCTAssertTrue(header.contains(line), "\(line) missing in \(header.prefix(300))")
        }
        let fingers = try await LAFingerprints.enrolledFingers()
        XCTAssertEqual(fingers, ["left-thumb", "right-index-finger"])
    }

    func testLocalauthctlSaysWhatToDoAtEachStage() throws {
        feed(Array(repeating: "SCAN owner", count: 5))
        let enrolled = try localauthctl(["enroll"])
        XCTAssertEqual(enrolled.status, 0, enrolled.output)
        for line in ["The reader needs 5 scans of the same finger.",
                     "Place your right index finger on the reader (scan 1 of 5).",
                     "Scan 1 of 5 done. Lift your finger, then place it again (scan 2 of 5).",
                     "Scan 4 of 5 done. Lift your finger, then place it again (scan 5 of 5).",
                     "Scan 5 of 5 done.", "Enrolled right-index-finger."] {
            XCTAssertTrue(enrolled.stdout.contains(line + "\n"), "missing \"\(line)\" in:\n\(enrolled.stdout)")
        }
        let again = try localauthctl(["enroll", "right-index-finger"])
        XCTAssertNotEqual(again.status, 0)
        XCTAssertTrue(again.stderr.contains("AlreadyEnrolled"), again.output)
        XCTAssertTrue(again.stderr.contains("--replace"), again.output)

        let list = try localauthctl(["list"])
        XCTAssertEqual(list.status, 0, list.output)
        let lines = list.stdout.split(separator: "\n")
        XCTAssertEqual(lines.count, 2, list.stdout)
        XCTAssertTrue(lines.first?.hasPrefix("FINGER") == true, list.stdout)
        XCTAssertTrue(lines.last?.contains("right-index-finger  localauthd  virtual_device/0") == true, list.stdout)

        let deleted = try localauthctl(["delete", "right-index-finger"])
        XCTAssertEqual(deleted.status, 0, deleted.output)
        XCTAssertEqual(try localauthctl(["list"]).stdout, "No fingers enrolled.\n")
        XCTAssertEqual(try localauthctl(["enroll", "--frobnicate"]).status, 2)
    }

    func testAnEnrolledFingerIsRefusedUnlessReplacing() async throws {
        try await enroll("right-index-finger", as: "first-print", user: nil)
        let firstID = printID(printPath("right-index-finger"))

        // Refused at once, without touching the reader or the file.
        let refused = try gdbus("Enroll", ["right-index-finger"])
        XCTAssertEqual(errorName(refused), "org.example.LocalAuth.Error.AlreadyEnrolled", refused.output)
        let refusedToo = try gdbus("EnrollWithOptions", ["right-index-finger", options(replace: false)])
        XCTAssertEqual(errorName(refusedToo), "org.example.LocalAuth.Error.AlreadyEnrolled", refusedToo.output)
        XCTAssertEqual(printID(printPath("right-index-finger")), firstID)

        // Replacing: a new print, and only the new one matches.
        try await enroll("right-index-finger", as: "second-print", user: nil, replace: true)
        XCTAssertNotEqual(printID(printPath("right-index-finger")), firstID)
        present("first-print", times: 3)
        let old = await evaluate()
        XCTAssertEqual(old.code, .authenticationFailed, "\(old)")
        present("second-print")
        let new = await evaluate()
        XCTAssertTrue(new.succeeded, "\(new)")
    }

    func testListAndDeleteOneAndAll() async throws {
        try await enroll("right-index-finger", as: "index", user: nil)
        try await enroll("left-thumb", as: "thumb", user: nil)
        let value1 = try await LAFingerprints.enrolledFingers()
        XCTAssertEqual(value1, ["left-thumb", "right-index-finger"])
        let prints = try await LAFingerprints.enrolledPrints()
        XCTAssertEqual(prints.map(\.finger).sorted(), ["left-thumb", "right-index-finger"])
        for print in prints {
            XCTAssertEqual(print.source, "localauth")
            XCTAssertEqual(print.reader, "virtual_device/0")
            XCTAssertTrue(print.inUse)
            XCTAssertLessThan(abs(print.created?.timeIntervalSinceNow ?? 1e9), 120)
        }

        try await LAFingerprints.delete("left-thumb")
        let value2 = try await LAFingerprints.enrolledFingers()
        XCTAssertEqual(value2, ["right-index-finger"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: printPath("left-thumb")))
        let missing = try gdbus("DeleteEnrolledFinger", ["left-thumb"])
        XCTAssertEqual(errorName(missing), "org.example.LocalAuth.Error.NotEnrolled", missing.output)
        let unknown = try gdbus("DeleteEnrolledFinger", ["left-toe"])
        XCTAssertEqual(errorName(unknown), "org.freedesktop.DBus.Error.InvalidArgs", unknown.output)

        try await enroll("left-thumb", as: "thumb", user: nil)
        try await LAFingerprints.deleteAll()
        let value3 = try await LAFingerprints.enrolledFingers()
        XCTAssertEqual(value3, [])
        XCTAssertEqual(fingerFiles(in: service.stateDirectory + "/prints/0/virtual_device/0"), [])
        let preflight = try gdbus("CanEvaluatePolicy", ["1"])
        XCTAssertEqual(errorName(preflight), "org.example.LocalAuth.Error.BiometryNotEnrolled", preflight.output)
    }

    func testAnotherUidCannotReadOrChangeRootsPrintsWithoutManage() async throws {
        try await enroll("right-index-finger", as: "owner", user: nil)
        let path = printPath("right-index-finger")
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        // nobody may change its own prints, but polkit refuses it manage.
        try rig.polkit("org.example.LocalAuth.enroll", "yes")
        try rig.polkit("org.example.LocalAuth.manage", "no")
        let denied = "org.example.LocalAuth.Error.PermissionDenied"
        let calls: [(String, [String])] = [
            ("ListEnrolledPrints", [options(user: "root")]),
            ("DeleteEnrolledFingerWithOptions", ["right-index-finger", options(user: "root")]),
            ("DeleteEnrolledFingersWithOptions", [options(user: "root")]),
            ("EnrollWithOptions", ["right-index-finger", options(user: "root", replace: true)]),
            // Refused before the name is looked up: no probing for accounts.
            ("ListEnrolledPrints", [options(user: "no-such-user")]),
        ]
        for (member, arguments) in calls {
            let outcome = try gdbus(member, arguments, asNobody: true)
            XCTAssertEqual(errorName(outcome), denied, "\(member): \(outcome.output)")
        }
        // polkit's default for manage is auth_admin_keep: with no agent to ask, no.
        try rig.polkit("org.example.LocalAuth.manage", nil)
        let byDefault = try gdbus("ListEnrolledPrints", [options(user: "root")], asNobody: true)
        XCTAssertEqual(errorName(byDefault), denied, byDefault.output)
        let tool = try localauthctl(["list", "--user", "root"], asNobody: true)
        XCTAssertEqual(tool.status, 3, tool.output)
        XCTAssertTrue(tool.stderr.contains("PermissionDenied"), tool.output)

        // Its own calls see and touch only its own (empty) set.
        let ownList = try gdbus("ListEnrolledPrints", [options()], asNobody: true)
        XCTAssertEqual(ownList.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "(@aa{sv} [],)", ownList.output)
        let ownNamed = try gdbus("ListEnrolledPrints", [options(user: "nobody")], asNobody: true)
        XCTAssertEqual(ownNamed.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "(@aa{sv} [],)", ownNamed.output)
        let ownDelete = try gdbus("DeleteEnrolledFingers", [], asNobody: true)
        XCTAssertEqual(ownDelete.status, 0, ownDelete.output)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), before, "root's print must be untouched")

        // With manage granted, the same caller may list root's prints.
        try rig.polkit("org.example.LocalAuth.manage", "yes")
        let allowed = try gdbus("ListEnrolledPrints", [options(user: "root")], asNobody: true)
        XCTAssertTrue(allowed.stdout.contains("'finger': <'right-index-finger'>"), allowed.output)
        let noSuchUser = try gdbus("ListEnrolledPrints", [options(user: "no-such-user")], asNobody: true)
        XCTAssertEqual(errorName(noSuchUser), "org.freedesktop.DBus.Error.InvalidArgs", noSuchUser.output)
    }

    func testAnAdministratorManagesAnotherUsersPrints() async throws {
        // Root holds manage (polkit always authorizes root).
        try await enroll("left-thumb", as: "nobodys-thumb", user: "nobody")
        let path = printPath("left-thumb", uid: Self.nobody)
        XCTAssertEqual(mode(of: path), 0o600)
        let value4 = try await LAFingerprints.enrolledFingers()
        XCTAssertEqual(value4, [], "root's own set is unchanged")
        let value5 = try await LAFingerprints.enrolledPrints(user: "nobody").map(\.finger)
        XCTAssertEqual(value5, ["left-thumb"])

        // nobody sees it as its own.
        let own = try gdbus("ListEnrolledFingers", [], asNobody: true)
        XCTAssertEqual(own.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "(['left-thumb'],)", own.output)
        let tool = try localauthctl(["list", "--user", "nobody"])
        XCTAssertTrue(tool.stdout.contains("Prints of nobody:"), tool.output)
        XCTAssertTrue(tool.stdout.contains("left-thumb"), tool.output)

        let deleted = try localauthctl(["delete", "left-thumb", "--user", "nobody"])
        XCTAssertEqual(deleted.status, 0, deleted.output)
        XCTAssertFalse(FileManager.default.fileExists(atPath: path))
    }

    func testPrintsSurviveARestart() async throws {
        try await enroll("right-index-finger", as: "owner", user: nil)
        let state = service.stateDirectory
        XCTAssertEqual(service.stop(), 0)
        service = try ServiceProcess(bus: rig, stateDirectory: state)
        let value6 = try await LAFingerprints.enrolledFingers()
        XCTAssertEqual(value6, ["right-index-finger"])
        present("owner")
        let result = await evaluate()
        XCTAssertTrue(result.succeeded, "\(result)")
    }
}
