import Foundation
import Glibc
import LocalAuthentication
import RigSupport
import XCTest

/// `localauthd --fprintd` (docs/FPRINTD.md) with clients nobody here wrote:
/// Debian's fprintd-enroll, -verify, -list, -delete, pam_fprintd through
/// pamtester, and a GDBus client making GNOME Settings' calls
/// (Tests/Helpers/fprintd-client.py). The daemon runs as fprintd's own tests
/// run fprintd: G_DEBUG=fatal-criticals (a GLib critical aborts it), and every
/// test ends it with SIGTERM and wants a clean exit status.
final class FprintdContractTests: RigTestCase, @unchecked Sendable {
    private var pamFiles: [String] = []
    private let fprintdActions = ["net.reactivated.fprint.device.verify", "net.reactivated.fprint.device.enroll",
                                  "net.reactivated.fprint.device.setusername"]

    override func setUpWithError() throws {
        // Not RigTestCase's service: this class starts its own, with --fprintd.
        try rig.revivePolkit()
        for action in ["org.example.LocalAuth.evaluate", "org.example.LocalAuth.enroll"] + fprintdActions {
            try rig.polkit(action, nil)
        }
        service = try fprintdService()
    }

    override func tearDown() {
        for file in pamFiles { unlink(file) }
        pamFiles = []
        for action in fprintdActions { try? rig.polkit(action, nil) }
        super.tearDown()
    }

    /// Where the current service keeps prints in fprintd's layout.
    private var store = ""

    private func fprintdService(store chosen: String? = nil, environment: [String: String] = [:],
                                arguments: [String] = []) throws -> ServiceProcess {
        let started = try ServiceProcess(bus: rig, fprintdStore: chosen,
                                         environment: ["G_DEBUG": "fatal-criticals"].merging(environment) { $1 },
                                         arguments: ["--fprintd"] + arguments)
        store = chosen ?? (started.stateDirectory as NSString).deletingLastPathComponent + "/fprintd-store"
        return started
    }

    /// Regular files below `directory`.
    private func files(below directory: String) -> [String] {
        let enumerator = FileManager.default.enumerator(atPath: directory)
        var result: [String] = []
        while let relative = enumerator?.nextObject() as? String {
            var info = stat()
            if lstat(directory + "/" + relative, &info) == 0, info.st_mode & S_IFMT == S_IFREG { result.append(relative) }
        }
        return result.sorted()
    }

    /// Ends the service with SIGTERM and wants exit status 0.
    private func stopCleanly(file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(service.stop(), 0, "localauthd --fprintd did not exit cleanly:\n\(service.log)", file: file, line: line)
    }

    // MARK: Running clients

    private var outputs = 0

    /// Starts `program` on the rig's bus; output to a file of its own.
    private func start(_ program: String, _ arguments: [String], asUID uid: UInt32? = nil) throws -> (Child, String) {
        outputs += 1
        let output = rig.directory + "/fprintd-contract-\(getpid())-\(outputs).out"
        unlink(output)
        if let uid { return (try startAs(uid, program, arguments, output: output), output) }
        let child = try Child(program, arguments, environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address],
                              stdoutPath: output, stderrPath: output)
        return (child, output)
    }

    /// Runs `program` to its end; presents `scans` to `sensor`, each once
    /// `ready` has appeared `index + 1` times in its output (so that no scan
    /// waits in the virtual device for a later operation).
    private func run(_ program: String, _ arguments: [String], ready: String? = nil, scans: [String] = [],
                     sensor: String? = nil) throws -> (status: Int32, output: String) {
        let (child, output) = try start(program, arguments)
        for (index, scan) in scans.enumerated() {
            if let ready {
                try waitUntil("'\(ready)' \(index + 1) times in \(output)") {
                    readText(output).components(separatedBy: ready).count > index + 1 || !child.isRunning
                }
            }
            try ServiceProcess.send("SCAN \(scan)", to: sensor ?? service.sensorSocket)
        }
        let status = child.wait(timeout: 60)
        return (status, readText(output))
    }

    private var client: String { (try? testScript("fprintd-client.py")) ?? "" }

    /// fprintd-enroll FINGER USER on localauthd, five scans of `id` (virtual_device: 5 stages).
    private func fprintdEnroll(_ finger: String, _ id: String, sensor: String? = nil) throws -> (status: Int32, output: String) {
        // The first scan once the enrollment started, then one per stage result.
        let (child, output) = try start("/usr/bin/fprintd-enroll", ["-f", finger, "root"])
        try waitForText("Enrolling", in: output)
        for index in 0..<5 {
            if index > 0 {
                try waitUntil("enroll result \(index)") {
                    readText(output).components(separatedBy: "Enroll result:").count > index || !child.isRunning
                }
            }
            try ServiceProcess.send("SCAN \(id)", to: sensor ?? service.sensorSocket)
        }
        return (child.wait(timeout: 60), readText(output))
    }

    // MARK: Debian's tools

    func testDebiansFprintdToolsEnrollListVerifyAndDeleteUnchanged() async throws {
        let empty = try run("/usr/bin/fprintd-list", ["root"])
        XCTAssertEqual(empty.status, 0, empty.output)
        XCTAssertTrue(empty.output.contains("/net/reactivated/Fprint/Device/0"), empty.output)
        XCTAssertTrue(empty.output.contains("User root has no fingers enrolled"), empty.output)

        let enrolled = try fprintdEnroll("right-index-finger", "owner")
        XCTAssertEqual(enrolled.status, 0, enrolled.output)
        XCTAssertEqual(enrolled.output.components(separatedBy: "enroll-stage-passed").count - 1, 4, enrolled.output)
        XCTAssertTrue(enrolled.output.contains("Enroll result: enroll-completed"), enrolled.output)

        // One print, in fprintd's layout, root's 0600 file.
        let file = store + "/root/virtual_device/0/7"
        var info = stat()
        XCTAssertEqual(lstat(file, &info), 0, "the print should be at \(file)")
        XCTAssertEqual(info.st_mode & 0o777, 0o600)
        XCTAssertEqual(info.st_uid, 0)
        XCTAssertEqual(files(below: service.stateDirectory + "/prints"), [], "one print, not a second copy in our layout")
        XCTAssertEqual(files(below: store), ["root/virtual_device/0/7"])

        let listed = try run("/usr/bin/fprintd-list", ["root"])
        XCTAssertTrue(listed.output.contains("- #0: right-index-finger"), listed.output)
        // With --fprintd the print is the service's own: listed as fprintd's, not read-only.
        let ours = try await LAFingerprints.enrolledPrints()
        XCTAssertEqual(ours.map { "\($0.finger) \($0.source) \($0.readOnly)" }, ["right-index-finger fprintd false"])
        let table = try localauthctl(["list"])
        XCTAssertTrue(table.stdout.contains("right-index-finger  fprintd  virtual_device/0"), table.output)
        XCTAssertFalse(table.output.contains("read-only"), table.output)

        let match = try run("/usr/bin/fprintd-verify", ["root"], ready: "Verify started!", scans: ["owner"])
        XCTAssertEqual(match.status, 0, match.output)
        XCTAssertTrue(match.output.contains("Verify result: verify-match (done)"), match.output)
        let noMatch = try run("/usr/bin/fprintd-verify", ["-f", "right-index-finger", "root"], ready: "Verify started!",
                              scans: ["stranger"])
        XCTAssertNotEqual(noMatch.status, 0, noMatch.output)
        XCTAssertTrue(noMatch.output.contains("Verify result: verify-no-match (done)"), noMatch.output)

        // The same print serves an app.
        let fingers = try await LAFingerprints.enrolledFingers()
        XCTAssertEqual(fingers, ["right-index-finger"])
        present("owner")
        let unlocked = await evaluate()
        XCTAssertTrue(unlocked.succeeded, "\(unlocked)")

        let deleted = try run("/usr/bin/fprintd-delete", ["root"])
        XCTAssertEqual(deleted.status, 0, deleted.output)
        XCTAssertTrue(deleted.output.contains("Fingerprints of user root deleted"), deleted.output)
        XCTAssertFalse(FileManager.default.fileExists(atPath: file))
        // As fprintd's file storage leaves it: no directory of a user without prints, the store stays.
        XCTAssertFalse(FileManager.default.fileExists(atPath: store + "/root"), "fprintd's store keeps no empty directory")
        XCTAssertTrue(FileManager.default.fileExists(atPath: store))
        let none = try run("/usr/bin/fprintd-list", ["root"])
        XCTAssertTrue(none.output.contains("User root has no fingers enrolled"), none.output)
        let after = try await LAFingerprints.enrolledFingers()
        XCTAssertEqual(after, [])
        stopCleanly()
    }

    // MARK: GNOME Settings' sequence, then an app

    func testAFingerEnrolledAsGnomeSettingsDoesUnlocksAnLAContextEvaluation() async throws {
        let (child, output) = try start("/usr/bin/python3", [client, "gnome-settings-enroll", "left-index-finger"])
        try waitForText("enrolling", in: output)
        // Five stages, and two scans the reader asks to repeat (each command gives one status).
        let commands = ["SCAN settings-finger", "RETRY 2", "SCAN settings-finger", "SCAN settings-finger", "RETRY 3",
                        "SCAN settings-finger", "SCAN settings-finger"]
        for (index, command) in commands.enumerated() {
            if index > 0 {
                try waitUntil("status \(index)") { readText(output).components(separatedBy: "status ").count > index || !child.isRunning }
            }
            try service.sensor(command)
        }
        XCTAssertEqual(child.wait(timeout: 30), 0, readText(output))
        let lines = readText(output).split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.filter { $0.hasPrefix("status") },
                       ["status enroll-stage-passed false", "status enroll-finger-not-centered false",
                        "status enroll-stage-passed false", "status enroll-stage-passed false",
                        "status enroll-remove-and-retry false", "status enroll-stage-passed false",
                        "status enroll-completed true"])
        XCTAssertTrue(lines.contains("stages 5"), "\(lines)")
        XCTAssertTrue(lines.contains("list-before net.reactivated.Fprint.Error.NoEnrolledPrints"), "\(lines)")
        XCTAssertTrue(lines.contains("fingers left-index-finger"), "\(lines)")

        present("settings-finger")
        let unlocked = await evaluate()
        XCTAssertTrue(unlocked.succeeded, "\(unlocked)")
        present("someone-else", times: 3)
        let refused = await evaluate()
        XCTAssertEqual(refused.code, .authenticationFailed, "\(refused)")

        // Deleted through org.example.LocalAuth: gone for fprintd's clients too.
        try await LAFingerprints.deleteAll()
        XCTAssertEqual(files(below: store), [])
        XCTAssertFalse(FileManager.default.fileExists(atPath: store + "/root"), "as fprintd leaves its store")
        let listed = try run("/usr/bin/fprintd-list", ["root"])
        XCTAssertTrue(listed.output.contains("User root has no fingers enrolled"), listed.output)
        stopCleanly()
    }

    // MARK: Claims

    func testClaimRulesAreFprintds() throws {
        let sequence = try run("/usr/bin/python3", [client, "calls", "VerifyStart:any", "Claim:", "Claim:", "ListEnrolledFingers:",
                                                    "VerifyStart:any", "VerifyStop", "EnrollStart:any", "VerifyStart:pinky",
                                                    "DeleteEnrolledFinger:left-thumb", "DeleteEnrolledFinger:any",
                                                    "DeleteEnrolledFingers2", "EnrollStop", "Release", "Release"])
        let expected = [
            "VerifyStart error net.reactivated.Fprint.Error.ClaimDevice: Device was not claimed before use",
            "Claim ok ",
            "Claim error net.reactivated.Fprint.Error.AlreadyInUse: Device was already claimed",
            "ListEnrolledFingers error net.reactivated.Fprint.Error.NoEnrolledPrints: Failed to discover prints",
            "VerifyStart error net.reactivated.Fprint.Error.NoEnrolledPrints: No fingerprints enrolled",
            "VerifyStop error net.reactivated.Fprint.Error.NoActionInProgress: No verification in progress",
            "EnrollStart error net.reactivated.Fprint.Error.InvalidFingername: Invalid finger name",
            // As fprintd: a name that is no finger's is "any" (here nobody's prints).
            "VerifyStart error net.reactivated.Fprint.Error.NoEnrolledPrints: No fingerprints enrolled",
            "DeleteEnrolledFinger error net.reactivated.Fprint.Error.NoEnrolledPrints: Fingerprint for finger left-thumb is not enrolled",
            "DeleteEnrolledFinger error net.reactivated.Fprint.Error.InvalidFingername: Invalid finger name",
            "DeleteEnrolledFingers2 error net.reactivated.Fprint.Error.NoEnrolledPrints: No fingerprint enrolled",
            "EnrollStop error net.reactivated.Fprint.Error.NoActionInProgress: No enrollment in progress",
            "Release ok ",
            "Release error net.reactivated.Fprint.Error.ClaimDevice: Device was not claimed before use",
        ]
        XCTAssertEqual(sequence.output.split(separator: "\n").map(String.init), expected, sequence.output)

        // A second claimer gets AlreadyInUse; ListEnrolledFingers works meanwhile.
        let (holder, held) = try start("/usr/bin/python3", [client, "hold", ""])
        try waitForText("claimed", in: held)
        let second = try run("/usr/bin/python3", [client, "calls", "Claim:", "ListEnrolledFingers:", "Release"])
        XCTAssertTrue(second.output.contains("Claim error net.reactivated.Fprint.Error.AlreadyInUse"), second.output)
        XCTAssertTrue(second.output.contains("ListEnrolledFingers error net.reactivated.Fprint.Error.NoEnrolledPrints"), second.output)
        XCTAssertTrue(second.output.contains("Release error net.reactivated.Fprint.Error.AlreadyInUse"), second.output)
        // The claimer leaves the bus: released.
        holder.signal(SIGKILL)
        holder.wait()
        try waitUntil("the claim of a client that left is released") {
            service.log.contains("left the bus; released")
        }
        let third = try run("/usr/bin/python3", [client, "calls", "Claim:", "Release"])
        XCTAssertEqual(third.output, "Claim ok \nRelease ok \n")

        // Another uid: polkit decides; another user's name needs setusername.
        let denied = try runAs(65534, "/usr/bin/python3", [try testScript("fprintd-client.py"), "calls", "Claim:", "Claim:root"])
        XCTAssertEqual(denied.stdout, "Claim error net.reactivated.Fprint.Error.PermissionDenied: Not Authorized: net.reactivated.fprint.device.enroll\n"
                       + "Claim error net.reactivated.Fprint.Error.PermissionDenied: Not Authorized: net.reactivated.fprint.device.setusername\n",
                       denied.output)
        try rig.polkit("net.reactivated.fprint.device.verify", "yes")
        let own = try runAs(65534, "/usr/bin/python3", [try testScript("fprintd-client.py"), "calls", "Claim:", "Release", "Claim:root"])
        XCTAssertEqual(own.stdout, "Claim ok \nRelease ok \n"
                       + "Claim error net.reactivated.Fprint.Error.PermissionDenied: Not Authorized: net.reactivated.fprint.device.setusername\n",
                       own.output)
        try rig.polkit("net.reactivated.fprint.device.setusername", "yes")
        let other = try runAs(65534, "/usr/bin/python3", [try testScript("fprintd-client.py"), "calls", "Claim:root", "Release"])
        XCTAssertEqual(other.stdout, "Claim ok \nRelease ok \n", other.output)
        stopCleanly()
    }

    // MARK: A claim holds the reader

    /// How often the log says the reader opened, and closed: open now if they differ.
    private func readerOpenings() -> (opened: Int, closed: Int) {
        let log = service.log
        return (log.components(separatedBy: "reader virtual_device/0 open (").count - 1,
                log.components(separatedBy: "reader virtual_device/0 closed").count - 1)
    }

    private var readerIsOpen: Bool { readerOpenings().opened > readerOpenings().closed }

    /// fprintd opens the device at Claim and keeps it open until Release
    /// (src/device.c: fprint_device_claim, fprint_device_release), and its
    /// tests talk to libfprint's virtual device between Claim and
    /// VerifyStart: the device listens on its socket only while it is open.
    /// Ours holds the reader for the claim without a turn in the reader
    /// queue, so an app's evaluation still runs while the device is claimed
    /// and idle. `--reader-linger 0`: a reader nothing holds closes at once.
    /// On main nothing was open after Claim, and a scan sent then found no socket.
    func testAClaimOpensTheReaderUntilReleaseAndAnAppStillEvaluates() async throws {
        service.stop()
        service = try fprintdService(arguments: ["--reader-linger", "0"])
        try await enroll("right-index-finger", as: "owner")
        try waitUntil("the reader closed after the enrollment") { !readerIsOpen }
        let (holder, output) = try start("/usr/bin/python3", [client, "claim-then-verify", "any"])
        defer { if holder.isRunning { holder.signal(SIGKILL); holder.wait() } }
        try waitForText("claimed", in: output)
        XCTAssertTrue(readerIsOpen, "Claim opened the reader:\n\(service.log)")

        present("owner")
        let unlocked = await evaluate()
        XCTAssertTrue(unlocked.succeeded, "an app's evaluation while the device is claimed: \(unlocked)")
        XCTAssertTrue(readerIsOpen, "the claim still holds the reader after the evaluation:\n\(service.log)")

        // A scan sent between Claim and VerifyStart waits in the device, as in fprintd's tests.
        try ServiceProcess.send("SCAN owner", to: service.sensorSocket, retryFor: 1)
        holder.signal(SIGUSR1)
        XCTAssertEqual(holder.wait(timeout: 20), 0, readText(output))
        XCTAssertEqual(readText(output).split(separator: "\n").map(String.init),
                       ["claimed", "verifying", "selected right-index-finger", "status verify-match true", "released"])
        try waitUntil("Release gave the reader back") { !readerIsOpen }
        stopCleanly()
    }

    /// fprintd's Claim opens the device once; if that fails the answer is
    /// Internal, "Open failed with error: …", and the device stays free
    /// (src/device.c: dev_open_cb). As fprintd's test_claim_device_open_fail,
    /// the virtual device's directory is moved away. On main the Claim
    /// succeeded with nothing open.
    func testAClaimWhoseOpenFailsIsInternalAndLeavesTheDeviceFree() throws {
        service.stop()
        let directory = rig.directory + "/fprintd-claim-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        service = try fprintdService(environment: ["FP_VIRTUAL_DEVICE": directory + "/vfp.sock"])
        try FileManager.default.moveItem(atPath: directory, toPath: directory + "-moved")
        let failed = try run("/usr/bin/python3", [client, "calls", "Claim:", "Release"])
        let lines = failed.output.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 2, failed.output)
        XCTAssertTrue(lines.first?.hasPrefix("Claim error net.reactivated.Fprint.Error.Internal: Open failed with error: ") ?? false,
                      failed.output)
        XCTAssertEqual(lines.last, "Release error net.reactivated.Fprint.Error.ClaimDevice: Device was not claimed before use")
        try FileManager.default.moveItem(atPath: directory + "-moved", toPath: directory)
        let claimed = try run("/usr/bin/python3", [client, "calls", "Claim:", "Release"])
        XCTAssertEqual(claimed.output, "Claim ok \nRelease ok \n")
        stopCleanly()
    }

    // MARK: The manager and the properties

    func testManagerDevicesAndProperties() throws {
        let manager = try run("/usr/bin/python3", [client, "manager"])
        XCTAssertEqual(manager.output, "devices /net/reactivated/Fprint/Device/0\ndefault /net/reactivated/Fprint/Device/0\n")
        func property(_ name: String) throws -> String {
            let outcome = try busctl(["get-property", "net.reactivated.Fprint", "/net/reactivated/Fprint/Device/0",
                                      "net.reactivated.Fprint.Device", name])
            return outcome.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        XCTAssertEqual(try property("name"), "s \"Virtual device for debugging\"")
        XCTAssertEqual(try property("num-enroll-stages"), "i 5")
        XCTAssertEqual(try property("scan-type"), "s \"swipe\"")
        XCTAssertEqual(try property("finger-present"), "b false")
        XCTAssertEqual(try property("finger-needed"), "b false")

        // finger-needed follows the reader while a verify waits for a finger.
        let (monitor, watched) = try start("/usr/bin/dbus-monitor", ["--address", rig.address,
            "type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'"])
        defer { monitor.signal(SIGTERM); monitor.wait() }
        try waitUntil("dbus-monitor is monitoring") { readText(watched).contains("NameLost") || readText(watched).contains("NameAcquired") }
        let enrolled = try fprintdEnroll("right-index-finger", "owner")
        XCTAssertEqual(enrolled.status, 0, enrolled.output)
        try waitForText("finger-needed", in: watched)
        XCTAssertTrue(readText(watched).contains("/net/reactivated/Fprint/Device/0"), readText(watched))

        // No reader: no device, and NoSuchDevice for the default.
        stopCleanly()
        service = try ServiceProcess(bus: rig, withReader: false, environment: ["G_DEBUG": "fatal-criticals"], arguments: ["--fprintd"])
        let none = try run("/usr/bin/python3", [client, "manager"])
        XCTAssertEqual(none.output, "devices \ndefault net.reactivated.Fprint.Error.NoSuchDevice\n")
        stopCleanly()
    }

    // MARK: One lockout

    private func pamService(_ line: String) throws -> String {
        let name = "localauth-fprintd-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let path = "/etc/pam.d/" + name
        try (line + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        pamFiles.append(path)
        return name
    }

    /// pamtester SERVICE root authenticate, presenting `scans` one at a time as pam_fprintd asks.
    private func pamtester(_ service: String, scans: [String]) throws -> String {
        let result = try run("/usr/bin/stdbuf", ["-o0", "/usr/bin/pamtester", "-v", service, "root", "authenticate"],
                             ready: "fingerprint reader", scans: scans)
        return result.output
    }

    func testPamFprintdAndLAContextShareOneLockout() async throws {
        try await enroll("right-index-finger", as: "owner")
        let once = try pamService("auth required pam_fprintd.so max-tries=1 timeout=20")
        let matched = try pamtester(once, scans: ["owner"])
        XCTAssertTrue(matched.contains("successfully authenticated"), matched)

        // Three failures in an app, two at "the lock screen": five, locked out.
        present("stranger", times: 3)
        let failed = await evaluate()
        XCTAssertEqual(failed.code, .authenticationFailed, "\(failed)")
        let twice = try pamService("auth required pam_fprintd.so max-tries=2 timeout=20")
        let wrong = try pamtester(twice, scans: ["stranger", "stranger"])
        XCTAssertTrue(wrong.contains("Failed to match fingerprint"), wrong)
        XCTAssertFalse(wrong.contains("successfully authenticated"), wrong)
        XCTAssertTrue(service.log.contains("through fprintd's interface (5 of 5 in a row)"), service.log)

        // The app is locked out without a scan; so is pam_fprintd, told why.
        let locked = await evaluate()
        XCTAssertEqual(locked.code, .biometryLockout, "\(locked)")
        let refused = try run("/usr/bin/python3", [client, "verify", "any"])
        XCTAssertTrue(refused.output.contains("verify-start net.reactivated.Fprint.Error.PermissionDenied Locked out:"), refused.output)
        let pamLocked = try runProgram("/usr/bin/pamtester", ["-v", once, "root", "authenticate"],
                                       environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address], timeout: 30)
        XCTAssertTrue(pamLocked.output.contains("Authentication failure"), pamLocked.output)

        // Another uid cannot lift it (polkit's manage action: no agent, no
        // administrator), and root stays locked out.
        let notAdmin = try runAs(65534, Paths.localauthctl, ["reset-lockout", "--user", "root"])
        XCTAssertEqual(notAdmin.status, 3, notAdmin.output)
        XCTAssertTrue(notAdmin.output.contains("PermissionDenied"), notAdmin.output)
        let stillLocked = await evaluate()
        XCTAssertEqual(stillLocked.code, .biometryLockout, "\(stillLocked)")

        // An administrator lifts it for both, with the person's tool.
        let reset = try runProgram(Paths.localauthctl, ["reset-lockout", "--user", "root"],
                                   environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address])
        XCTAssertEqual(reset.status, 0, reset.output)
        XCTAssertTrue(reset.output.contains("lockout of root is lifted"), reset.output)
        let again = try pamtester(once, scans: ["owner"])
        XCTAssertTrue(again.contains("successfully authenticated"), again)
        stopCleanly()
    }

    // MARK: Switching from fprintd and back

    func testSwitchingFromFprintdAndBackKeepsEveryPrint() throws {
        // Debian's fprintd enrolls a finger in its store.
        service.stop()
        let fprintdStore = rig.directory + "/fprintd-state"
        try? FileManager.default.removeItem(atPath: fprintdStore)
        let fprintdSocket = rig.directory + "/fprintd-switch-vfp.sock"
        func startFprintd(keepingItsStore keep: Bool = false) throws {
            // rig.sh starts fprintd with an empty store unless told to keep it.
            let started = try runProgram(Paths.root + "/scripts/rig.sh", ["fprintd", rig.directory, fprintdSocket],
                                         environment: keep ? ["RIG_FPRINTD_KEEP_STATE": "1"] : [:])
            XCTAssertEqual(started.status, 0, started.output)
        }
        func stopFprintd() {
            if let text = try? String(contentsOfFile: rig.directory + "/fprintd.pid", encoding: .utf8),
               let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                kill(pid, SIGTERM)
                try? waitUntil("fprintd exited") { kill(pid, 0) != 0 }
            }
        }
        addTeardownBlock { stopFprintd() }
        try startFprintd()
        let byFprintd = try fprintdEnroll("right-index-finger", "from-fprintd", sensor: fprintdSocket)
        XCTAssertEqual(byFprintd.status, 0, byFprintd.output)
        stopFprintd()

        // localauthd --fprintd on the same store: verifies it, enrolls another.
        service = try fprintdService(store: fprintdStore)
        let verified = try run("/usr/bin/fprintd-verify", ["root"], ready: "Verify started!", scans: ["from-fprintd"])
        XCTAssertTrue(verified.output.contains("verify-match (done)"), verified.output)
        let byUs = try fprintdEnroll("left-thumb", "from-localauthd")
        XCTAssertEqual(byUs.status, 0, byUs.output)
        stopCleanly()

        // Back to fprintd: both prints are there, and ours matches.
        try startFprintd(keepingItsStore: true)
        let listed = try run("/usr/bin/fprintd-list", ["root"])
        XCTAssertTrue(listed.output.contains("left-thumb") && listed.output.contains("right-index-finger"), listed.output)
        let theirs = try run("/usr/bin/fprintd-verify", ["-f", "left-thumb", "root"], ready: "Verify started!",
                             scans: ["from-localauthd"], sensor: fprintdSocket)
        XCTAssertTrue(theirs.output.contains("verify-match (done)"), theirs.output)
        stopFprintd()
        service = try fprintdService(store: fprintdStore)
    }

    // MARK: Our own layout moves into fprintd's

    func testStartingWithFprintdMovesOurPrintsIntoFprintdsLayout() async throws {
        // The default mode enrolls into our own layout.
        service.stop()
        let state = rig.directory + "/fprintd-move-\(UInt32.random(in: 0...UInt32.max))"
        let fprintdStore = state + "-fprint"
        service = try ServiceProcess(bus: rig, stateDirectory: state, fprintdStore: fprintdStore)
        try await enroll("left-middle-finger", as: "moved")
        XCTAssertEqual(files(below: state + "/prints"), ["0/virtual_device/0/left-middle-finger"])
        XCTAssertEqual(files(below: fprintdStore), [])
        XCTAssertEqual(service.stop(), 0)

        // --fprintd: the print is fprintd's now, and still ours.
        service = try ServiceProcess(bus: rig, stateDirectory: state, fprintdStore: fprintdStore,
                                     environment: ["G_DEBUG": "fatal-criticals"], arguments: ["--fprintd"])
        store = fprintdStore
        XCTAssertEqual(files(below: state + "/prints"), [])
        XCTAssertEqual(files(below: fprintdStore), ["root/virtual_device/0/3"])
        XCTAssertTrue(service.log.contains("moved to fprintd's layout"), service.log)
        let listed = try run("/usr/bin/fprintd-list", ["root"])
        XCTAssertTrue(listed.output.contains("- #0: left-middle-finger"), listed.output)
        present("moved")
        let unlocked = await evaluate()
        XCTAssertTrue(unlocked.succeeded, "\(unlocked)")
        stopCleanly()
    }

    // MARK: fprintd's environment and options

    /// STATE_DIRECTORY as fprintd reads it (the first directory: the prints),
    /// the second for our state; -t keeps the service up.
    func testStateDirectoryIsReadAsFprintdReadsIt() throws {
        service.stop()
        let base = rig.directory + "/fprintd-env-\(UInt32.random(in: 0...UInt32.max))"
        let log = base + ".log", socket = base + ".sock"
        try FileManager.default.createDirectory(atPath: base + "-fprint", withIntermediateDirectories: true)
        let daemon = try Child(Paths.localauthd, ["--fprintd", "-t"],
                               environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address, "FP_DRIVERS_WHITELIST": "virtual_device",
                                             "FP_VIRTUAL_DEVICE": socket, "G_DEBUG": "fatal-criticals",
                                             "STATE_DIRECTORY": base + "-fprint:" + base + "-state"],
                               stdoutPath: log, stderrPath: log)
        defer { if daemon.isRunning { daemon.signal(SIGKILL); daemon.wait() } }
        try waitForText("serving org.example.LocalAuth", in: log)
        XCTAssertTrue(readText(log).contains("prints in fprintd's layout under \(base)-fprint"), readText(log))
        XCTAssertTrue(readText(log).contains("state in \(base)-state"), readText(log))
        let enrolled = try fprintdEnroll("right-thumb", "env", sensor: socket)
        XCTAssertEqual(enrolled.status, 0, enrolled.output)
        XCTAssertEqual(files(below: base + "-fprint"), ["root/virtual_device/0/6"])
        daemon.signal(SIGTERM)
        XCTAssertEqual(daemon.wait(timeout: 10), 0, readText(log))
        service = try fprintdService()
    }

    // MARK: Retries and hot-unplug during a verify

    func testAVerifyReportsRetriesAndAnUnpluggedReader() async throws {
        try await enroll("right-index-finger", as: "owner")
        let (first, verifying) = try start("/usr/bin/python3", [client, "verify", "any"])
        try waitForText("verifying", in: verifying)
        try service.sensor("RETRY 1")
        try waitForText("status verify-swipe-too-short false", in: verifying)
        try service.sensor("SCAN owner")
        XCTAssertEqual(first.wait(timeout: 20), 0, readText(verifying))
        XCTAssertEqual(readText(verifying).split(separator: "\n").map(String.init),
                       // VerifyFingerSelected follows VerifyStart's reply, as in fprintd.
                       ["verifying", "selected right-index-finger", "status verify-swipe-too-short false",
                        "status verify-match true"])

        let (second, unplugged) = try start("/usr/bin/python3", [client, "verify", "right-index-finger"])
        try waitForText("verifying", in: unplugged)
        try service.sensor("UNPLUG")
        try waitForText("status verify-disconnected true", in: unplugged)
        second.wait(timeout: 20)
        try waitUntil("the unplugged reader's object is gone") {
            try run("/usr/bin/python3", [client, "manager"]).output == "devices \ndefault net.reactivated.Fprint.Error.NoSuchDevice\n"
        }
        // Issue 30 item 9: the object itself is gone from the bus (not served,
        // not listed under its parent), not only from GetDevices: on 1c36356
        // every unplug left one exported and kept for the process's life.
        let gone = try busctl(["introspect", "net.reactivated.Fprint", "/net/reactivated/Fprint/Device/0"])
        XCTAssertNotEqual(gone.status, 0, gone.output)
        let tree = try busctl(["tree", "net.reactivated.Fprint"])
        XCTAssertFalse(tree.output.contains("/net/reactivated/Fprint/Device/0"), tree.output)
        stopCleanly()
    }

    /// libfprint's errors from the real virtual device (its ERROR command,
    /// as fprintd's tests send them) end a verify and an enroll with fprintd
    /// 1.94's statuses: PROTO is "disconnected", DATA_NOT_FOUND ends a verify
    /// with verify-no-match (counted nowhere). On main both PROTOs were
    /// unknown-error, and so was DATA_NOT_FOUND.
    func testLibfprintErrorsEndAVerifyAndAnEnrollWithFprintdsStatus() async throws {
        try await enroll("right-index-finger", as: "owner")
        for (code, expected) in [(5, "status verify-disconnected true"), (7, "status verify-no-match true")] {
            let (verifier, verifying) = try start("/usr/bin/python3", [client, "verify", "any"])
            try waitForText("verifying", in: verifying)
            try service.sensor("ERROR \(code)")
            XCTAssertEqual(verifier.wait(timeout: 20), 0, readText(verifying))
            XCTAssertEqual(readText(verifying), "verifying\nselected right-index-finger\n\(expected)\n", "ERROR \(code)")
        }
        XCTAssertFalse(service.log.contains("failed fingerprint match"), "no scan was judged: \(service.log)")
        let (enroller, enrolling) = try start("/usr/bin/python3", [client, "gnome-settings-enroll", "left-thumb"])
        try waitForText("enrolling", in: enrolling)
        try service.sensor("SCAN thumb")
        try waitForText("status enroll-stage-passed", in: enrolling)
        try service.sensor("ERROR 5")
        try waitForText("status enroll-disconnected true", in: enrolling)
        XCTAssertEqual(enroller.wait(timeout: 20), 0, readText(enrolling))
        stopCleanly()
    }

    /// fprintd's VerifyStart (src/device.c finger_name_to_fp_finger): a
    /// name that is no finger's is "any", and a finger not enrolled is
    /// NoEnrolledPrints "No such print N". On main the first was
    /// InvalidFingername.
    func testAFingerNameThatIsNoFingersVerifiesAnyAndOneNotEnrolledIsNoEnrolledPrints() async throws {
        try await enroll("right-index-finger", as: "owner")
        let (verifier, verifying) = try start("/usr/bin/python3", [client, "verify", "some-garbage"])
        try waitForText("verifying", in: verifying)
        try service.sensor("SCAN owner")
        XCTAssertEqual(verifier.wait(timeout: 20), 0, readText(verifying))
        XCTAssertEqual(readText(verifying), "verifying\nselected right-index-finger\nstatus verify-match true\n")
        let missing = try run("/usr/bin/python3", [client, "calls", "Claim:", "VerifyStart:right-little-finger", "Release"])
        XCTAssertEqual(missing.output.split(separator: "\n").map(String.init),
                       ["Claim ok ", "VerifyStart error net.reactivated.Fprint.Error.NoEnrolledPrints: No such print 10", "Release ok "])
        stopCleanly()
    }

    // MARK: A reader that identifies (virtual_device_storage)

    /// fprintd's duplicate check (one identify over every print on the reader,
    /// counted as a stage), enroll-duplicate, and "any" as identification.
    func testOnAReaderThatIdentifiesEnrollChecksForDuplicatesAndAnyIdentifies() async throws {
        service.stop()
        let socket = rig.directory + "/fprintd-storage-\(UInt32.random(in: 0...UInt32.max)).sock"
        service = try ServiceProcess(bus: rig, environment: ["G_DEBUG": "fatal-criticals", "FP_VIRTUAL_DEVICE": "",
                                                             "FP_DRIVERS_WHITELIST": "virtual_device_storage",
                                                             "FP_VIRTUAL_DEVICE_STORAGE": socket],
                                     arguments: ["--fprintd"])
        store = (service.stateDirectory as NSString).deletingLastPathComponent + "/fprintd-store"
        func enroll(_ finger: String, commands: [String]) throws -> [String] {
            let (child, output) = try start("/usr/bin/python3", [client, "gnome-settings-enroll", finger])
            try waitForText("enrolling", in: output)
            for (index, command) in commands.enumerated() {
                if index > 0 {
                    try waitUntil("status \(index)") { readText(output).components(separatedBy: "status ").count > index || !child.isRunning }
                }
                try ServiceProcess.send(command, to: socket)
            }
            XCTAssertEqual(child.wait(timeout: 30), 0, readText(output))
            return readText(output).split(separator: "\n").map(String.init)
        }
        // The duplicate check takes the first scan: six scans, six statuses.
        let first = try enroll("right-index-finger", commands: Array(repeating: "SCAN alpha", count: 6))
        XCTAssertTrue(first.contains("stages 6"), "\(first)")
        XCTAssertEqual(first.filter { $0.hasPrefix("status") },
                       Array(repeating: "status enroll-stage-passed false", count: 5) + ["status enroll-completed true"])
        // The same finger again, as another finger: refused at the first scan.
        let again = try enroll("left-thumb", commands: ["SCAN alpha"])
        XCTAssertEqual(again.filter { $0.hasPrefix("status") }, ["status enroll-duplicate true"])
        XCTAssertTrue(again.contains("fingers right-index-finger"), "\(again)")
        XCTAssertEqual(files(below: store), ["root/virtual_device_storage/0/7"])

        let (verifier, verifying) = try start("/usr/bin/python3", [client, "verify", "any"])
        try waitForText("verifying", in: verifying)
        try ServiceProcess.send("SCAN alpha", to: socket)
        XCTAssertEqual(verifier.wait(timeout: 20), 0, readText(verifying))
        // One print: fprintd 1.94 verifies it and names its finger, even on a reader that identifies.
        XCTAssertEqual(readText(verifying), "verifying\nselected right-index-finger\nstatus verify-match true\n")

        // Deleting through fprintd's interface deletes on the chip, as localauthctl's delete does.
        try rig.polkit("org.example.LocalAuth.manage", "yes")
        addTeardownBlock { [rig] in try? rig.polkit("org.example.LocalAuth.manage", nil) }
        let before = try await LAFingerprints.readerPrints()
        XCTAssertEqual(before.map(\.owned), [true], "the chip holds the enrolled print")
        let (deleter, deleting) = try start("/usr/bin/python3", [client, "calls", "Claim:", "DeleteEnrolledFinger:right-index-finger",
                                                                "Release"])
        XCTAssertEqual(deleter.wait(timeout: 20), 0, readText(deleting))
        XCTAssertTrue(readText(deleting).contains("DeleteEnrolledFinger ok"), readText(deleting))
        XCTAssertEqual(files(below: store), [])
        let after = try await LAFingerprints.readerPrints()
        XCTAssertEqual(after.count, 0, "the print left the chip too: \(after)")
        stopCleanly()
    }

    // MARK: SIGTERM at any moment

    /// Issue 30 item 3: fprintd ends a verify cancelled by Release or by
    /// VerifyStop with its final VerifyStatus, `verify-no-match` and done
    /// (src/device.c: a cancelled verify's result is `verify-no-match`;
    /// Release and VerifyStop wait for the action to complete before they
    /// answer), so the status comes before the reply. On 1c36356 nothing
    /// came, and a client waiting for the final status waited for ever.
    func testReleaseOrVerifyStopDuringAVerifySendsTheFinalStatusFirst() async throws {
        let enrolled = try fprintdEnroll("right-index-finger", "owner-finger")
        XCTAssertEqual(enrolled.status, 0, enrolled.output)
        for method in ["Release", "VerifyStop"] {
            let (child, output) = try start("/usr/bin/python3", [client, "interrupt", "right-index-finger", method])
            XCTAssertEqual(child.wait(timeout: 60), 0, readText(output))
            let lines = readText(output).split(separator: "\n").map(String.init)
            let status = lines.firstIndex(of: "status verify-no-match true")
            let reply = lines.firstIndex(of: "\(method) returned")
            XCTAssertNotNil(status, "\(method): no final status: \(lines)\n\(service.log)")
            XCTAssertNotNil(reply, "\(method): \(lines)")
            if let status, let reply { XCTAssertLessThan(status, reply, "\(method): the status must precede the reply: \(lines)") }
            XCTAssertEqual(lines.filter { $0.hasPrefix("status ") }.count, 1, "\(method): one final status: \(lines)")
            // Nothing was judged: no failed match counted.
            XCTAssertFalse(service.log.contains("failed fingerprint match"), service.log)
            if method == "VerifyStop" { _ = try run("/usr/bin/python3", [client, "calls", "Release"]) }
        }
    }

    /// Issue 30 item 6: a claimer that leaves between its Claim's arrival
    /// and the claim being set (polkit's answer is an await) must not leave
    /// the device claimed by nobody, for ever (AlreadyInUse for everyone, no
    /// idle exit). 2,000 claimers each close 0-4 ms after sending Claim;
    /// then another client claims and releases.
    func testAClaimerThatLeftNeverKeepsTheDevice() throws {
        let race = try run("/usr/bin/python3", [try testScript("claim-race.py"), "2000"])
        XCTAssertEqual(race.status, 0, race.output)
        XCTAssertTrue(race.output.contains("sent=2000"), race.output)
        // Whatever was still on its way has arrived and ended.
        try waitUntil("every claim ended", timeout: 60) {
            let after = try self.run("/usr/bin/python3", [self.client, "calls", "Claim:", "Release"])
            return after.output.contains("Claim ok") && after.output.contains("Release ok")
        }
        XCTAssertTrue(service.isRunning, service.log)
    }

    func testSigtermDuringClaimVerifyOrEnrollExitsCleanly() async throws {
        try await enroll("right-index-finger", as: "owner")
        // Claimed and idle: the claim keeps the reader open (as fprintd's
        // Claim opens the device), and gives it back at SIGTERM, so the
        // readers close and the service exits.
        let (holder, held) = try start("/usr/bin/python3", [client, "hold", ""])
        try waitForText("claimed", in: held)
        XCTAssertTrue(readerIsOpen, service.log)
        stopCleanly()
        XCTAssertFalse(readerIsOpen, "closed before the exit: \(service.log)")
        holder.signal(SIGTERM)
        holder.wait()

        // A verify waiting for a finger.
        service = try fprintdService(store: store)
        let (verifier, verifying) = try start("/usr/bin/python3", [client, "verify", "any"])
        try waitForText("verifying", in: verifying)
        stopCleanly()
        // The verify is cancelled, so its final status comes first, as for
        // Release (fprintd's verify-no-match), then the name goes.
        try waitUntil("the verify ended") {
            let text = readText(verifying)
            return text.contains("status verify-no-match true") || text.contains("service-gone")
        }
        verifier.wait(timeout: 10)

        // An enrollment between two stages.
        service = try fprintdService(store: store)
        let (enroller, enrolling) = try start("/usr/bin/python3", [client, "gnome-settings-enroll", "left-thumb"])
        try waitForText("enrolling", in: enrolling)
        try service.sensor("SCAN halfway")
        try waitForText("status enroll-stage-passed", in: enrolling)
        stopCleanly()
        // As fprintd: a cancelled enrollment ends with enroll-failed.
        try waitForText("status enroll-failed true", in: enrolling)
        enroller.wait(timeout: 10)
        service = try fprintdService(store: store)
    }
}
