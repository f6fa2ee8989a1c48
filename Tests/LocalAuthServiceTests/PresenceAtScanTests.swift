import DBusCore
import Foundation
@testable import LocalAuthService
import LocalAuthShared
import XCTest

/// A touch belongs to whoever is in front when the finger is read, not when
/// the call came in (docs/SECURITY.md, "A touch belongs to whoever is in
/// front"; issue 37). The one verify (Evaluation/Verification.swift) judges
/// the caller's presence again before every scan and once the finger has been
/// read, throws away a scan read across a switch of the session in front, and
/// `Verifier.frontChanged` ends the verifies, queued or scanning, of callers
/// no longer at the reader. Over fakes: milliseconds, no root. On main
/// c686a26 every test here fails (the match was taken, the queued call scanned).
final class PresenceAtScanTests: XCTestCase {
    override func setUp() {
        super.setUp()
        _ = ServiceLoop.running
    }

    static let notAtTheReader = LocalAuthServiceError.notAtTheReader

    /// mallory's call, admitted while he was in front, waits for a finger;
    /// alice is switched to and touches: her match is not his.
    @ServiceActor
    func testAMatchReadAfterTheCallerLeftTheFrontIsThrownAway() async throws {
        let rig = try EvaluatorRig()
        rig.prints.enroll(.rightIndex, for: rig.uid)
        _ = try rig.verifier.scanDidNotMatch(rig.uid)

        let pending = rig.evaluate()
        try await rig.waitUntil { rig.reader.waiting }
        rig.environment.presence = .inactive
        rig.reader.script = [.match(0)]
        let error = await pending.value
        XCTAssertEqual(error?.localAuthName, Self.notAtTheReader)
        XCTAssertEqual(rig.verifier.failedMatches(of: rig.uid), 1, "a match thrown away lifts no lockout count")
        XCTAssertEqual(rig.observers.endings.count, 1)
        XCTAssertFalse(rig.reader.isOpen, "the reader is given back")
        XCTAssertTrue(rig.queueIsFree)

        // Nor is it a match a `reuse-duration` may take later: the next evaluation scans.
        rig.environment.presence = .local
        rig.reader.script = [.match(0)]
        let next = await rig.evaluate(reuse: 300).value
        XCTAssertNil(next)
        XCTAssertEqual(rig.reader.scans, 2, "the thrown-away match was not reused")
    }

    /// A switch away and back during the scan: the finger was read while
    /// someone else may have been in front. Thrown away, whichever way it went.
    @ServiceActor
    func testAScanReadAcrossASwitchIsThrownAwayEvenWithTheCallerBackInFront() async throws {
        let rig = try EvaluatorRig()
        rig.prints.enroll(.rightIndex, for: rig.uid)
        for step in [FakeReader.Step.match(0), .noMatch] {
            let pending = rig.evaluate()
            try await rig.waitUntil { rig.reader.waiting }
            rig.environment.frontChanges += 2  // away and back, as logind signals it
            rig.reader.script = [step]
            let error = await pending.value
            XCTAssertEqual(error?.localAuthName, Self.notAtTheReader, "\(step)")
        }
        XCTAssertEqual(rig.verifier.failedMatches(of: rig.uid), 0, "someone else's no-match is not this user's failure")

        // With no switch the same scan counts.
        let pending = rig.evaluate()
        try await rig.waitUntil { rig.reader.waiting }
        rig.reader.script = [.match(0)]
        let matched = await pending.value
        XCTAssertNil(matched)
    }

    /// Judged before every scan: after a scan to repeat, a caller no longer
    /// in front gets no further scan.
    @ServiceActor
    func testNoFurtherScanOnceTheCallerLeftTheFront() async throws {
        let rig = try EvaluatorRig()
        rig.prints.enroll(.rightIndex, for: rig.uid)
        let pending = rig.evaluate()
        try await rig.waitUntil { rig.reader.waiting }
        rig.environment.presence = .inactive
        rig.reader.script = [.retry(.tooShort)]
        let error = await pending.value
        XCTAssertEqual(error?.localAuthName, Self.notAtTheReader)
        XCTAssertEqual(rig.reader.scans, 1, "the scan to repeat was not taken again")
        XCTAssertFalse(rig.reader.isOpen)
    }

    /// logind signals a switch: the verify scanning for a caller no longer in
    /// front and the one queued behind it end at once, before any touch;
    /// another caller's, still in front, goes on and gets the reader.
    @ServiceActor
    func testASwitchEndsTheQueuedAndScanningVerifiesOfCallersNoLongerInFront() async throws {
        let rig = try EvaluatorRig()
        rig.prints.enroll(.rightIndex, for: rig.uid)
        let scanning = rig.evaluate(requestID: "a", sender: ":1.50")
        try await rig.waitUntil { rig.reader.waiting }
        let queued = rig.evaluate(requestID: "b", sender: ":1.51")
        let staying = rig.evaluate(requestID: "c", sender: ":1.52")
        try await rig.waitUntil { rig.queue.waitingCount == 2 }

        // No change of who is in front: nothing ends.
        await rig.verifier.frontChanged()
        try await Task.sleep(for: .milliseconds(5))
        XCTAssertTrue(rig.reader.waiting)
        XCTAssertEqual(rig.queue.waitingCount, 2)

        rig.environment.presences = [":1.50": .inactive, ":1.51": .inactive]
        await rig.verifier.frontChanged()
        let first = await scanning.value
        let second = await queued.value
        XCTAssertEqual(first?.localAuthName, Self.notAtTheReader)
        XCTAssertEqual(second?.localAuthName, Self.notAtTheReader)
        XCTAssertEqual(rig.reader.cancelledScans, 1, "the scan in progress was cancelled")

        // The caller still in front has the reader now, and its touch counts.
        try await rig.waitUntil { rig.reader.waiting }
        rig.reader.script = [.match(0)]
        let third = await staying.value
        XCTAssertNil(third)
        XCTAssertEqual(rig.reader.scans, 2)
        XCTAssertTrue(rig.queueIsFree)
    }

    /// Policy 2: the switch ends the fingerprint part only; the password,
    /// asked through the caller's own polkit agent, may still answer.
    @ServiceActor
    func testPolicyTwoAfterASwitchLeavesThePassword() async throws {
        let rig = try EvaluatorRig()
        rig.prints.enroll(.rightIndex, for: rig.uid)
        let pending = rig.evaluate(.deviceOwnerAuthentication)
        try await rig.waitUntil { rig.reader.waiting && rig.password.waiting }
        rig.environment.presence = .inactive
        await rig.verifier.frontChanged()
        try await rig.waitUntil { !rig.reader.waiting }
        XCTAssertTrue(rig.password.waiting, "the password is still asked")
        rig.password.verdict = .authorized
        let error = await pending.value
        XCTAssertNil(error)
        XCTAssertEqual(rig.reader.scans, 1)
    }

    /// `su alice` in mallory's terminal: pam_localauth's VerifyUser(alice),
    /// admitted while his session was in front. alice is switched to and
    /// touches; mallory must not become alice.
    @ServiceActor
    func testVerifyUserOfASessionSwitchedAwayIsNotAnsweredByTheNextTouch() async throws {
        let rig = try EvaluatorRig()
        let alice: UInt32 = 0  // a user name the test machine has: root's
        rig.prints.enroll(.rightIndex, for: alice)
        let arguments = try VerifyUserArguments([.string("root"), .dictionary([:])])
        let su = rig.caller(requestID: "su", uid: 0, sender: ":1.60")
        let pending = Task { @ServiceActor () -> ServiceError? in
            do throws(ServiceError) {
                try await rig.evaluator.verifyUser(su, arguments)
                return nil
            } catch {
                return error
            }
        }
        try await rig.waitUntil { rig.reader.waiting }
        rig.environment.presences[":1.60"] = .inactive
        rig.environment.frontChanges += 1
        rig.reader.script = [.match(0)]  // her touch, before the switch's signal was handled
        let error = await pending.value
        XCTAssertEqual(error?.localAuthName, Self.notAtTheReader)
        XCTAssertEqual(rig.reader.scans, 1)
    }
}
