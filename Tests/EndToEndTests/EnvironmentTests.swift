import Foundation
import Glibc
import LocalAuthentication
import RigSupport
import XCTest

/// The world around the reader (issue 15): suspend and resume, the lid,
/// remote callers, the password after boot, LAEnvironment. logind and UPower
/// are python-dbusmock's templates on the rig's bus (services we do not own);
/// they are stopped after each test, so the other suites keep a bus without
/// logind.
final class EnvironmentTests: RigTestCase, @unchecked Sendable {
    private var mocks: [Child] = []
    static let appID = "org.example.SleepTest"

    override func setUpWithError() throws {
        try super.setUpWithError()
        for template in ["logind", "upower"] {
            let log = rig.directory + "/mock-\(template)-\(UInt32.random(in: 0...UInt32.max)).log"
            mocks.append(try Child("/usr/bin/python3", ["-m", "dbusmock", "--system", "--template", template],
                                   environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address], stdoutPath: log, stderrPath: log))
        }
        for name in ["org.freedesktop.login1", "org.freedesktop.UPower"] {
            try waitUntil("\(name) is on the bus") {
                try runProgram("/usr/bin/dbus-send", ["--bus=\(rig.address)", "--print-reply", "--dest=org.freedesktop.DBus",
                                                      "/org/freedesktop/DBus", "org.freedesktop.DBus.NameHasOwner",
                                                      "string:\(name)"]).stdout.contains("boolean true")
            }
        }
        XCTAssertEqual(try world(["setup"]).status, 0)
        // The service follows logind from its start.
        try restart()
    }

    override func tearDown() {
        super.tearDown()
        for mock in mocks {
            mock.signal(SIGTERM)
            mock.wait(timeout: 5)
        }
        mocks = []
    }

    /// The reader was closed before logind's sleep inhibitor went; then
    /// resume, and wait for the new inhibitor.
    private func assertClosedBeforeTheInhibitorWentThenResume(line: UInt = #line) throws {
        let log = service.log
        let closed = try XCTUnwrap(log.range(of: "reader virtual_device/0 closed"), log, line: line)
        let released = try XCTUnwrap(log.range(of: "released logind's sleep inhibitor"), log, line: line)
        XCTAssertLessThan(closed.lowerBound, released.lowerBound, log, line: line)

        try world(["sleep", "false"])
        try waitUntil("a new inhibitor is held") { try inhibitors().contains("sleep localauthd delay") }
    }

    private func restart(arguments: [String] = [], environment: [String: String] = [:]) throws {
        let state = service.stateDirectory
        service.stop()
        service = try ServiceProcess(bus: rig, stateDirectory: state, environment: environment, arguments: arguments)
    }

    @discardableResult
    private func world(_ arguments: [String]) throws -> Outcome {
        let outcome = try runProgram("/usr/bin/python3", [try testScript("mock-world.py"), rig.address] + arguments)
        XCTAssertEqual(outcome.status, 0, outcome.output)
        return outcome
    }

    private func inhibitors() throws -> String { try world(["inhibitors"]).stdout }

    /// The reader closed after its last operation (the linger is over): the
    /// next call's "open" in the log is that call's.
    private func waitUntilTheReaderIsClosed() throws {
        try waitUntil("the reader is closed") {
            let log = self.service.log
            return log.components(separatedBy: "reader virtual_device/0 open").count
                == log.components(separatedBy: "reader virtual_device/0 closed").count
        }
    }

    func testSleepEndsTheScanAndReleasesTheInhibitorAndResumeServesAgain() async throws {
        try waitUntil("the service holds a delay inhibitor") { try inhibitors().contains("sleep localauthd delay") }
        try await enroll("right-index-finger", as: "owner")

        let pending = try await startEvaluation()
        try world(["sleep", "true"])
        let result = await pending.value
        XCTAssertEqual(result.code, .systemCancel, "\(result)")
        // The readers are closed, then the inhibitor released: logind may suspend.
        try waitUntil("the inhibitor is released") { try !inhibitors().contains("localauthd") }
        XCTAssertTrue(service.log.contains("released logind's sleep inhibitor"), service.log)
        let asleep = try gdbus("CanEvaluatePolicy", ["1"])
        XCTAssertEqual(errorName(asleep), "org.example.LocalAuth.Error.BiometryNotAvailable", asleep.output)

        try assertClosedBeforeTheInhibitorWentThenResume()
        present("owner")
        let again = await evaluate()
        XCTAssertTrue(again.succeeded, "an evaluation started just after resume works: \(again)")
    }

    /// `--fprintd` (docs/FPRINTD.md): sleep ends a verify of fprintd's
    /// interface through the same sleep cycle (its client hears an error
    /// status), the reader closes before the inhibitor goes, a VerifyStart
    /// while asleep is refused in fprintd's words, and after resume it works.
    func testSleepEndsAnFprintdVerifyBeforeTheInhibitorGoes() async throws {
        try restart(arguments: ["--fprintd"])
        try waitUntil("the service holds a delay inhibitor") { try inhibitors().contains("sleep localauthd delay") }
        try await enroll("right-index-finger", as: "owner")
        let client = try testScript("fprintd-client.py")
        func verify(_ name: String) throws -> (Child, String) {
            let output = rig.directory + "/fprintd-sleep-\(name)-\(UInt32.random(in: 0...UInt32.max)).out"
            let child = try Child("/usr/bin/python3", [client, "verify", "any"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address],
                                  stdoutPath: output, stderrPath: output)
            return (child, output)
        }
        let (verifier, verifying) = try verify("before")
        try waitForText("verifying", in: verifying)
        try world(["sleep", "true"])
        try waitForText("status verify-unknown-error true", in: verifying)
        XCTAssertEqual(verifier.wait(timeout: 10), 0, readText(verifying))
        try waitUntil("the inhibitor is released") { try !inhibitors().contains("localauthd") }
        let log = service.log
        let closed = try XCTUnwrap(log.range(of: "reader virtual_device/0 closed"), log)
        let released = try XCTUnwrap(log.range(of: "released logind's sleep inhibitor"), log)
        XCTAssertLessThan(closed.lowerBound, released.lowerBound, log)

        let (refused, refusing) = try verify("asleep")
        XCTAssertEqual(refused.wait(timeout: 20), 0, readText(refusing))
        XCTAssertTrue(readText(refusing).contains("verify-start net.reactivated.Fprint.Error.PermissionDenied Reader unavailable:"),
                      readText(refusing))

        try world(["sleep", "false"])
        try waitUntil("a new inhibitor is held") { try inhibitors().contains("sleep localauthd delay") }
        let (again, matching) = try verify("after")
        try waitForText("verifying", in: matching)
        try service.sensor("SCAN owner")
        XCTAssertEqual(again.wait(timeout: 20), 0, readText(matching))
        XCTAssertTrue(readText(matching).contains("status verify-match true"), readText(matching))
    }

    /// `--fprintd`: a claim keeps the reader open (fprintd's Claim opens the
    /// device), so sleep takes it back: the reader closes before the
    /// inhibitor goes while the device stays claimed, and after resume the
    /// claim has the reader open again, until its claimer leaves. On main a
    /// claim held nothing, and the reader stayed closed after resume.
    func testSleepClosesAClaimedReaderAndResumeOpensItAgain() async throws {
        try restart(arguments: ["--fprintd", "--reader-linger", "0"])
        try waitUntil("the service holds a delay inhibitor") { try inhibitors().contains("sleep localauthd delay") }
        func opened(_ word: String) -> Int { service.log.components(separatedBy: "reader virtual_device/0 \(word)").count - 1 }
        var readerIsOpen: Bool { opened("open (") > opened("closed") }
        let client = try testScript("fprintd-client.py")
        let output = rig.directory + "/fprintd-sleep-claim-\(UInt32.random(in: 0...UInt32.max)).out"
        let holder = try Child("/usr/bin/python3", [client, "hold", ""], environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address],
                               stdoutPath: output, stderrPath: output)
        defer { if holder.isRunning { holder.signal(SIGKILL); holder.wait() } }
        try waitForText("claimed", in: output)
        XCTAssertTrue(readerIsOpen, "Claim opened the reader: \(service.log)")

        try world(["sleep", "true"])
        try waitUntil("the inhibitor is released") { try !inhibitors().contains("localauthd") }
        XCTAssertFalse(readerIsOpen, "closed for sleep, claimed or not: \(service.log)")
        try assertClosedBeforeTheInhibitorWentThenResume()
        try waitUntil("resume opened the claimed reader again") { readerIsOpen }
        let second = try runProgram("/usr/bin/python3", [client, "calls", "Claim:"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address])
        XCTAssertEqual(second.stdout, "Claim error net.reactivated.Fprint.Error.AlreadyInUse: Device was already claimed\n",
                       "the claim outlived the sleep: \(second.output)")
        holder.signal(SIGTERM)
        holder.wait()
        try waitUntil("the claimer left: the reader closes") { !readerIsOpen }
    }

    /// Issue 20, item 3: sleep ends AuthorizeRight's and VerifyUser's scans
    /// too (not only EvaluatePolicy's), before the inhibitor goes, and the
    /// reader works after resume.
    func testSleepEndsAuthorizeRightAndVerifyUserScansBeforeTheInhibitorGoes() async throws {
        try waitUntil("the service holds a delay inhibitor") { try inhibitors().contains("sleep localauthd delay") }
        try await enroll("right-index-finger", as: "owner")
        for action in ["org.example.LocalAuth.rights.use", "org.example.LocalAuth.rights.manage"] { try rig.polkit(action, "yes") }
        let saved = try gdbus("SaveRight", ["sleepy", "biometry", "{'app-id': <'\(Self.appID)'>}"])
        XCTAssertEqual(saved.status, 0, saved.output)

        let calls: [(String, [String])] = [
            ("AuthorizeRight", ["sleepy", "Open", "{'app-id': <'\(Self.appID)'>}"]),
            ("VerifyUser", ["root", "{}"]),
        ]
        for (member, arguments) in calls {
            try waitUntilTheReaderIsClosed()
            let opens = service.log.components(separatedBy: "reader virtual_device/0 open").count
            let started = Date()
            let pending = Task.detached { [self] in try gdbus(member, arguments) }
            try waitUntil("\(member) holds the reader") {
                self.service.log.components(separatedBy: "reader virtual_device/0 open").count > opens
            }
            try world(["sleep", "true"])
            let outcome = try await pending.value
            XCTAssertEqual(errorName(outcome), "org.example.LocalAuth.Error.SystemCancel", "\(member): \(outcome.output)")
            XCTAssertTrue(outcome.stderr.contains("going to sleep"), "\(member): \(outcome.output)")
            XCTAssertLessThan(Date().timeIntervalSince(started), 10, member)
            try waitUntil("the inhibitor is released") { try !inhibitors().contains("localauthd") }
            try world(["sleep", "false"])
            try waitUntil("a new inhibitor is held") { try inhibitors().contains("sleep localauthd delay") }
        }
        XCTAssertFalse(service.log.contains("already been opened"), service.log)
        present("owner")
        let verified = try gdbus("VerifyUser", ["root", "{}"])
        XCTAssertEqual(verified.status, 0, "the reader works after resume: \(verified.output)")
    }

    /// A suspend that failed at once: PrepareForSleep(false) comes while the
    /// close still runs, during a VerifyUser scan. The service keeps (or
    /// takes again) its inhibitor and serves the next call; never "no reader".
    func testAResumeThatComesDuringTheCloseLeavesTheReaderAndTheInhibitor() async throws {
        try waitUntil("the service holds a delay inhibitor") { try inhibitors().contains("sleep localauthd delay") }
        try await enroll("right-index-finger", as: "owner")
        for round in 0..<3 {
            try waitUntilTheReaderIsClosed()
            let opens = service.log.components(separatedBy: "reader virtual_device/0 open").count
            let pending = Task.detached { [self] in try gdbus("VerifyUser", ["root", "{}"]) }
            try waitUntil("VerifyUser holds the reader") {
                self.service.log.components(separatedBy: "reader virtual_device/0 open").count > opens
            }
            try world(["sleep-flip"])
            let outcome = try await pending.value
            XCTAssertEqual(errorName(outcome), "org.example.LocalAuth.Error.SystemCancel", "round \(round): \(outcome.output)")
            try waitUntil("the inhibitor is held") { try inhibitors().contains("sleep localauthd delay") }
            present("owner")
            let again = try gdbus("VerifyUser", ["root", "{}"])
            XCTAssertEqual(again.status, 0, "round \(round): the next call is served: \(again.output)")
        }
        XCTAssertFalse(service.log.contains("already been opened"), service.log)
        XCTAssertFalse(service.log.contains("did not come back"), service.log)
    }

    /// A closing lid ends a scan on the built-in reader, as sleep does.
    func testAClosingLidEndsTheScanOnTheBuiltInReader() async throws {
        try await enroll("right-index-finger", as: "owner")
        let started = Date()
        let pending = try await startEvaluation()
        try world(["lid", "true"])
        let result = await pending.value
        XCTAssertEqual(result.code, .systemCancel, "\(result)")
        XCTAssertLessThan(Date().timeIntervalSince(started), 10)
        try world(["lid", "false"])
        try waitUntil("the service saw the lid open") { self.service.log.contains("the lid is now open") }
        present("owner")
        let again = await evaluate()
        XCTAssertTrue(again.succeeded, "\(again)")
    }

    func testAClosedLidHidesTheBuiltInReaderButNotAnExternalOne() async throws {
        try await enroll("right-index-finger", as: "owner")
        try world(["lid", "true"])
        try waitUntil("the service saw the lid close") { self.service.log.contains("the lid is now closed") }
        let started = Date()
        let preflight = try gdbus("CanEvaluatePolicy", ["1"])
        XCTAssertEqual(errorName(preflight), "org.example.LocalAuth.Error.BiometryNotAvailable", preflight.output)
        XCTAssertTrue(preflight.stderr.contains("lid is closed"), preflight.output)
        let refused = await evaluate()
        XCTAssertEqual(refused.code, .biometryNotAvailable, "\(refused)")
        XCTAssertLessThan(Date().timeIntervalSince(started), 5, "refused at once")
        let context = LAContext()
        XCTAssertFalse(context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: nil))
        XCTAssertEqual(LAEnvironment.currentUser.state.biometry?.builtInSensorInaccessible, true)

        // An external reader (here libfprint's second virtual one, said to be
        // external) keeps working under a closed lid.
        let storage = rig.directory + "/storage-\(UInt32.random(in: 0...UInt32.max)).sock"
        try restart(arguments: ["--external-reader", "virtual_device_storage"],
                    environment: ["FP_VIRTUAL_DEVICE_STORAGE": storage,
                                  "FP_DRIVERS_WHITELIST": "virtual_device:virtual_device_storage"])
        XCTAssertTrue(service.log.contains("reader virtual_device_storage/0 found, 5 enroll stages, prints on the chip, external (set on the command line)"),
                      service.log)
        XCTAssertTrue(service.log.contains("lid closed"), service.log)
        let feeder = present("outside", times: 5, sensor: storage)
        try await LAFingerprints.enroll("left-thumb")
        try await feeder.value
        let scan = present("outside", sensor: storage, insertFirst: true)
        let external = await evaluate()
        try await scan.value
        XCTAssertTrue(external.succeeded, "\(external)")

        try world(["lid", "false"])
        try waitUntil("the service saw the lid open") { self.service.log.contains("the lid is now open") }
    }

    func testARemoteSessionIsNotOfferedBiometrics() async throws {
        // nobody's session (mock-world.py) is remote and has no seat.
        let remote = try gdbus("CanEvaluatePolicy", ["1"], asNobody: true)
        XCTAssertEqual(errorName(remote), "org.example.LocalAuth.Error.NotAtTheReader", remote.output)
        try rig.polkit("org.example.LocalAuth.evaluate", "yes")
        let evaluation = try gdbus("EvaluatePolicy", ["1", "Unlock", "{}"], asNobody: true)
        XCTAssertEqual(errorName(evaluation), "org.example.LocalAuth.Error.NotAtTheReader", evaluation.output)
        XCTAssertTrue(service.log.contains("is not at the reader: remote"), service.log)
        // root's session is local: the usual answer.
        let local = try gdbus("CanEvaluatePolicy", ["1"])
        XCTAssertEqual(errorName(local), "org.example.LocalAuth.Error.BiometryNotEnrolled", local.output)
    }

    /// `--fprintd`: fprintd's VerifyStart judges presence with the same
    /// function as an evaluation (Callers/Presence.swift): nobody's session
    /// is remote, so even with polkit saying yes, no scan is taken.
    func testAnFprintdVerifyFromARemoteSessionIsNotAtTheReader() async throws {
        try restart(arguments: ["--fprintd"])
        let actions = ["org.example.LocalAuth.manage", "net.reactivated.fprint.device.verify"]
        for action in actions { try rig.polkit(action, "yes") }
        addTeardownBlock { [rig] in for action in actions { try? rig.polkit(action, nil) } }
        try await enroll("right-index-finger", as: "nobodys-finger", user: "nobody")
        let output = rig.directory + "/fprintd-remote-\(UInt32.random(in: 0...UInt32.max)).out"
        let verifier = try startAs(Self.nobody, "/usr/bin/python3", [try testScript("fprintd-client.py"), "verify", "any"],
                                   output: output)
        XCTAssertEqual(verifier.wait(timeout: 20), 0, readText(output))
        XCTAssertTrue(readText(output).contains("verify-start net.reactivated.Fprint.Error.PermissionDenied Not at the reader:"),
                      readText(output))
        XCTAssertTrue(service.log.contains("is not at the reader: remote"), service.log)
    }

    func testEnvironmentObserversSeeEachChangeOnceAndNobodyElsesChanges() async throws {
        let othersLog = rig.directory + "/others-\(UInt32.random(in: 0...UInt32.max)).log"
        _ = FileManager.default.createFile(atPath: othersLog, contents: nil)
        chmod(othersLog, 0o666)
        let other = try startAs(Self.nobody, "/usr/bin/python3", [try testScript("mock-world.py"), rig.address, "listen", othersLog],
                                output: othersLog + ".out")
        defer {
            other.signal(SIGTERM)
            other.wait(timeout: 5)
        }
        try waitForText("subscribed", in: othersLog)

        let observer = Observer()
        let environment = LAEnvironment.currentUser
        XCTAssertEqual(environment.state.biometry?.isEnrolled, false)
        environment.addObserver(observer)
        defer { environment.removeObserver(observer) }

        try await enroll("right-index-finger", as: "owner")
        try await observer.changes.wait(count: 1)
        XCTAssertEqual(observer.changes.values.first?.biometry?.isEnrolled, false, "the old state")
        XCTAssertEqual(environment.state.biometry?.isEnrolled, true)

        try await LAFingerprints.delete("right-index-finger")
        try await observer.changes.wait(count: 2)
        XCTAssertEqual(observer.changes.values.last?.biometry?.isEnrolled, true)

        // A preflight changes nothing: no third notice. The lid's notice,
        // which comes after any the preflight could have caused, is the third.
        _ = LAContext().canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: nil)
        XCTAssertFalse(readText(othersLog).contains("changed"), "another user hears none of root's changes: \(readText(othersLog))")

        // The lid concerns everyone: both hear it.
        try world(["lid", "true"])
        try await observer.changes.wait(count: 3)
        try waitForText("changed", in: othersLog)
        XCTAssertEqual(observer.changes.values.count, 3, "each change once, none for the preflight")
        XCTAssertEqual(readText(othersLog).components(separatedBy: "changed").count - 1, 1,
                       "another user hears the lid only, none of root's changes: \(readText(othersLog))")
        try world(["lid", "false"])
        try await observer.changes.wait(count: 4)
    }

    func testThePasswordAfterBootRuleHoldsAcrossARestart() async throws {
        try await enroll("right-index-finger", as: "owner")
        try restart(arguments: ["--require-password-after", "boot"])
        let before = try gdbus("CanEvaluatePolicy", ["1"])
        XCTAssertEqual(errorName(before), "org.example.LocalAuth.Error.BiometryLockout", before.output)
        XCTAssertTrue(before.stderr.contains("password is required"), before.output)
        XCTAssertEqual(LAEnvironment.currentUser.state.biometry?.isLockedOut, true)

        // What policy 2's password writes: this boot, now. It holds across a restart.
        let directory = service.stateDirectory + "/password-given"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let boot = try String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        try "\(boot) \(Int(Date().timeIntervalSince1970))\n".write(toFile: directory + "/0", atomically: true, encoding: .utf8)
        try restart(arguments: ["--require-password-after", "boot"])
        let after = try gdbus("CanEvaluatePolicy", ["1"])
        XCTAssertEqual(after.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "(true,)", after.output)

        // Within a period: a record older than the period does not count.
        try "\(boot) \(Int(Date().timeIntervalSince1970) - 7200)\n".write(toFile: directory + "/0", atomically: true, encoding: .utf8)
        try restart(arguments: ["--require-password-after", "boot", "--require-password-after", "1h"])
        let stale = try gdbus("CanEvaluatePolicy", ["1"])
        XCTAssertEqual(errorName(stale), "org.example.LocalAuth.Error.BiometryLockout", stale.output)

        // Another boot's record, or a damaged file: closed.
        try "another-boot \(Int(Date().timeIntervalSince1970))\n".write(toFile: directory + "/0", atomically: true, encoding: .utf8)
        try restart(arguments: ["--require-password-after", "boot"])
        XCTAssertEqual(errorName(try gdbus("CanEvaluatePolicy", ["1"])), "org.example.LocalAuth.Error.BiometryLockout")
        try "garbage".write(toFile: directory + "/0", atomically: true, encoding: .utf8)
        try restart(arguments: ["--require-password-after", "boot"])
        XCTAssertEqual(errorName(try gdbus("CanEvaluatePolicy", ["1"])), "org.example.LocalAuth.Error.BiometryLockout")
        XCTAssertTrue(service.log.contains("is damaged"), service.log)

        // Off by default.
        try restart()
        let off = try gdbus("CanEvaluatePolicy", ["1"])
        XCTAssertEqual(off.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "(true,)", off.output)
        XCTAssertEqual(try runProgram(Paths.localauthd, ["--require-password-after", "soon"]).status, 2)
    }
}

extension EnvironmentTests {
    /// The shipped unit has `ProcSubset=pid`: /proc/sys (and the kernel's
    /// boot id) is hidden from the service. The password given this boot must
    /// still count: the unit passes the boot id (`Environment=` with `%b`).
    /// The service runs in a mount namespace whose /proc is mounted as the
    /// unit mounts it, with the environment the unit file gives (`%b` filled in
    /// as systemd fills it: 32 hex digits).
    func testThePasswordGivenThisBootCountsWithTheUnitsProcView() async throws {
        try await enroll("right-index-finger", as: "owner")
        let unit = try String(contentsOfFile: Paths.root + "/systemd/localauthd.service.in", encoding: .utf8)
        XCTAssertTrue(unit.contains("\nProcSubset=pid"), "the test models the unit's /proc")
        let boot = try String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        var environment: [String: String] = [:]
        for line in unit.split(separator: "\n") where line.hasPrefix("Environment=") {
            let assignment = line.dropFirst("Environment=".count).replacingOccurrences(
                of: "%b", with: boot.replacingOccurrences(of: "-", with: ""))
            let parts = assignment.split(separator: "=", maxSplits: 1).map(String.init)
            if parts.count == 2 { environment[parts[0]] = parts[1] }
        }
        let procAsTheUnitMountsIt = ["/usr/bin/unshare", "--mount", "--propagation", "private", "--",
                                     "/bin/sh", "-c", "mount -t proc -o subset=pid proc /proc && exec \"$@\"", "sh"]
        let directory = service.stateDirectory + "/password-given"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try "\(boot) \(Int(Date().timeIntervalSince1970))\n".write(toFile: directory + "/0", atomically: true, encoding: .utf8)
        let state = service.stateDirectory
        service.stop()
        service = try ServiceProcess(bus: rig, stateDirectory: state, environment: environment,
                                     arguments: ["--require-password-after", "boot"], launcher: procAsTheUnitMountsIt)
        let hidden = try runProgram("/usr/bin/nsenter", ["--target", "\(service.child.pid)", "--mount", "--",
                                                         "/bin/cat", "/proc/sys/kernel/random/boot_id"])
        XCTAssertNotEqual(hidden.status, 0, "the service's /proc should hide /proc/sys: \(hidden.output)")
        let after = try gdbus("CanEvaluatePolicy", ["1"])
        XCTAssertEqual(after.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "(true,)", after.output)
    }
}

/// An LAEnvironment observer recording the old state of each change.
private final class Observer: LAEnvironmentObserver, @unchecked Sendable {
    let changes = Collected<LAEnvironmentState>()
    func environment(_ environment: LAEnvironment, stateDidChangeFromOldState oldState: LAEnvironmentState) {
        changes.append(oldState)
    }
}
