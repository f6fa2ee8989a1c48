import Foundation
import Glibc
import LocalAuthentication
import RigSupport
import XCTest

/// The attacks of docs/SECURITY.md, each mounted for real on the rig: the real
/// dbus-daemon and polkitd, localauthd on the virtual reader, and the attacker
/// an unprivileged uid (65534, or the test account) running its own programs
/// (Tests/Helpers: a polkit agent that cancels, forged signals, a flood).
/// Each test failed on the main branch before the fix it guards.
final class SecurityTests: RigTestCase, @unchecked Sendable {
    static let nobodyUID: UInt32 = 65534

    override func setUpWithError() throws {
        try super.setUpWithError()
        for action in ["org.example.LocalAuth.manage", "org.example.LocalAuth.authenticate-owner"] {
            try rig.polkit(action, nil)
            try rig.polkit(action, "release")
        }
        try rig.polkit("org.example.LocalAuth.evaluate", "release")
        try rig.polkit("org.example.LocalAuth.enroll", "release")
        // A short wait for a finger: an attack that gets past a check shows
        // up as a wait, and the test must not sit through 30 s of it.
        restartService(arguments: ["--scan-timeout", "8"])
    }

    // MARK: 1. Only polkit's explicit "authorized" is yes

    /// An unprivileged program registers a polkit agent for itself that
    /// answers Cancelled: polkit says "not authorized, dismissed". That must
    /// never pass for authorized, for any method behind an interactive action.
    func testAnAgentThatCancelsGetsNothing() async throws {
        try await enroll(as: "owner-finger")
        try rig.polkit("org.example.LocalAuth.manage", "auth_admin")
        try rig.polkit("org.example.LocalAuth.enroll", "auth_self")
        let before = snapshot(service.stateDirectory)
        let attempts: [(String, String, String)] = [
            ("ResetLockout", "s", #"["root"]"#),
            ("ListEnrolledPrints", "a{sv}", #"[{"user": "root"}]"#),
            ("EnrollWithOptions", "sa{sv}", #"["right-thumb", {"user": "root"}]"#),
            ("Enroll", "s", #"["left-thumb"]"#),
            ("DeleteEnrolledFingers", "", "[]"),
            ("DeleteEnrolledFingersWithOptions", "a{sv}", #"[{"user": "root"}]"#),
        ]
        for (method, signature, arguments) in attempts {
            let outcome = try asNobody(python: "cancel-agent.py", [method, signature, arguments])
            XCTAssertTrue(outcome.stdout.contains("asked=1"), "\(method): polkit asked the agent: \(outcome.output)")
            XCTAssertTrue(outcome.stdout.contains("error=org.example.LocalAuth.Error.PermissionDenied"),
                          "\(method): \(outcome.output)")
        }
        XCTAssertEqual(snapshot(service.stateDirectory), before, "nothing on disk changed")
    }

    // MARK: 2. Only the bus speaks for the bus; only the service for the service

    /// A forged NameOwnerChanged ("your caller left") sent straight to the
    /// service by uid 65534 for every connection on the bus cancels nothing.
    func testForgedNameOwnerChangedCancelsNoEvaluation() async throws {
        try await enroll(as: "owner-finger")
        let pending = try await startEvaluation()
        let forged = try asNobody(python: "forge.py", ["name-owner-changed"])
        XCTAssertTrue(forged.stdout.contains("sent="), forged.output)
        XCTAssertFalse(forged.stdout.contains("sent=0"), forged.output)
        try service.sensor("SCAN owner-finger")
        let result = await pending.value
        XCTAssertTrue(result.succeeded, "the victim's evaluation went on: \(result)")
    }

    /// Forged EnrollStatus signals from uid 65534 never reach the client
    /// library's progress handler: it believes only the service's owner.
    func testForgedEnrollStatusNeverReachesTheClient() async throws {
        let seen = Collected<LAFingerprints.EnrollProgress>()
        // The service's own asks for the next scan, as the library delivers
        // them (the forged ones never arrive, which is what this test checks).
        let asked = Collected<Bool>()
        let enrolling = Task {
            try await LAFingerprints.enroll("right-index-finger") { progress in
                seen.append(progress)
                if progress.status == "enroll-place-finger" || progress.status == "enroll-stage-passed" { asked.append(true) }
            }
        }
        try await asked.wait(count: 1)
        let forged = try asNobody(python: "forge.py", ["enroll-status"])
        XCTAssertFalse(forged.stdout.contains("sent=0"), forged.output)
        for scan in 0..<5 {
            try await asked.wait(count: scan + 1)
            try service.sensor("SCAN owner-finger")
        }
        try await enrolling.value
        XCTAssertFalse(seen.values.contains { $0.stages == 99 }, "a forged status got through: \(seen.values)")
        XCTAssertTrue(seen.values.contains { $0.status == "enroll-completed" }, "\(seen.values)")
    }

    // MARK: 3. Reuse: only a fingerprint match, of the current set

    /// A password success (policy 2) of the test account must not let a
    /// biometrics-only request of that account through without a finger.
    func testAPasswordIsNeverReusedAsAFingerprint() throws {
        try enrollOwner(as: "owner-finger")
        try rig.polkit("org.example.LocalAuth.evaluate", "yes")
        let password = try localauthctlAsOwner(["evaluate", "--policy", "owner"], password: TestAccount.password)
        XCTAssertEqual(password.status, 0, password.output)
        // Policy 1 with reuse, no interaction possible: only a reuse could say yes.
        let reused = try runAs(try TestAccount.ensure(), "/usr/bin/gdbus", gdbusArguments(
            "EvaluatePolicy", ["1", "Unlock", "{'reuse-duration': <60.0>, 'interaction-not-allowed': <true>}"]))
        XCTAssertTrue(reused.output.contains("NotInteractive"), reused.output)
    }

    /// A fingerprint match is not reused once the enrolled set changed: not
    /// after every print was deleted, not after a finger was added.
    func testAMatchIsNotReusedAfterTheEnrolledSetChanged() async throws {
        try await enroll("right-index-finger", as: "owner-finger")
        present("owner-finger")
        let first = await evaluate()
        XCTAssertTrue(first.succeeded, "\(first)")

        try await enroll("left-index-finger", as: "second-finger")
        let afterAdding = await evaluate(context: reusingContext())
        XCTAssertEqual(afterAdding.code, .notInteractive, "a finger was added: no reuse")

        // A verify-only reader tries one print per scan: two scans cover both.
        present("owner-finger", times: 2)
        let second = await evaluate()
        XCTAssertTrue(second.succeeded, "\(second)")
        try await LAFingerprints.deleteAll()
        let afterDeleting = await evaluate(context: reusingContext())
        XCTAssertEqual(afterDeleting.code, .biometryNotEnrolled, "every print was deleted: no reuse")
    }

    // MARK: 4. Limits

    /// One user's flood of pending calls: past 8 per connection and 16 per
    /// uid the calls are refused at once with LimitExceeded, and another
    /// user is served at the next turn of the reader, not behind the flood.
    func testAFloodOfCallsIsRefusedAndOthersStillGetTheirTurn() async throws {
        try enrollFor(user: "nobody", finger: "right-index-finger", as: "nobody-finger")
        try await enroll(as: "owner-finger")
        try rig.polkit("org.example.LocalAuth.evaluate", "yes")
        let outputPath = rig.directory + "/flood-\(UInt32.random(in: 0...UInt32.max)).out"
        let watch = try BusWatch(rig: rig, rules: FingerRequests.rules + ["type='error'"])
        defer { watch.stop() }
        let flood = try startAs(Self.nobodyUID, "/usr/bin/python3", [try testScript("flood.py"), "3", "10", "20"],
                                output: outputPath)
        defer { flood.signal(SIGKILL); _ = flood.wait(timeout: 5) }
        // The flood is in: its 14 calls past the limits are refused, and one
        // of the others holds the reader (its place-finger); the rest wait.
        try watch.waitForMore(than: 13, timeout: 20, "14 LimitExceeded") { $0.hasPrefix("error ") && $0.contains("Error.LimitExceeded") }
        try watch.waitForMore(than: 0, timeout: 20, "the flood's scan", FingerRequests.isAsk)

        // Root evaluates meanwhile: it is next once the scan that holds the
        // reader times out (8 s), not after all of the flood's turns.
        let context = LAContext()
        let updates = Collected<LAEvaluationStatus>()
        context.evaluationStatusHandler = { updates.append($0) }
        let pending = Task { await self.evaluate(context: context) }
        try await updates.wait(count: 1, timeout: 20)
        try service.sensor("SCAN owner-finger")
        let result = await pending.value
        XCTAssertTrue(result.succeeded, "\(result)")

        _ = flood.wait(timeout: 30)
        let counts = readText(outputPath)
        XCTAssertTrue(counts.contains("error org.example.LocalAuth.Error.LimitExceeded=14"), counts)
    }

    /// A call larger than the limit is refused before it is decoded, and an
    /// argument repeated in an error is cut short.
    func testHugeArgumentsAreRefusedAndNeverEchoedInFull() throws {
        try rig.polkit("org.example.LocalAuth.evaluate", "yes")   // the size is checked before anything else
        let huge = String(repeating: "x", count: 100_000)
        let refused = try gdbus("EvaluatePolicy", ["1", huge, "{}"], asNobody: true)
        XCTAssertTrue(refused.output.contains("LimitExceeded"), String(refused.output.prefix(300)))
        XCTAssertLessThan(refused.output.utf8.count, 1_000)

        let longFinger = String(repeating: "f", count: 10_000)
        let echoed = try gdbus("Enroll", [longFinger])
        XCTAssertTrue(echoed.output.contains("InvalidArgs"), String(echoed.output.prefix(300)))
        XCTAssertLessThan(echoed.output.utf8.count, 1_000, "the 10 kB name is not repeated in full")
        XCTAssertTrue(service.isRunning)
    }

    /// A typed option inside a second variant is the wrong type.
    func testNestedVariantsAreTheWrongType() throws {
        try rig.polkit("org.example.LocalAuth.evaluate", "yes")
        let outcome = try callService("EvaluatePolicy", "usa{sv}", ["1", "Unlock", "1", "request-id", "v", "v", "s", "nested"],
                                      asNobody: true)
        XCTAssertTrue(outcome.output.contains("request-id must be a string"), outcome.output)
    }

    /// Each call is decoded and validated in full at arrival, before polkit
    /// is asked: a malformed call is InvalidArgs even for a caller polkit
    /// refuses, and polkit is never bothered with it.
    func testAMalformedCallIsRefusedBeforePolkitIsAsked() throws {
        try rig.polkit("org.example.LocalAuth.evaluate", "no")
        let outcome = try gdbus("EvaluatePolicy", ["1", "Unlock", "{'reuse-duration': <'soon'>}"], asNobody: true)
        XCTAssertTrue(outcome.output.contains("InvalidArgs"), outcome.output)
        XCTAssertTrue(outcome.output.contains("reuse-duration"), outcome.output)
        XCTAssertFalse(outcome.output.contains("PermissionDenied"), outcome.output)
        // A well-formed call from the same caller is polkit's to refuse.
        let refused = try gdbus("EvaluatePolicy", ["1", "Unlock", "{}"], asNobody: true)
        XCTAssertTrue(refused.output.contains("PermissionDenied"), refused.output)
    }

    /// Names of accounts are looked up only after polkit said yes: a refused
    /// caller cannot tell an existing account from a missing one.
    func testARefusedCallerCannotProbeWhichAccountsExist() throws {
        try rig.polkit("org.example.LocalAuth.manage", "no")
        for name in ["root", "no-such-account-\(getpid())"] {
            let outcome = try gdbus("ResetLockout", [name], asNobody: true)
            XCTAssertTrue(outcome.output.contains("PermissionDenied"), "\(name): \(outcome.output)")
            XCTAssertFalse(outcome.output.contains("no user named"), outcome.output)
        }
    }

    // MARK: 5. A lockout never fails open

    /// A lockout counter that cannot be read (here: a directory) means locked out.
    func testAnUnreadableLockoutCounterMeansLockedOut() async throws {
        try await enroll(as: "owner-finger")
        let state = service.stateDirectory
        service.stop()
        try FileManager.default.createDirectory(atPath: state + "/lockout/0", withIntermediateDirectories: true)
        restartService(stateDirectory: state, arguments: ["--scan-timeout", "8"])
        var error: NSError?
        XCTAssertFalse(LAContext().canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error))
        XCTAssertEqual(error?.code, LAError.Code.biometryLockout.rawValue, "\(String(describing: error))")
        XCTAssertTrue(service.log.contains("cannot be read"), service.log)
    }

    /// A failed match that cannot be written ends the evaluation with an error
    /// instead of letting the person try on with a count kept only in memory.
    func testAFailedMatchThatCannotBeRecordedEndsTheEvaluation() async throws {
        try await enroll(as: "owner-finger")
        let lockout = service.stateDirectory + "/lockout"
        try FileManager.default.createDirectory(atPath: "\(lockout)/0.tmp-\(service.child.pid)",
                                                withIntermediateDirectories: true)
        let pending = try await startEvaluation()
        try service.sensor("SCAN someone-else")
        let result = await pending.value
        if case .failure(let error) = result {
            XCTAssertEqual(error.dbusErrorName, "org.example.LocalAuth.Error.StorageFailed", "\(error)")
        } else {
            XCTFail("the evaluation went on: \(result)")
        }
    }

    // MARK: 6. Callers who leave, and SIGTERM, while polkit deliberates

    /// A caller killed while polkit decides leaves nothing behind: the reader
    /// serves the next caller's first scan, and the departed caller's
    /// would-be evaluation never consumes a scan or counts a failure.
    func testACallerKilledDuringThePolkitCheckLeavesNoGhostEvaluation() async throws {
        try enrollFor(user: "nobody", finger: "right-index-finger", as: "nobody-finger")
        try await enroll(as: "owner-finger")
        try rig.polkit("org.example.LocalAuth.evaluate", "yes")
        try rig.polkit("org.example.LocalAuth.evaluate", "hold")
        let caller = try nobodyInBackground("/usr/bin/gdbus", gdbusArguments("EvaluatePolicy", ["1", "Unlock", "{}"]))
        try waitForHeldCheck("org.example.LocalAuth.evaluate")
        caller.signal(SIGKILL)
        _ = caller.wait(timeout: 5)
        try rig.polkit("org.example.LocalAuth.evaluate", "release")
        try waitForHeldCheckToEnd("org.example.LocalAuth.evaluate")   // polkit answered the departed caller's check

        // Root evaluates at once; the scan comes half a second later. A ghost
        // evaluation of the departed caller would hold the reader and take it.
        present("owner-finger")
        let result = await evaluate()
        XCTAssertTrue(result.succeeded, "the first scan was root's: \(result)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: service.stateDirectory + "/lockout/\(Self.nobodyUID)"),
                       "no failed match was counted for the departed caller")
    }

    /// An enrollment whose caller was killed while polkit decided never
    /// starts: the next person's scans are not stored in the departed
    /// caller's account.
    func testACallerKilledDuringThePolkitCheckLeavesNoGhostEnrollment() async throws {
        try rig.polkit("org.example.LocalAuth.enroll", "yes")
        try rig.polkit("org.example.LocalAuth.enroll", "hold")
        let caller = try nobodyInBackground("/usr/bin/gdbus", gdbusArguments("Enroll", ["right-index-finger"]))
        try waitForHeldCheck("org.example.LocalAuth.enroll")
        caller.signal(SIGKILL)
        _ = caller.wait(timeout: 5)
        try rig.polkit("org.example.LocalAuth.enroll", "release")
        try waitForHeldCheckToEnd("org.example.LocalAuth.enroll")

        try await enroll(as: "owner-finger")
        XCTAssertFalse(FileManager.default.fileExists(atPath: service.stateDirectory + "/prints/\(Self.nobodyUID)"),
                       "nothing was stored for the departed caller")
    }

    /// SIGTERM while a caller waits for polkit: the service answers that
    /// caller SystemCancel and exits at once, without waiting for polkit.
    func testSigtermDuringThePolkitCheckAnswersAndExitsPromptly() throws {
        try rig.polkit("org.example.LocalAuth.evaluate", "yes")
        try rig.polkit("org.example.LocalAuth.evaluate", "hold")
        defer { try? rig.polkit("org.example.LocalAuth.evaluate", "release") }
        let outputPath = rig.directory + "/sigterm-\(UInt32.random(in: 0...UInt32.max)).out"
        let caller = try startAs(Self.nobodyUID, "/usr/bin/gdbus", gdbusArguments("EvaluatePolicy", ["1", "Unlock", "{}"]),
                                 output: outputPath)
        try waitForHeldCheck("org.example.LocalAuth.evaluate")
        let stopping = Date()
        XCTAssertEqual(service.stop(), 0)
        // The rule holds polkit for up to 8 s; the service must not wait for it.
        XCTAssertLessThan(Date().timeIntervalSince(stopping), 4, "exited without waiting for polkit")
        _ = caller.wait(timeout: 10)
        XCTAssertTrue(readText(outputPath).contains("SystemCancel"), readText(outputPath))
        service = nil
    }

    /// SIGTERM while the reader ignores cancellation (the virtual reader is
    /// told to): the service still answers its caller SystemCancel and exits
    /// 0 after its shutdown grace, instead of waiting for ever.
    func testSigtermExitsEvenWhenTheReaderIgnoresCancellation() async throws {
        try await enroll(as: "owner-finger")
        try service.sensor("SET_CANCELLATION_ENABLED 0")
        let pending = try await startEvaluation()
        let status = service.stop()
        if service.isRunning { service.kill9() }
        XCTAssertEqual(status, 0, "exited by itself: \(service.log)")
        let result = await pending.value
        XCTAssertEqual(result.code, .systemCancel, "\(result)")
        XCTAssertTrue(service.log.contains("a reader ignored its cancellation"), service.log)
        service = nil
    }

    // MARK: 7. A cancel does not hide a failed match

    /// A wrong finger judged by the reader while a Cancel is on its way
    /// still counts toward the lockout. The virtual reader is told to judge a
    /// wrong finger and then sleep 2 s before it completes the scan; the
    /// Cancel lands in that gap, so the completion says only "cancelled".
    func testACancelledEvaluationStillCountsItsFailedMatch() async throws {
        try await enroll(as: "owner-finger")
        try service.sensor("SCAN someone-else")
        try service.sensor("SLEEP 2000")
        let context = LAContext()
        let pending = try await startEvaluation(context)
        context.invalidate()
        let result = await pending.value
        XCTAssertFalse(result.succeeded)
        // The scan is judged after the cancellation was answered: wait for its count.
        let lockoutFile = service.stateDirectory + "/lockout/0"
        try? waitUntil("the no-match is counted") { !readText(lockoutFile).isEmpty }
        let count = readText(lockoutFile).trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertEqual(count, "1", "the judged no-match was counted")
        XCTAssertTrue(service.log.contains("failed fingerprint match for uid 0"), service.log)
    }

    // MARK: 8. One user cannot keep the reader too hot for everyone

    /// A caller that loops evaluations nobody answers is made to let the
    /// warm reader cool: after two timed-out waits in a row it is refused at
    /// once with ReaderCoolingDown, and another user still gets the reader.
    func testALoopingCallerIsMadeToLetTheReaderCool() async throws {
        restartService(arguments: ["--scan-timeout", "2"])
        try enrollFor(user: "nobody", finger: "right-index-finger", as: "nobody-finger")
        try await enroll(as: "owner-finger")
        try rig.polkit("org.example.LocalAuth.evaluate", "yes")
        var outcomes: [String] = []
        for _ in 0..<4 {
            let outcome = try runAs(Self.nobodyUID, "/usr/bin/gdbus", gdbusArguments("EvaluatePolicy", ["1", "Loop", "{}"]))
            outcomes.append(outcome.output)
            if outcome.output.contains("ReaderCoolingDown") { break }
        }
        XCTAssertTrue(outcomes.prefix(2).allSatisfy { $0.contains("SystemCancel") }, "\(outcomes)")
        XCTAssertTrue(outcomes.last?.contains("ReaderCoolingDown") == true, "\(outcomes)")
        XCTAssertTrue(outcomes.last?.contains("cooling down; try again in about") == true, "\(outcomes)")
        present("owner-finger")
        let root = await evaluate()
        XCTAssertTrue(root.succeeded, "another user is not held back: \(root)")
    }

    // MARK: 10. Logs, enrolment prompts, reused uids

    /// Failed matches and reaching the lockout are logged (uid, reader, count).
    func testFailedMatchesAndTheLockoutAreLogged() async throws {
        try await enroll(as: "owner-finger")
        for _ in 0..<2 {
            present("someone-else", times: 3)
            _ = await evaluate()
        }
        let log = service.log
        XCTAssertTrue(log.contains("failed fingerprint match for uid 0 on virtual_device"), log)
        XCTAssertTrue(log.contains("biometry locked out for uid 0"), log)
    }

    /// A uid reused for a new account does not inherit the old account's prints.
    func testAReusedUidDoesNotInheritTheOldAccountsPrints() async throws {
        let uid: UInt32 = 61_234
        try recreateAccount("laold", uid: uid)
        try enrollFor(user: "laold", finger: "right-index-finger", as: "old-finger")
        try recreateAccount("lanew", uid: uid)
        defer { _ = try? runProgram("/usr/sbin/userdel", ["lanew"]) }
        let status = try runAs(uid, "/usr/bin/gdbus", gdbusArguments("CanEvaluatePolicy", ["1"]))
        XCTAssertTrue(status.output.contains("BiometryNotEnrolled"), status.output)
        XCTAssertTrue(service.log.contains("was enrolled for the account laold"), service.log)
    }

    // MARK: Tools

    private func restartService(stateDirectory: String? = nil, arguments: [String]) {
        if let service, service.isRunning { service.stop() }
        do {
            service = try ServiceProcess(bus: rig, stateDirectory: stateDirectory ?? service?.stateDirectory,
                                         arguments: arguments)
        } catch {
            XCTFail("cannot start localauthd: \(error)")
        }
    }

    private func asNobody(python script: String, _ arguments: [String], timeout: Double = 60) throws -> Outcome {
        try runAs(Self.nobodyUID, "/usr/bin/python3", [try testScript(script)] + arguments, timeout: timeout)
    }

    private func nobodyInBackground(_ program: String, _ arguments: [String]) throws -> Child {
        try startAs(Self.nobodyUID, program, arguments, output: rig.directory + "/nobody-\(UInt32.random(in: 0...UInt32.max)).out")
    }

    private func gdbusArguments(_ member: String, _ values: [String]) -> [String] {
        ["call", "--system", "--dest", "org.example.LocalAuth", "--object-path", "/org/example/LocalAuth",
         "--timeout", "60", "--method", "org.example.LocalAuth.\(member)"] + values
    }

    /// Waits until polkit no longer holds a check of `action`.
    private func waitForHeldCheckToEnd(_ action: String) throws {
        let marker = rig.polkitAnswers + "/waiting/" + action
        let deadline = Date().addingTimeInterval(10)
        while FileManager.default.fileExists(atPath: marker) {
            guard Date() < deadline else { throw RigError("polkit still deliberates on \(action)") }
            usleep(20_000)
        }
    }

    /// Waits until polkit holds a check of `action` (scripts/polkit-test.rules).
    private func waitForHeldCheck(_ action: String) throws {
        let marker = rig.polkitAnswers + "/waiting/" + action
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: marker) {
            guard Date() < deadline else { throw RigError("polkit never deliberated on \(action)") }
            usleep(20_000)
        }
    }

    private func reusingContext() -> LAContext {
        let context = LAContext()
        context.interactionNotAllowed = true
        context.touchIDAuthenticationAllowableReuseDuration = 60
        return context
    }

    /// Enrolls a finger for another user as root (EnrollWithOptions, `user`).
    private func enrollFor(user: String, finger: String, as id: String) throws {
        let outcome = try feedingEnrollScans(of: id) {
            try callService("EnrollWithOptions", "sa{sv}", [finger, "1", "user", "s", user])
        }
        XCTAssertEqual(outcome.status, 0, outcome.output)
    }

    /// Makes `name` the account of `uid`, deleting only the test's own accounts.
    private func recreateAccount(_ name: String, uid: UInt32) throws {
        if let existing = getpwuid(uid) {
            let owner = String(cString: existing.pointee.pw_name)
            guard ["laold", "lanew"].contains(owner) else {
                throw XCTSkip("uid \(uid) belongs to \(owner) on this machine; not touching it")
            }
            _ = try runProgram("/usr/sbin/userdel", [owner])
        }
        if getpwnam(name) != nil { _ = try runProgram("/usr/sbin/userdel", [name]) }
        let created = try runProgram("/usr/sbin/useradd", ["--uid", String(uid), "--no-create-home", name])
        guard created.status == 0 else { throw RigError("useradd: \(created.output)") }
    }

    /// Every file under `directory` with its contents.
    private func snapshot(_ directory: String) -> [String: Data] {
        var files: [String: Data] = [:]
        guard let walker = FileManager.default.enumerator(atPath: directory) else { return files }
        for case let path as String in walker {
            files[path] = FileManager.default.contents(atPath: directory + "/" + path) ?? Data()
        }
        return files
    }
}

