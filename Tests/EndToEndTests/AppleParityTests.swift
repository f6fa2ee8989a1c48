import Foundation
import LocalAuthentication
import RigSupport
import XCTest

/// One test per row of Apple's documented behaviour (shared/DESIGN.md and the
/// Apple-parity issue), against the real service, polkitd and virtual sensor.
final class AppleParityTests: RigTestCase, @unchecked Sendable {

    func testBiometryTypeIsKnownOnlyAfterPreflight() throws {
        let context = LAContext()
        XCTAssertEqual(context.biometryType, LABiometryType.none, "unknown before canEvaluatePolicy")
        _ = context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: nil)
        XCTAssertEqual(context.biometryType, .touchID)
    }

    /// An app's whole preflight (`canEvaluatePolicy`, then `biometryType`) is
    /// one call to the service: BiometryType is kept by the library (updated by
    /// PropertiesChanged), the domain state read only when the app asks.
    /// On d7b8519 each preflight also sent Get and GetDomainState.
    func testPreflightIsOneRoundTrip() async throws {
        try await enroll(as: "owner-finger")
        let warm = LAContext()
        XCTAssertTrue(warm.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: nil))
        XCTAssertEqual(warm.biometryType, .touchID)
        let calls = rig.directory + "/calls-\(UInt32.random(in: 0...UInt32.max)).out"
        let monitor = try Child("/usr/bin/dbus-monitor", ["--address", rig.address,
                                                          "type='method_call',destination='org.example.LocalAuth'"],
                                stdoutPath: calls, stderrPath: calls)
        defer { monitor.signal(SIGTERM); monitor.wait(timeout: 5) }
        try waitForText("NameAcquired", in: calls)
        var last = LAContext()
        for _ in 0..<3 {
            last = LAContext()
            XCTAssertTrue(last.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: nil))
            XCTAssertEqual(last.biometryType, .touchID)
        }
        // Read only now, and then once: the last call the monitor sees.
        let state = try XCTUnwrap(last.evaluatedPolicyDomainState)
        XCTAssertEqual(last.evaluatedPolicyDomainState, state)
        XCTAssertEqual(warm.evaluatedPolicyDomainState, state)
        try waitUntil("the monitor saw both GetDomainState") {
            readText(calls).components(separatedBy: "member=GetDomainState").count >= 3
        }
        let members = readText(calls).split(separator: "\n").compactMap { line in
            line.hasPrefix("method call") ? line.components(separatedBy: "member=").last : nil
        }
        XCTAssertEqual(members, ["CanEvaluatePolicy", "CanEvaluatePolicy", "CanEvaluatePolicy", "GetDomainState", "GetDomainState"],
                       readText(calls))
    }

    func testWatchPoliciesFailWithWatchNotAvailable() throws {
        let context = LAContext()
        var error: NSError?
        XCTAssertFalse(context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometricsOrWatch, error: &error))
        XCTAssertEqual(error?.code, LAError.Code.watchNotAvailable.rawValue)
    }

    func testEmptyReasonIsRefused() async throws {
        try await enroll(as: "owner-finger")
        let result = await evaluate(reason: "")
        XCTAssertEqual(result.code, .invalidContext, "\(result)")
        if case .failure(let error) = result {
            XCTAssertEqual(error.dbusErrorName, "org.freedesktop.DBus.Error.InvalidArgs")
        }
    }

    func testFiveFailedMatchesLockBiometricsAcrossRestarts() async throws {
        try await enroll(as: "owner-finger")
        present("someone-else", times: 3)
        let awaited1 = await evaluate()
        XCTAssertEqual(awaited1.code, .authenticationFailed)
        present("someone-else", times: 2)
        let awaited2 = await evaluate()
        XCTAssertEqual(awaited2.code, .biometryLockout, "the fifth failure in a row locks")

        var error: NSError?
        XCTAssertFalse(LAContext().canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error))
        XCTAssertEqual(error?.code, LAError.Code.biometryLockout.rawValue)

        // The count is on disk: a restarted service still refuses.
        let state = service.stateDirectory
        XCTAssertEqual(service.stop(), 0)
        service = try ServiceProcess(bus: rig, stateDirectory: state)
        error = nil
        XCTAssertFalse(LAContext().canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error))
        XCTAssertEqual(error?.code, LAError.Code.biometryLockout.rawValue)
        present("owner-finger")
        let awaited3 = await evaluate()
        XCTAssertEqual(awaited3.code, .biometryLockout, "even the right finger is refused while locked")
    }

    func testADamagedLockoutFileFailsClosed() async throws {
        try await enroll(as: "owner-finger")
        let state = service.stateDirectory
        service.stop()
        try FileManager.default.createDirectory(atPath: state + "/lockout", withIntermediateDirectories: true)
        try Data("garbage\u{0}\u{7}".utf8).write(to: URL(fileURLWithPath: state + "/lockout/0"))
        service = try ServiceProcess(bus: rig, stateDirectory: state)
        var error: NSError?
        XCTAssertFalse(LAContext().canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error))
        XCTAssertEqual(error?.code, LAError.Code.biometryLockout.rawValue, "a damaged count must not unlock")
        XCTAssertTrue(service.log.contains("lockout file \(state)/lockout/0 is corrupt"), service.log)
        let fingers = try await LAFingerprints.enrolledFingers()
        XCTAssertEqual(fingers, ["right-index-finger"], "the prints are untouched")
    }

    func testSuccessfulMatchResetsTheFailureCount() async throws {
        try await enroll(as: "owner-finger")
        present("someone-else", times: 3)
        let awaited4 = await evaluate()
        XCTAssertEqual(awaited4.code, .authenticationFailed)
        present("owner-finger")
        let awaited5 = await evaluate()
        XCTAssertTrue(awaited5.succeeded)
        present("someone-else", times: 3)
        let awaited6 = await evaluate()
        XCTAssertEqual(awaited6.code, .authenticationFailed, "three more failures do not lock: the count restarted")
    }

    func testInvalidateCancelsWithAppCancelThenInvalidContext() async throws {
        try await enroll(as: "owner-finger")
        let context = LAContext()
        let pending = try await startEvaluation(context)
        context.invalidate()
        let result = await pending.value
        XCTAssertEqual(result.code, .appCancel, "\(result)")
        var error: NSError?
        XCTAssertFalse(context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error))
        XCTAssertEqual(error?.code, LAError.Code.invalidContext.rawValue)
        let awaited7 = await evaluate(context: context)
        XCTAssertEqual(awaited7.code, .invalidContext)
    }

    func testPromptCancelAndFallbackEndTheEvaluation() async throws {
        try await enroll(as: "owner-finger")
        for code in [LAError.Code.userCancel, .userFallback] {
            let context = LAContext()
            let pending = try await startEvaluation(context)
            context.endEvaluation(as: code)
            let result = await pending.value
            XCTAssertEqual(result.code, code, "\(result)")
        }
    }

    func testInteractionNotAllowedGivesNotInteractive() async throws {
        try await enroll(as: "owner-finger")
        let context = LAContext()
        context.interactionNotAllowed = true
        let awaited8 = await evaluate(context: context)
        XCTAssertEqual(awaited8.code, .notInteractive)
    }

    func testReuseDurationAcceptsARecentSuccessWithoutAScan() async throws {
        try await enroll(as: "owner-finger")
        present("owner-finger")
        let awaited9 = await evaluate()
        XCTAssertTrue(awaited9.succeeded)

        // No scan is possible here (interaction not allowed), so success proves reuse.
        let reusing = LAContext()
        reusing.interactionNotAllowed = true
        reusing.touchIDAuthenticationAllowableReuseDuration = 60
        let awaited10 = await evaluate(context: reusing)
        XCTAssertTrue(awaited10.succeeded)

        let notReusing = LAContext()
        notReusing.interactionNotAllowed = true
        let awaited11 = await evaluate(context: notReusing)
        XCTAssertEqual(awaited11.code, .notInteractive)

        reusing.touchIDAuthenticationAllowableReuseDuration = 10_000
        XCTAssertEqual(reusing.touchIDAuthenticationAllowableReuseDuration, LATouchIDAuthenticationMaximumAllowableReuseDuration)
    }

    func testScanTimeoutGivesSystemCancelAndFreesTheSensor() async throws {
        try await enroll(as: "owner-finger")
        let state = service.stateDirectory
        service.stop()
        service = try ServiceProcess(bus: rig, stateDirectory: state, arguments: ["--scan-timeout", "1"])
        let started = Date()
        let awaited12 = await evaluate()
        XCTAssertEqual(awaited12.code, .systemCancel)
        XCTAssertLessThan(Date().timeIntervalSince(started), 15)
        present("owner-finger")
        let awaited13 = await evaluate()
        XCTAssertTrue(awaited13.succeeded, "the sensor serves the next evaluation")
    }

    func testReaderUnpluggedMidScanGivesSystemCancel() async throws {
        try await enroll(as: "owner-finger")
        let pending = try await startEvaluation()
        try service.sensor("UNPLUG")
        let awaited14 = await pending.value
        XCTAssertEqual(awaited14.code, .systemCancel)
    }

    // SIGTERM during an evaluation: SystemIntegrationTests (two callers, the exit status, the log).

    /// A Cancel right behind the call, on the same connection, is honoured
    /// before the reader is touched: AppCancel, and no status at all.
    func testACancelRightAfterTheCallEndsItBeforeTheReader() async throws {
        try await enroll(as: "owner-finger")
        let outcome = try runProgram("/usr/bin/python3", [try testScript("caller.py"), "evaluate-and-cancel"], timeout: 20)
        XCTAssertTrue(outcome.stdout.contains("error=org.example.LocalAuth.Error.AppCancel"), outcome.output)
        XCTAssertFalse(outcome.stdout.contains("status "), "the reader was never asked: \(outcome.output)")
        present("owner-finger")
        let next = await evaluate()
        XCTAssertTrue(next.succeeded, "the reader is free: \(next)")
    }

    /// An app may call the library's blocking API from its status handler
    /// (a preflight to update its prompt, say): the handler does not run on
    /// the library's bus thread, so this neither deadlocks nor traps.
    func testTheStatusHandlerMayCallTheBlockingAPI() async throws {
        try await enroll(as: "owner-finger")
        let context = LAContext()
        let preflights = Collected<Bool>()
        context.evaluationStatusHandler = { _ in
            preflights.append(LAContext().canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: nil))
        }
        present("owner-finger")
        let result = await evaluate(context: context)
        XCTAssertTrue(result.succeeded, "\(result)")
        try await preflights.wait(count: 1)
        XCTAssertEqual(preflights.values.first, true)
    }

    func testEvaluationsWaitTheirTurnForTheSensor() async throws {
        try await enroll(as: "owner-finger")
        present("owner-finger", times: 2)
        let first = Task { await self.evaluate() }
        let second = Task { await self.evaluate() }
        let results = await [first.value, second.value]
        XCTAssertTrue(results.allSatisfy(\.succeeded), "\(results)")
    }

    func testStatusUpdatesReachTheApp() async throws {
        try await enroll(as: "owner-finger")
        let context = LAContext()
        let collected = Task { () -> [LAEvaluationStatus] in
            var seen: [LAEvaluationStatus] = []
            for await status in context.evaluationStatusUpdates {
                seen.append(status)
                if seen.count == 2 { break }
            }
            return seen
        }
        let service = self.service!
        let seen = Collected<LAEvaluationStatus>()
        context.evaluationStatusHandler = { seen.append($0) }
        Task.detached {
            // Each input once the evaluation said it waits for it.
            try await seen.wait(count: 1)
            try service.sensor("RETRY 1")
            try await seen.wait(count: 2)
            try service.sensor("SCAN owner-finger")
        }
        let awaited16 = await evaluate(context: context)
        XCTAssertTrue(awaited16.succeeded)
        let awaited17 = await collected.value
        XCTAssertEqual(awaited17, [.placeFinger, .swipeTooShort])
    }

    func testDomainStateChangesWhenTheEnrolledSetChanges() async throws {
        try await enroll("right-index-finger", as: "owner-finger")
        let first = LAContext()
        XCTAssertTrue(first.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: nil))
        let before = try XCTUnwrap(first.domainState.biometry.stateHash)
        XCTAssertEqual(first.evaluatedPolicyDomainState, before)

        let again = LAContext()
        XCTAssertTrue(again.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: nil))
        XCTAssertEqual(again.domainState.biometry.stateHash, before, "stable while nothing changes")

        try await enroll("left-index-finger", as: "second-finger")
        let after = LAContext()
        XCTAssertTrue(after.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: nil))
        XCTAssertNotEqual(after.domainState.biometry.stateHash, before)
        XCTAssertNil(LAContext().domainState.biometry.stateHash, "nil before a preflight")
    }

    // MARK: Policy 2: fingerprint or the account password, through polkit's agent and PAM

    func testOwnerPolicyWithoutPrintsTakesTheRealPassword() throws {
        try rig.polkit("org.example.LocalAuth.evaluate", "yes")
        let right = try localauthctlAsOwner(["evaluate", "--policy", "owner"], password: TestAccount.password)
        XCTAssertEqual(right.status, 0, right.output)
        XCTAssertTrue(right.output.contains("Authenticating as: \(TestAccount.name)"), right.output)
        let wrong = try localauthctlAsOwner(["evaluate", "--policy", "owner"], password: "not-the-password")
        XCTAssertEqual(wrong.status, 1, wrong.output)
        XCTAssertTrue(wrong.output.contains("AuthenticationFailed"), wrong.output)
    }

    func testOwnerPolicyAcceptsTheFingerWhileThePasswordPromptWaits() throws {
        try enrollOwner(as: "owner-finger")
        try rig.polkit("org.example.LocalAuth.evaluate", "yes")
        present("owner-finger")
        let started = Date()
        let outcome = try localauthctlAsOwner(["evaluate", "--policy", "owner"], password: "-")
        XCTAssertEqual(outcome.status, 0, outcome.output)
        XCTAssertLessThan(Date().timeIntervalSince(started), 20, "the finger wins without waiting for the password")
    }

    func testOwnerPolicyAcceptsThePasswordWithoutWaitingForTheFinger() throws {
        try enrollOwner(as: "owner-finger")
        try rig.polkit("org.example.LocalAuth.evaluate", "yes")
        let started = Date()
        let outcome = try localauthctlAsOwner(["evaluate", "--policy", "owner"], password: TestAccount.password)
        XCTAssertEqual(outcome.status, 0, outcome.output)
        XCTAssertLessThan(Date().timeIntervalSince(started), 20, "no wait for the 30 s scan timeout")
    }

    /// The password dialog says who asks and why: polkit hands the agent the
    /// program the service sees and the app's reason.
    func testThePasswordDialogNamesTheProgramAndTheReason() throws {
        let uid = try TestAccount.ensure()
        try rig.polkit("org.example.LocalAuth.evaluate", "yes")
        try rig.polkit("org.example.LocalAuth.authenticate-owner", "auth_self")
        defer { try? rig.polkit("org.example.LocalAuth.authenticate-owner", nil) }
        let outcome = try runAs(uid, "/usr/bin/python3", [try testScript("cancel-agent.py"), "EvaluatePolicy", "usa{sv}",
                                                          #"[2, "Unlock the vault", {}]"#])
        XCTAssertTrue(outcome.stdout.contains("message=python3"), outcome.output)
        XCTAssertTrue(outcome.stdout.contains("Unlock the vault"), outcome.output)
        XCTAssertTrue(outcome.stdout.contains("error=org.example.LocalAuth.Error.UserCancel"), outcome.output)
    }

    func testThePasswordLiftsABiometryLockout() throws {
        try enrollOwner(as: "owner-finger")
        try rig.polkit("org.example.LocalAuth.evaluate", "yes")
        present("someone-else", times: 5)
        _ = try localauthctlAsOwner(["evaluate"])
        _ = try localauthctlAsOwner(["evaluate"])
        let locked = try localauthctlAsOwner(["status"])
        XCTAssertTrue(locked.output.contains("BiometryLockout"), locked.output)

        let unlocked = try localauthctlAsOwner(["evaluate", "--policy", "owner"], password: TestAccount.password)
        XCTAssertEqual(unlocked.status, 0, unlocked.output)
        let status = try localauthctlAsOwner(["status"])
        XCTAssertTrue(status.output.contains("biometrics:  ready"), status.output)
    }
}

/// localauthctl's prompt: the keyboard is its cancel button.
final class LocalauthctlPromptTests: RigTestCase, @unchecked Sendable {
    func testTypingCCancelsTheEvaluationAsTheUser() async throws {
        try await enroll(as: "owner-finger")
        let outcome = try runProgram("/usr/bin/python3", [Paths.helper("pty-answer.py"), "(type c", "c",
                                                          Paths.localauthctl, "evaluate"],
                                     environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address])
        XCTAssertEqual(outcome.status, 5, outcome.output)
        XCTAssertTrue(outcome.output.contains("UserCancel"), outcome.output)
    }
}

/// An administrator lifts a lockout; nobody else can.
final class LockoutResetTests: RigTestCase, @unchecked Sendable {
    func testOnlyAnAdministratorResetsALockout() throws {
        try enrollOwner(as: "owner-finger")
        try rig.polkit("org.example.LocalAuth.evaluate", "yes")
        present("someone-else", times: 5)
        _ = try localauthctlAsOwner(["evaluate"])
        _ = try localauthctlAsOwner(["evaluate"])
        XCTAssertTrue(try localauthctlAsOwner(["status"]).output.contains("BiometryLockout"))

        try rig.polkit("org.example.LocalAuth.manage", "no")
        let refused = try gdbus("ResetLockout", [TestAccount.name], asNobody: true)
        XCTAssertTrue(refused.stderr.contains("org.example.LocalAuth.Error.PermissionDenied"), refused.output)
        XCTAssertTrue(try localauthctlAsOwner(["status"]).output.contains("BiometryLockout"), "unchanged after a refusal")

        // Root is an administrator (polkit always authorizes it).
        let reset = try callService("ResetLockout", "s", [TestAccount.name])
        XCTAssertEqual(reset.status, 0, reset.output)
        XCTAssertTrue(try localauthctlAsOwner(["status"]).output.contains("biometrics:  ready"))
    }
}
