import DBusCore
import Foundation
@testable import LocalAuthService
import LocalAuthShared
import XCTest

/// The Evaluator (Sources/LocalAuthService/Evaluation) driven for real over
/// fakes of its seams (Fakes/): the scan loop, attempts and the lockout,
/// retries, reader errors, Cancel and EndEvaluation, the scan timeout and the
/// fairness cooling, the reader queue's wait, policy 2's race, reuse, and a
/// caller who is not at the reader. The lockout is the real LockoutStore in a
/// scratch directory; time is a fake clock. Milliseconds each, no root.
final class EvaluatorTests: XCTestCase {
    override func setUp() {
        super.setUp()
        _ = ServiceLoop.running
    }

    typealias Code = LocalAuthErrorCode

    // MARK: The scan loop and the lockout

    @ServiceActor
    func testAMatchAnswersTrueResetsTheLockoutAndIsTriedFirstNextTime() async throws {
        let rig = try EvaluatorRig()
        rig.prints.enroll(.leftIndex, for: rig.uid)
        rig.prints.enroll(.rightIndex, for: rig.uid)
        _ = try rig.verifier.scanDidNotMatch(rig.uid)
        _ = try rig.verifier.scanDidNotMatch(rig.uid)
        XCTAssertEqual(rig.verifier.failedMatches(of: rig.uid), 2)

        rig.reader.script = [.match(1)]
        let error = await rig.evaluate().value
        XCTAssertNil(error)
        XCTAssertEqual(rig.verifier.failedMatches(of: rig.uid), 0, "a match resets the lockout count")
        XCTAssertEqual(rig.lockoutFile, "0\n", "…on disk")
        XCTAssertEqual(rig.observers.statuses, [.placeFinger])
        XCTAssertEqual(rig.reader.opens, 1)
        XCTAssertFalse(rig.reader.isOpen, "the reader is given back")
        XCTAssertTrue(rig.queueIsFree)

        // The finger that matched (the gallery's second) is offered first next time.
        rig.reader.script = [.match(0)]
        let again = await rig.evaluate().value
        XCTAssertNil(again)
        XCTAssertEqual(rig.reader.galleries, [[.leftIndex, .rightIndex], [.rightIndex, .leftIndex]])
    }

    // MARK: A verify-only reader (docs/SECURITY.md, "A verify-only reader")

    @ServiceActor
    func testAVerifyOnlyReaderReachesTheFifthFingerWithoutALockout() async throws {
        let rig = try EvaluatorRig()
        let fingers: [FingerName] = [.leftThumb, .leftIndex, .rightThumb, .rightIndex, .rightMiddle]
        for finger in fingers { rig.prints.enroll(finger, for: rig.uid) }
        rig.reader.verifyOnlyPerson = .rightMiddle  // the 5th: four prints come before it

        // Three attempts: three prints tried, three misses, each counted.
        let first = await rig.evaluate().value
        XCTAssertEqual(first?.localAuthName, Code.authenticationFailed.dbusName)
        XCTAssertEqual(rig.verifier.failedMatches(of: rig.uid), 3)
        // The next evaluation goes on with the 4th and reaches the 5th: four misses in all, under the limit of 5.
        let second = await rig.evaluate().value
        XCTAssertNil(second, "the person's finger is reached")
        XCTAssertEqual(rig.reader.galleries.map(\.first), fingers.map { $0 })
        XCTAssertFalse(rig.verifier.isLockedOut(rig.uid))
        XCTAssertEqual(rig.verifier.failedMatches(of: rig.uid), 0, "the match resets the count")
        XCTAssertEqual(
            rig.environment.lockoutChanges, Array(repeating: rig.uid, count: 5),
            "every judged scan, four misses and the match, was counted (and told to the environment)")

        // Next time the finger that matched is tried first.
        let third = await rig.evaluate().value
        XCTAssertNil(third)
        XCTAssertEqual(rig.reader.scans, 6)
        XCTAssertEqual(rig.reader.galleries.last?.first, .rightMiddle)
    }

    @ServiceActor
    func testARetryTriesTheSamePrintAndPastTheLockoutTheRotationGoesOnAfterThePassword() async throws {
        let rig = try EvaluatorRig()
        let fingers: [FingerName] = [.leftThumb, .leftIndex, .leftMiddle, .rightThumb, .rightIndex, .rightMiddle, .rightRing]
        for finger in fingers { rig.prints.enroll(finger, for: rig.uid) }
        // A scan to repeat was not judged: the same print again.
        rig.reader.script = [.retry(.tooShort)]
        rig.reader.verifyOnlyPerson = .rightRing  // the 7th: six prints come before it
        let first = await rig.evaluate().value
        XCTAssertEqual(first?.localAuthName, Code.authenticationFailed.dbusName)
        XCTAssertEqual(rig.reader.galleries.map(\.first), [.leftThumb, .leftThumb, .leftIndex, .leftMiddle])
        // Five misses in a row lock biometry: the limit of a verify-only reader.
        let second = await rig.evaluate().value
        XCTAssertEqual(second?.localAuthName, Code.biometryLockout.dbusName)
        XCTAssertTrue(rig.verifier.isLockedOut(rig.uid))
        // The password lifts the lockout; the rotation goes on to the prints not tried yet.
        rig.evaluator.ownerPasswordAccepted(rig.uid)
        let third = await rig.evaluate().value
        XCTAssertNil(third)
        XCTAssertEqual(rig.reader.galleries.compactMap(\.first).suffix(4), [.rightThumb, .rightIndex, .rightMiddle, .rightRing])
    }

    @ServiceActor
    func testNoMatchesUpToTheAttemptsFailAndEachCountsInTheLockout() async throws {
        let rig = try EvaluatorRig()
        rig.prints.enroll(.rightIndex, for: rig.uid)
        rig.reader.script = [.noMatch, .noMatch, .noMatch, .match(0)]
        let error = await rig.evaluate().value
        XCTAssertEqual(error?.localAuthName, Code.authenticationFailed.dbusName)
        XCTAssertEqual(rig.reader.scans, 3, "attemptsPerEvaluation scans, no more")
        XCTAssertEqual(rig.verifier.failedMatches(of: rig.uid), 3)
        XCTAssertEqual(rig.lockoutFile, "3\n", "each failure is written")
        XCTAssertEqual(rig.observers.statuses, [.placeFinger, .noMatch, .noMatch])
        XCTAssertFalse(rig.reader.isOpen)
        XCTAssertEqual(rig.observers.endings.count, 1)
    }

    @ServiceActor
    func testReachingTheLockoutLimitLocksBiometryAndPreflightRefusesAfter() async throws {
        let rig = try EvaluatorRig()
        rig.prints.enroll(.rightIndex, for: rig.uid)
        rig.reader.script = [.noMatch, .noMatch, .noMatch]
        let first = await rig.evaluate().value
        XCTAssertEqual(first?.localAuthName, Code.authenticationFailed.dbusName)

        // Two more reach LockoutStore.limit (5) within the next evaluation's attempts.
        rig.reader.script = [.noMatch, .noMatch, .noMatch]
        let second = await rig.evaluate().value
        XCTAssertEqual(second?.localAuthName, Code.biometryLockout.dbusName)
        XCTAssertEqual(rig.reader.scans, 5)
        XCTAssertTrue(rig.verifier.isLockedOut(rig.uid))

        await rig.assertPreflight(.deviceOwnerAuthenticationWithBiometrics, fails: .biometryLockout)
        let third = await rig.evaluate().value
        XCTAssertEqual(third?.localAuthName, Code.biometryLockout.dbusName)
        XCTAssertEqual(rig.reader.opens, 2, "a locked-out user never reaches the reader")
        // Policy 2 still offers the password.
        await rig.assertPreflight(.deviceOwnerAuthentication, fails: nil)
    }

    @ServiceActor
    func testRetriesTellThePersonWhatToDoAndDoNotCount() async throws {
        let rig = try EvaluatorRig()
        rig.prints.enroll(.rightIndex, for: rig.uid)
        rig.reader.script = [
            .retry(.tooShort), .retry(.centerFinger), .retry(.removeFinger), .retry(.general), .retry(.tooFast),
            .noMatch, .noMatch, .noMatch,
        ]
        let error = await rig.evaluate().value
        XCTAssertEqual(error?.localAuthName, Code.authenticationFailed.dbusName)
        XCTAssertEqual(rig.reader.scans, 8, "five retries do not use up three attempts")
        XCTAssertEqual(rig.verifier.failedMatches(of: rig.uid), 3, "only the judged scans count")
        XCTAssertEqual(
            rig.observers.statuses,
            [
                .placeFinger, .swipeTooShort, .fingerNotCentered, .removeAndRetry,
                .retryScan, .tooFast, .noMatch, .noMatch,
            ])
    }

    @ServiceActor
    func testAReaderErrorMidScanIsTheCallersErrorAndTheReaderIsGivenBack() async throws {
        let rig = try EvaluatorRig()
        rig.prints.enroll(.rightIndex, for: rig.uid)
        rig.reader.script = [.noMatch, .fail(FakeReader.removed)]
        let removed = await rig.evaluate().value
        XCTAssertEqual(removed, Interruption.readerRemoved.error, "the reader's own mapping (unusable)")
        XCTAssertEqual(rig.verifier.failedMatches(of: rig.uid), 1, "the no-match before it still counts")
        XCTAssertFalse(rig.reader.isOpen)

        rig.reader.script = [.fail(GLibError(domain: 1, code: 2, message: "protocol error"))]
        let failed = await rig.evaluate().value
        XCTAssertEqual(failed, ServiceErrors.la(.systemCancel, "the fingerprint reader failed: protocol error"))
        XCTAssertFalse(rig.reader.isOpen)
        XCTAssertTrue(rig.queueIsFree)
    }

    // MARK: Ending an evaluation early

    @ServiceActor
    func testCancelAndEndEvaluationDuringTheScanEndTheCallAndReleaseTheReader() async throws {
        let rig = try EvaluatorRig()
        rig.prints.enroll(.rightIndex, for: rig.uid)
        let cases: [([DBusValue], Code)] = [
            ([.string("r")], .appCancel),
            ([.string("r"), .string("app-cancel")], .appCancel),
            ([.string("r"), .string("user-cancel")], .userCancel),
            ([.string("r"), .string("user-fallback")], .userFallback),
        ]
        for (index, (arguments, expected)) in cases.enumerated() {
            let pending = rig.evaluate(requestID: "r")
            try await rig.waitUntil { rig.reader.waiting }
            // Another connection's request of the same id is not this one.
            rig.evaluator.end("r", of: ":1.99", .appCancelled)
            try await Task.sleep(for: .milliseconds(5))
            XCTAssertTrue(rig.reader.waiting, "only the caller's own call ends")

            let interruption =
                arguments.count == 1
                ? Interruption.appCancelled : try EndEvaluationArguments(arguments).interruption
            if arguments.count == 1 { XCTAssertEqual(try CancelArguments(arguments).requestID, "r") }
            rig.evaluator.end("r", of: rig.sender, interruption)
            let error = await pending.value
            XCTAssertEqual(error?.localAuthName, expected.dbusName, "\(arguments)")
            XCTAssertEqual(rig.reader.cancelledScans, index + 1, "the scan itself was cancelled")
            XCTAssertFalse(rig.reader.isOpen, "the reader is released")
            XCTAssertTrue(rig.queueIsFree)
        }
        XCTAssertEqual(rig.verifier.failedMatches(of: rig.uid), 0, "a cancelled scan is no failure")
        XCTAssertThrowsError(try EndEvaluationArguments([.string("r"), .string("user-gone")]))
    }

    // MARK: Time

    @ServiceActor
    func testTheScanTimeoutEndsWithSystemCancelAndAWarmReaderCoolsTheUserDown() async throws {
        let rig = try EvaluatorRig()
        rig.prints.enroll(.rightIndex, for: rig.uid)
        rig.reader.warm = true
        for _ in 0..<2 {
            let pending = rig.evaluate()
            try await rig.waitUntil { rig.reader.waiting }
            rig.clock.advance(by: 29)
            XCTAssertTrue(rig.reader.waiting, "not before the scan timeout")
            rig.clock.advance(by: 1)
            try await rig.waitUntil { !rig.reader.isOpen }
            let error = await pending.value
            XCTAssertEqual(error, Interruption.timedOut.error)
            XCTAssertFalse(rig.reader.isOpen)
        }
        // Two timeouts in a row on a warm reader: 30 s before the next wait.
        let cooling = await rig.evaluate().value
        XCTAssertEqual(cooling?.kind, .readerCoolingDown)
        XCTAssertEqual(rig.reader.opens, 2, "refused before the reader")

        rig.clock.advance(by: ServiceLimits.warmReaderFirstBackoff + 1)
        rig.reader.script = [.match(0)]
        let after = await rig.evaluate().value
        XCTAssertNil(after, "the cooling ends")
        XCTAssertEqual(rig.reader.opens, 3)
    }

    @ServiceActor
    func testTimeoutsOnAColdReaderDoNotCool() async throws {
        let rig = try EvaluatorRig()
        rig.prints.enroll(.rightIndex, for: rig.uid)
        for _ in 0..<3 {
            let pending = rig.evaluate()
            try await rig.waitUntil { rig.reader.waiting }
            rig.clock.advance(by: 30)
            try await rig.waitUntil { !rig.reader.isOpen }
            let error = await pending.value
            XCTAssertEqual(error, Interruption.timedOut.error)
        }
        XCTAssertEqual(rig.reader.opens, 3)
    }

    @ServiceActor
    func testWaitingTooLongForTheReaderQueueEndsWithSystemCancelUnopened() async throws {
        let rig = try EvaluatorRig()
        rig.prints.enroll(.rightIndex, for: rig.uid)
        // Someone else (another user's enrollment) holds the reader.
        let holder = SensorQueue.Ticket(uid: 2000, purpose: .enrollment(sender: ":1.7"))
        let held = await rig.queue.acquire(holder)
        XCTAssertTrue(held)
        let pending = rig.evaluate()
        try await rig.waitUntil { rig.queue.waitingCount == 1 }
        rig.clock.advance(by: ServiceLimits.readerQueueWait - 1)
        XCTAssertEqual(rig.queue.waitingCount, 1, "not before readerQueueWait")
        rig.clock.advance(by: 1)
        try await rig.waitUntil { rig.finished == 1 }
        let error = await pending.value
        XCTAssertEqual(error, Interruption.queueTimedOut.error)
        XCTAssertEqual(rig.queue.waitingCount, 0, "out of the line")
        XCTAssertEqual(rig.reader.opens, 0)
        XCTAssertEqual(rig.clock.pendingDelays, [], "no timer left behind")
    }

    // MARK: Policy 2: the fingerprint and the password at once

    @ServiceActor
    func testPolicyTwoThePasswordWinsWhileTheFingerWaits() async throws {
        let rig = try EvaluatorRig()
        rig.prints.enroll(.rightIndex, for: rig.uid)
        _ = try rig.verifier.scanDidNotMatch(rig.uid)
        let pending = rig.evaluate(.deviceOwnerAuthentication)
        try await rig.waitUntil { rig.reader.waiting && rig.password.waiting }
        rig.password.verdict = .authorized
        let error = await pending.value
        XCTAssertNil(error)
        XCTAssertEqual(rig.reader.cancelledScans, 1, "the scan is cancelled")
        XCTAssertFalse(rig.reader.isOpen)
        XCTAssertEqual(rig.verifier.failedMatches(of: rig.uid), 0, "the password lifts the lockout count")
        XCTAssertEqual(rig.environment.passwordsGiven, [rig.uid], "and counts as the password given")
        XCTAssertEqual(rig.password.lastDetails["org.example.LocalAuth.reason"], "Unlock the test")
    }

    @ServiceActor
    func testPolicyTwoTheFingerWinsAndThePasswordIsCancelled() async throws {
        let rig = try EvaluatorRig()
        rig.prints.enroll(.rightIndex, for: rig.uid)
        let pending = rig.evaluate(.deviceOwnerAuthentication)
        try await rig.waitUntil { rig.reader.waiting && rig.password.waiting }
        rig.reader.script = [.match(0)]
        let error = await pending.value
        XCTAssertNil(error)
        XCTAssertTrue(rig.password.cancelled, "the password prompt is withdrawn")
        XCTAssertEqual(rig.environment.passwordsGiven, [])
        XCTAssertFalse(rig.reader.isOpen)
    }

    @ServiceActor
    func testPolicyTwoWhenBothFailThePasswordsErrorIsTheAnswer() async throws {
        let rig = try EvaluatorRig()
        rig.prints.enroll(.rightIndex, for: rig.uid)
        rig.reader.script = [.noMatch, .noMatch, .noMatch]
        let pending = rig.evaluate(.deviceOwnerAuthentication)
        // The fingerprint way is over; the password is still asked.
        try await rig.waitUntil { rig.reader.releases == 1 && rig.password.waiting }
        rig.password.verdict = .dismissed
        let error = await pending.value
        XCTAssertEqual(error?.localAuthName, Code.userCancel.dbusName, "the password's verdict, not the finger's")
        XCTAssertEqual(rig.verifier.failedMatches(of: rig.uid), 3)
    }

    // MARK: Reuse

    @ServiceActor
    func testAMatchIsReusedWithinTheReuseDurationWithoutTheReader() async throws {
        let rig = try EvaluatorRig()
        rig.prints.enroll(.rightIndex, for: rig.uid)
        rig.reader.script = [.match(0)]
        let first = await rig.evaluate().value
        XCTAssertNil(first)
        rig.clock.advance(by: 5)
        let reused = await rig.evaluate(reuse: 10).value
        XCTAssertNil(reused)
        XCTAssertEqual(rig.reader.opens, 1, "the reader is not touched")
        XCTAssertEqual(rig.observers.started, 1, "no prompt either")

        rig.clock.advance(by: 10)
        rig.reader.script = [.match(0)]
        let expired = await rig.evaluate(reuse: 10).value
        XCTAssertNil(expired)
        XCTAssertEqual(rig.reader.opens, 2, "15 s later a 10 s reuse scans again")
    }

    @ServiceActor
    func testAChangedEnrolledSetIsNotReused() async throws {
        let rig = try EvaluatorRig()
        rig.prints.enroll(.rightIndex, for: rig.uid)
        rig.reader.script = [.match(0)]
        let first = await rig.evaluate().value
        XCTAssertNil(first)
        // The same finger enrolled again: a new enrollment stamp.
        rig.prints.byUser[rig.uid] = []
        rig.prints.enroll(.rightIndex, for: rig.uid, stamp: 2)
        rig.reader.script = [.noMatch, .noMatch, .noMatch]
        let after = await rig.evaluate(reuse: 60).value
        XCTAssertEqual(after?.localAuthName, Code.authenticationFailed.dbusName, "a new scan, which fails")
        XCTAssertEqual(rig.reader.opens, 2)
    }

    // MARK: Who is at the reader

    @ServiceActor
    func testACallerNotAtTheReaderNeverTouchesIt() async throws {
        let rig = try EvaluatorRig()
        rig.prints.enroll(.rightIndex, for: rig.uid)
        rig.reader.script = [.match(0)]
        for presence in [Presence.remote, .inactive, .noSeat] {
            rig.environment.presence = presence
            let error = await rig.evaluate().value
            XCTAssertEqual(error?.localAuthName, LocalAuthServiceError.notAtTheReader, "\(presence)")
            await rig.assertPreflight(
                .deviceOwnerAuthenticationWithBiometrics, fails: nil,
                name: LocalAuthServiceError.notAtTheReader)
        }
        // Policy 2 asks the password only.
        rig.password.verdict = .authorized
        let password = await rig.evaluate(.deviceOwnerAuthentication).value
        XCTAssertNil(password)
        XCTAssertEqual(rig.password.asked, 1)
        XCTAssertEqual(rig.reader.opens, 0)
        XCTAssertEqual(rig.reader.scans, 0)
        XCTAssertEqual(rig.observers.statuses, [])
    }

    // MARK: VerifyUser

    @ServiceActor
    func testVerifyUserIsForRootAndScansTheNamedUserOnlyAtTheReader() async throws {
        let rig = try EvaluatorRig()
        rig.prints.enroll(.rightIndex, for: 0)
        let arguments = try VerifyUserArguments([.string("root"), .dictionary([:])])
        XCTAssertEqual(arguments.user, "root")
        XCTAssertThrowsError(try VerifyUserArguments([.string(""), .dictionary([:])]))

        // A user naming root is refused before anything else.
        let user = rig.caller(requestID: "su-1")
        await XCTAssertThrowsDBusError(LocalAuthServiceError.permissionDenied) { () async throws(ServiceError) in
            try await rig.evaluator.verifyUser(user, arguments)
        }
        // Root in a session switched away from: someone else is at the reader.
        let root = rig.caller(requestID: "su-2", uid: 0)
        rig.environment.presence = .inactive
        await XCTAssertThrowsDBusError(LocalAuthServiceError.notAtTheReader) { () async throws(ServiceError) in
            try await rig.evaluator.verifyUser(root, arguments)
        }
        XCTAssertEqual(rig.reader.opens, 0)

        rig.environment.presence = .local
        rig.reader.script = [.noMatch, .match(0)]
        try await rig.evaluator.verifyUser(root, arguments)
        XCTAssertEqual(rig.reader.scans, 2)
        XCTAssertEqual(rig.verifier.failedMatches(of: 0), 0, "root's own lockout, reset by the match")
        XCTAssertEqual(rig.verifier.failedMatches(of: rig.uid), 0, "the caller's is not the user's")
        XCTAssertFalse(rig.reader.isOpen)
    }
}

/// Asserts that `body` throws a ServiceError named `name`.
@ServiceActor
func XCTAssertThrowsDBusError(
    _ name: String, line: UInt = #line,
    _ body: @ServiceActor () async throws(ServiceError) -> Void
) async {
    do throws(ServiceError) {
        try await body()
        XCTFail("no error; expected \(name)", line: line)
    } catch {
        XCTAssertEqual(error.localAuthName, name, line: line)
    }
}
