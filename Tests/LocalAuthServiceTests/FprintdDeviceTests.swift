import DBusCore
@testable import LocalAuthService
import LocalAuthShared
import XCTest

/// fprintd's Device object (Sources/LocalAuthService/Fprintd) driven through
/// the router with its own method table, over fakes of its seams
/// (Fakes/FakeFprintdSeams.swift) and the real Evaluator's lockout: claims,
/// verify and enroll status sequences, Release in the middle of a scan, the
/// LAContext rules in fprintd's words, deletes on a reader's chip.
/// Milliseconds each, no root, no bus, no libfprint.
final class FprintdDeviceTests: XCTestCase {
    override func setUp() {
        super.setUp()
        _ = ServiceLoop.running
    }

    private static let error = "net.reactivated.Fprint.Error."

    /// A Device over fakes, served by a router as the service serves it.
    @ServiceActor
    final class FprintdRig {
        let evaluation: EvaluatorRig
        let seams: FakeFprintdSeams
        let reader: FakeFprintdReader
        let router = RouterRig()
        let device: FprintdDevice
        /// The claimer's connection, and another one; both root's (a user name the test machine has).
        let claimer = ":1.7"
        let other = ":1.8"
        let uid: UInt32 = 0
        private final class Tasks { var all: [Task<Void, Never>] = [] }
        private let tasks = Tasks()

        init() throws {
            evaluation = try EvaluatorRig()
            seams = FakeFprintdSeams(rig: evaluation)
            reader = FakeFprintdReader(evaluation.reader.identity)
            device = FprintdDevice(
                id: 0, reader: reader, seams: seams, scanTimeout: 30,
                spawn: { [tasks] body in tasks.all.append(Task { @ServiceActor in await body() }) })
            router.callers.uids = [claimer: uid, other: uid]
            for action in [FprintdBus.Action.verify, .enroll] { router.polkit.verdicts[action.rawValue] = .authorized }
        }

        /// One call through the router; its answer, and its message if an error.
        @discardableResult
        func call(_ member: String, _ argument: String? = nil, from sender: String? = nil) async -> (FakeWireCall.Answer, String) {
            let call = FakeWireCall(
                member, argument == nil ? "" : "s", argument.map { [.string($0)] } ?? [],
                sender: sender ?? claimer)
            await router.send(call, FprintdDevice.contract, device)
            return (call.answers.first!, call.messages.first ?? "")
        }

        /// Waits for the scans the device started (they run after their Start's reply).
        func settle() async {
            let running = tasks.all
            tasks.all = []
            for task in running { await task.value }
        }

        var statuses: [String] { seams.statuses }

        /// One call, and the answer it must get.
        func expect(
            _ expected: FakeWireCall.Answer, _ member: String, _ argument: String? = nil, from sender: String? = nil,
            note: String = "", line: UInt = #line
        ) async {
            let (answer, message) = await call(member, argument, from: sender)
            XCTAssertEqual(answer, expected, "\(member): \(message) \(note)", line: line)
        }
    }

    private static let ok = FakeWireCall.Answer.reply([])
    private static func failed(_ name: String) -> FakeWireCall.Answer { .error(error + name) }

    // MARK: Claims

    @ServiceActor
    func testClaimRulesAreFprintds() async throws {
        let rig = try FprintdRig()
        var answer = await rig.call("VerifyStart", "any")
        XCTAssertEqual(answer.0, Self.failed("ClaimDevice"))
        XCTAssertEqual(answer.1, "Device was not claimed before use")
        await rig.expect(Self.failed("ClaimDevice"), "Release")
        await rig.expect(Self.ok, "Claim", "")
        XCTAssertEqual(rig.device.claim?.username, "root")
        await rig.expect(Self.failed("AlreadyInUse"), "Claim", "", from: rig.other)
        await rig.expect(Self.failed("AlreadyInUse"), "Release", from: rig.other)
        await rig.expect(Self.failed("AlreadyInUse"), "DeleteEnrolledFingers", "", from: rig.other)
        // Any time, whoever claimed.
        await rig.expect(Self.failed("NoEnrolledPrints"), "ListEnrolledFingers", "", from: rig.other)
        await rig.expect(Self.failed("NoActionInProgress"), "VerifyStop")
        await rig.expect(Self.failed("NoActionInProgress"), "EnrollStop")
        await rig.expect(Self.failed("InvalidFingername"), "EnrollStart", "pinky")
        await rig.expect(Self.failed("InvalidFingername"), "DeleteEnrolledFinger", "pinky")
        await rig.expect(Self.ok, "Release")
        XCTAssertNil(rig.device.claim)

        // polkit: either action suffices for Claim; neither is PermissionDenied in fprintd's words.
        rig.router.polkit.verdicts = [:]
        answer = await rig.call("Claim", "")
        XCTAssertEqual(answer.0, Self.failed("PermissionDenied"))
        XCTAssertEqual(answer.1, "Not Authorized: net.reactivated.fprint.device.enroll")
        rig.router.polkit.verdicts[FprintdBus.Action.enroll.rawValue] = .authorized
        await rig.expect(Self.ok, "Claim", "")
        // A claimer that leaves the bus is released.
        rig.device.senderVanished(rig.claimer)
        XCTAssertNil(rig.device.claim)
        XCTAssertTrue(rig.router.registry.isEmpty)
    }

    /// fprintd opens the device at Claim and closes it at Release
    /// (src/device.c: fprint_device_claim, fprint_device_release). Ours
    /// keeps the reader open through the one gate (Readers.acquire's count)
    /// without a turn in the reader queue: an app's evaluation still runs
    /// while the device is claimed and idle, and a verify's scans take their
    /// turn. On main a Claim held nothing (no hold was ever taken).
    @ServiceActor
    func testAClaimKeepsTheReaderOpenUntilReleaseWithoutTakingTheQueue() async throws {
        let rig = try FprintdRig()
        rig.seams.enroll(.rightIndex, for: rig.uid)
        await rig.expect(Self.ok, "Claim", "")
        XCTAssertTrue(rig.seams.held, "Claim opened the reader")
        XCTAssertTrue(rig.evaluation.queueIsFree, "a claim takes no turn in the reader queue")

        // An app of the same machine evaluates meanwhile, on the reader the claim keeps open.
        rig.evaluation.prints.enroll(.leftIndex, for: rig.evaluation.uid)
        rig.evaluation.reader.script = [.match(0)]
        let evaluated = await rig.evaluation.evaluate().value
        XCTAssertNil(evaluated, "an evaluation while the device is claimed and idle")
        XCTAssertTrue(rig.seams.held)

        // A verify takes its turn and gives it back with its final status; the claim keeps the reader.
        await rig.expect(Self.ok, "VerifyStart", "any")
        XCTAssertFalse(rig.evaluation.queueIsFree, "the verify's turn")
        rig.evaluation.reader.script = [.match(0)]
        await rig.settle()
        XCTAssertEqual(rig.statuses.last, "VerifyStatus verify-match done")
        XCTAssertTrue(rig.evaluation.queueIsFree)
        XCTAssertTrue(rig.seams.held, "the verify's end does not end the claim's hold")
        await rig.expect(Self.ok, "VerifyStop")
        XCTAssertTrue(rig.seams.held)
        await rig.expect(Self.ok, "Release")
        XCTAssertFalse(rig.seams.held, "Release gives the reader back")
        XCTAssertEqual(rig.seams.holdsTaken, 1)

        // Every other way a claim ends gives it back too.
        await rig.expect(Self.ok, "Claim", "")
        rig.device.senderVanished(rig.claimer)
        XCTAssertFalse(rig.seams.held, "the claimer left the bus")
        await rig.expect(Self.ok, "Claim", "")
        rig.device.stopAll()
        XCTAssertFalse(rig.seams.held, "SIGTERM: the readers must close")
        let other = try FprintdRig()
        await other.expect(Self.ok, "Claim", "")
        other.device.readerGone()
        XCTAssertFalse(other.seams.held, "the reader was unplugged")
    }

    /// fprintd answers a Claim whose open failed with Internal, "Open failed
    /// with error: …" (src/device.c: dev_open_cb), after one attempt, and
    /// the device stays unclaimed. On main the Claim succeeded without
    /// opening anything.
    @ServiceActor
    func testAClaimWhoseOpenFailsAnswersAsFprintdAndLeavesTheDeviceFree() async throws {
        let rig = try FprintdRig()
        rig.seams.holdError = ServiceError(.readerInUse, "Failed to bind to socket")
        let (answer, message) = await rig.call("Claim", "")
        XCTAssertEqual(answer, Self.failed("Internal"))
        XCTAssertEqual(message, "Open failed with error: Failed to bind to socket")
        XCTAssertNil(rig.device.claim, "left unclaimed")
        XCTAssertFalse(rig.seams.held)
        XCTAssertTrue(rig.evaluation.queueIsFree)
        rig.seams.holdError = nil
        await rig.expect(Self.ok, "Claim", "", from: rig.other, note: "free for anyone")
        XCTAssertTrue(rig.seams.held)
    }

    /// Readers.closeAll (before suspend) waits for every holder, so a claim
    /// gives its hold back when sleep begins and the claim stays (as
    /// fprintd's); resume opens the reader for it again. A Claim while
    /// asleep is a claim without a hold until resume.
    @ServiceActor
    func testSleepTakesAClaimsReaderBackAndResumeOpensItAgain() async throws {
        let rig = try FprintdRig()
        await rig.expect(Self.ok, "Claim", "")
        rig.seams.asleep = true
        rig.device.sleepBegan()
        XCTAssertFalse(rig.seams.held, "given back before the readers close")
        XCTAssertNotNil(rig.device.claim, "the claim stays")
        rig.seams.asleep = false
        rig.device.readersOffered()
        await rig.settle()
        XCTAssertTrue(rig.seams.held, "opened again after resume")
        XCTAssertEqual(rig.seams.holdsTaken, 2)
        await rig.expect(Self.ok, "Release")
        XCTAssertFalse(rig.seams.held)

        rig.seams.asleep = true
        await rig.expect(Self.ok, "Claim", "", note: "while asleep")
        XCTAssertFalse(rig.seams.held)
        rig.seams.asleep = false
        rig.device.readersOffered()
        await rig.settle()
        XCTAssertTrue(rig.seams.held)
        // A resume that cannot open it: the claim goes on without a hold.
        rig.seams.asleep = true
        rig.device.sleepBegan()
        rig.seams.asleep = false
        rig.seams.holdError = ServiceError(.readerInUse, "Failed to bind to socket")
        rig.device.readersOffered()
        await rig.settle()
        XCTAssertFalse(rig.seams.held)
        await rig.expect(Self.ok, "Release")
    }

    /// fprintd keeps a claim until its claimer releases it or leaves the bus
    /// ("device already claimed"). Here an idle claim ends when its claimer
    /// is no longer in front (docs/FPRINTD.md, "Claims"); on c686a26 it stayed.
    @ServiceActor
    func testAnIdleClaimEndsWhenItsClaimerIsNoLongerInFront() async throws {
        let rig = try FprintdRig()
        await rig.expect(Self.ok, "Claim", "")
        await rig.device.frontChanged()
        XCTAssertNotNil(rig.device.claim, "the claimer is still in front: the claim stays")
        rig.seams.presence = .inactive
        await rig.device.frontChanged()
        XCTAssertNil(rig.device.claim, "switched away: the idle claim ended")
        XCTAssertFalse(rig.seams.held, "and gave the reader back")
        await rig.expect(Self.failed("ClaimDevice"), "VerifyStart", "any", note: "the claimer's next call")
        // The person now in front claims it.
        rig.seams.presence = .local
        await rig.expect(Self.ok, "Claim", "", from: rig.other)
    }

    /// A root PAM host at the reader (the greeter's worker, the lock
    /// screen's, sudo) takes over an idle claim of another uid; not a claim
    /// with an operation running, not root's own, and not from behind a switch.
    @ServiceActor
    func testARootPamHostAtTheReaderTakesOverAnIdleClaimOfAnotherUid() async throws {
        let rig = try FprintdRig()
        let settings = ":1.9"  // GNOME Settings of uid 65534, left open on its fingerprint page
        rig.router.callers.uids[settings] = 65534
        rig.seams.enroll(.rightIndex, for: 65534)
        await rig.expect(Self.ok, "Claim", "", from: settings)

        // Not from a root caller behind a switch.
        rig.seams.presence = .inactive
        await rig.expect(Self.failed("AlreadyInUse"), "Claim", "", from: rig.claimer)
        rig.seams.presence = .local
        // Not while its verify runs.
        await rig.expect(Self.ok, "VerifyStart", "any", from: settings)
        try await rig.evaluation.waitUntil { rig.evaluation.reader.waiting }
        await rig.expect(Self.failed("AlreadyInUse"), "Claim", "", from: rig.claimer)
        rig.evaluation.reader.script = [.noMatch]
        await rig.settle()
        // Idle now (its final status sent): root at the reader takes it over.
        await rig.expect(Self.ok, "Claim", "", from: rig.claimer)
        XCTAssertEqual(rig.device.claim?.sender, rig.claimer)
        XCTAssertEqual(rig.seams.holdsTaken - rig.seams.holdsReleased, 1, "one hold: the new claim's")
        await rig.expect(Self.failed("AlreadyInUse"), "VerifyStop", from: settings)
        // Root's own idle claim is not taken over by another root caller.
        await rig.expect(Self.failed("AlreadyInUse"), "Claim", "", from: rig.other)
    }

    // MARK: Verify

    @ServiceActor
    func testAVerifyReportsRetriesThenAMatchAndResetsTheSharedLockout() async throws {
        let rig = try FprintdRig()
        rig.seams.enroll(.leftThumb, for: rig.uid)
        rig.seams.enroll(.rightIndex, for: rig.uid)
        _ = try rig.evaluation.verifier.scanDidNotMatch(rig.uid)
        _ = try rig.evaluation.verifier.scanDidNotMatch(rig.uid)
        await rig.call("Claim", "")
        rig.evaluation.reader.script = [.retry(.tooShort), .match(0)]
        await rig.expect(Self.ok, "VerifyStart", "right-index-finger")
        await rig.settle()
        XCTAssertEqual(
            rig.statuses,
            [
                "VerifyFingerSelected right-index-finger", "VerifyStatus verify-swipe-too-short",
                "VerifyStatus verify-match done",
            ])
        XCTAssertEqual(rig.evaluation.reader.galleries, [[.rightIndex], [.rightIndex]], "the finger asked for, alone")
        XCTAssertTrue(rig.seams.signals.allSatisfy { $0.destination == rig.claimer }, "status signals go to the claimer only")
        XCTAssertEqual(rig.evaluation.verifier.failedMatches(of: rig.uid), 0, "a match resets the lockout apps share")
        XCTAssertEqual(rig.evaluation.reader.opens, 1)
        XCTAssertFalse(rig.evaluation.reader.isOpen, "the reader is given back with the final status")
        XCTAssertTrue(rig.evaluation.queueIsFree)
        XCTAssertEqual(rig.seams.changedUsers, [rig.uid])
        // The operation stays current until VerifyStop.
        await rig.expect(Self.failed("AlreadyInUse"), "VerifyStart", "any")
        await rig.expect(Self.ok, "VerifyStop")
        XCTAssertNil(rig.device.operation)
    }

    @ServiceActor
    func testNoMatchesCountInTheLockoutLAContextUsesAndThenVerifyIsRefused() async throws {
        let rig = try FprintdRig()
        rig.seams.enroll(.rightIndex, for: rig.uid)
        await rig.call("Claim", "")
        for _ in 0..<LockoutStore.limit {
            rig.evaluation.reader.script = [.noMatch]
            await rig.expect(Self.ok, "VerifyStart", "any")
            await rig.settle()
            XCTAssertEqual(rig.statuses.last, "VerifyStatus verify-no-match done")
            await rig.expect(Self.ok, "VerifyStop")
        }
        XCTAssertTrue(rig.evaluation.verifier.isLockedOut(rig.uid), "the Evaluator's lockout: every app sees it")
        let refused = await rig.call("VerifyStart", "any")
        XCTAssertEqual(refused.0, Self.failed("PermissionDenied"))
        XCTAssertTrue(refused.1.hasPrefix("\(FprintdRefusal.lockedOut):"), refused.1)
        XCTAssertEqual(rig.evaluation.reader.opens, LockoutStore.limit, "a refused VerifyStart never opens the reader")
    }

    @ServiceActor
    func testVerifyStartIsRefusedByTheLAContextRulesInFprintdsWords() async throws {
        let rig = try FprintdRig()
        rig.seams.enroll(.rightIndex, for: rig.uid)
        await rig.call("Claim", "")
        func refusal(_ finger: String = "any") async -> String {
            let (answer, message) = await rig.call("VerifyStart", finger)
            guard answer == Self.failed("PermissionDenied") else { return "\(answer)" }
            return String(message.prefix { $0 != ":" })
        }
        rig.seams.presence = .remote
        let refused0 = await refusal()
        XCTAssertEqual(refused0, FprintdRefusal.notAtTheReader)
        rig.seams.presence = .local
        rig.seams.reachable = false
        let refused1 = await refusal()
        XCTAssertEqual(refused1, FprintdRefusal.readerUnavailable)
        rig.seams.reachable = true
        rig.seams.passwordNeededError = ServiceError(.la(.biometryLockout), "the password is needed after a restart")
        let refused2 = await refusal()
        XCTAssertEqual(refused2, FprintdRefusal.passwordRequired)
        rig.seams.passwordNeededError = nil
        await rig.expect(Self.failed("NoEnrolledPrints"), "VerifyStart", "left-thumb")
        XCTAssertEqual(rig.evaluation.reader.opens, 0, "no refusal touches the reader")
        XCTAssertNil(rig.device.operation)
    }

    /// fprintd 1.94's VerifyStart (src/device.c finger_name_to_fp_finger,
    /// fprint_device_verify_start): a name that is no finger's ("", garbage)
    /// is "any", not an error; a finger's name that is not enrolled is
    /// NoEnrolledPrints "No such print N" (libfprint's finger number). On
    /// main an unknown name was InvalidFingername.
    @ServiceActor
    func testAnUnknownFingerNameIsAnyAndAFingerNotEnrolledIsNoEnrolledPrints() async throws {
        let rig = try FprintdRig()
        rig.seams.enroll(.rightIndex, for: rig.uid)
        rig.seams.enroll(.leftThumb, for: rig.uid)
        await rig.expect(Self.ok, "Claim", "")
        for name in ["some-garbage", "", "Right-Index-Finger"] {
            rig.evaluation.reader.script = [.match(0)]
            await rig.expect(Self.ok, "VerifyStart", name, note: "'\(name)' is any")
            await rig.settle()
            await rig.expect(Self.ok, "VerifyStop")
        }
        // A verify-only reader: the print the rotation is at (the finger that matched last), named.
        XCTAssertEqual(rig.evaluation.reader.galleries.map(\.first), [.rightIndex, .rightIndex, .rightIndex])
        XCTAssertEqual(
            rig.statuses,
            Array(repeating: ["VerifyFingerSelected right-index-finger", "VerifyStatus verify-match done"], count: 3).flatMap { $0 })
        let (answer, message) = await rig.call("VerifyStart", "right-little-finger")
        XCTAssertEqual(answer, Self.failed("NoEnrolledPrints"))
        XCTAssertEqual(message, "No such print 10", "fprintd's words: the finger's number")
        XCTAssertEqual(rig.evaluation.reader.scans, 3, "no scan for a finger not enrolled")
        XCTAssertNil(rig.device.operation)
    }

    /// fprintd 1.94 verifies a user's only print, even on a reader that
    /// identifies, and names its finger in VerifyFingerSelected; "any" with
    /// more prints there is identification, selected "any".
    @ServiceActor
    func testAnyWithOnePrintOnAReaderThatIdentifiesNamesItsFinger() async throws {
        let rig = try FprintdRig()
        rig.reader.supportsIdentify = true
        rig.seams.enroll(.rightIndex, for: rig.uid)
        await rig.expect(Self.ok, "Claim", "")
        rig.evaluation.reader.script = [.match(0)]
        await rig.expect(Self.ok, "VerifyStart", "any")
        await rig.settle()
        await rig.expect(Self.ok, "VerifyStop")
        rig.seams.enroll(.leftThumb, for: rig.uid)
        rig.evaluation.reader.script = [.match(0)]
        await rig.expect(Self.ok, "VerifyStart", "not-a-finger")
        await rig.settle()
        XCTAssertEqual(
            rig.statuses.filter { $0.hasPrefix("VerifyFingerSelected") },
            ["VerifyFingerSelected right-index-finger", "VerifyFingerSelected any"])
    }

    @ServiceActor
    func testAnyIdentifiesOnAReaderThatCanAndTakesTheFirstFingerOnOneThatCannot() async throws {
        let rig = try FprintdRig()
        rig.seams.enroll(.leftThumb, for: rig.uid)
        rig.seams.enroll(.rightIndex, for: rig.uid)
        await rig.call("Claim", "")
        rig.evaluation.reader.script = [.match(0)]
        await rig.call("VerifyStart", "any")
        await rig.settle()
        await rig.call("VerifyStop")
        rig.reader.supportsIdentify = true
        rig.evaluation.reader.script = [.match(1)]
        await rig.call("VerifyStart", "any")
        await rig.settle()
        XCTAssertEqual(
            rig.statuses,
            [
                "VerifyFingerSelected left-thumb", "VerifyStatus verify-match done",
                "VerifyFingerSelected any", "VerifyStatus verify-match done",
            ])
        // A reader that cannot identify compares with the gallery's first
        // print only (fp_device_verify); one that can, with all of them.
        XCTAssertEqual(rig.evaluation.reader.galleries.first?.first, .leftThumb)
        XCTAssertEqual(rig.evaluation.reader.galleries.last, [.leftThumb, .rightIndex])
    }

    /// A verify of rig's user waiting for a finger; `change` happens while it
    /// waits, then the reader asks for the scan to be repeated (a match
    /// would come next). Returns the rig once the verify ended.
    @ServiceActor
    private func verifyChanged(_ finger: String, _ change: (FprintdRig) throws -> Void) async throws -> FprintdRig {
        let rig = try FprintdRig()
        rig.seams.enroll(.rightIndex, for: rig.uid)
        await rig.call("Claim", "")
        await rig.expect(Self.ok, "VerifyStart", finger)
        try await rig.evaluation.waitUntil { rig.evaluation.reader.waiting }
        try change(rig)
        rig.evaluation.reader.script = [.retry(.tooShort), .match(0)]
        await rig.settle()
        return rig
    }

    /// Issue 30 item 5: the checks an LAContext scan makes before every
    /// scan, made before every fprintd scan too. A user locked out while
    /// their verify waited for a finger gets no further scan: on 1c36356 the
    /// next scan ran, and its match lifted the lockout already in force.
    @ServiceActor
    func testAUserLockedOutDuringAVerifyGetsNoFurtherScan() async throws {
        let rig = try await verifyChanged("any") { rig in
            for _ in 0..<LockoutStore.limit { _ = try rig.evaluation.verifier.scanDidNotMatch(rig.uid) }
        }
        XCTAssertEqual(
            rig.statuses,
            ["VerifyFingerSelected right-index-finger", "VerifyStatus verify-swipe-too-short",
             "VerifyStatus verify-unknown-error done"])
        XCTAssertEqual(rig.evaluation.reader.scans, 1, "no scan after the lockout")
        XCTAssertTrue(rig.evaluation.verifier.isLockedOut(rig.uid), "the lockout in force stays")
        await rig.expect(Self.ok, "VerifyStop")
    }

    /// A print deleted (here by another client) during a verify is not
    /// compared with again: the verify ends before the next scan.
    @ServiceActor
    func testAPrintDeletedDuringAVerifyIsNotScannedForAgain() async throws {
        let rig = try await verifyChanged("right-index-finger") { rig in rig.seams.stored[rig.uid] = [] }
        XCTAssertEqual(rig.statuses.last, "VerifyStatus verify-unknown-error done")
        XCTAssertEqual(rig.evaluation.reader.scans, 1, "no scan after the print went")
    }

    /// Issue 30 item 11: on a reader that cannot identify, "any" walks the
    /// user's prints as an LAContext evaluation does (the finger that
    /// matched last first, one step per judged no-match, across calls and
    /// across both interfaces), so a fourth enrolled finger is reached;
    /// fprintd itself always takes the first (docs/FPRINTD.md).
    @ServiceActor
    func testAnyOnAVerifyOnlyReaderFollowsTheSharedRotation() async throws {
        let rig = try FprintdRig()
        for finger in [FingerName.leftThumb, .leftIndex, .rightIndex, .rightThumb] { rig.seams.enroll(finger, for: rig.uid) }
        await rig.call("Claim", "")
        for _ in 0..<3 {
            rig.evaluation.reader.script = [.noMatch]
            await rig.expect(Self.ok, "VerifyStart", "any")
            await rig.settle()
            await rig.expect(Self.ok, "VerifyStop")
        }
        rig.evaluation.reader.script = [.match(0)]
        await rig.expect(Self.ok, "VerifyStart", "any")
        await rig.settle()
        // The print each scan was compared with: the gallery's first (fp_device_verify).
        XCTAssertEqual(rig.evaluation.reader.galleries.map(\.first), [.leftThumb, .leftIndex, .rightIndex, .rightThumb])
        XCTAssertEqual(rig.statuses.filter { $0.hasPrefix("VerifyFingerSelected") }.last, "VerifyFingerSelected right-thumb")
        XCTAssertEqual(rig.statuses.last, "VerifyStatus verify-match done")
        XCTAssertEqual(rig.evaluation.verifier.lastMatchedFinger(of: rig.uid), .rightThumb, "the next evaluation starts there")
    }

    @ServiceActor
    func testReleaseInTheMiddleOfAScanStopsItAndGivesTheReaderBack() async throws {
        let rig = try FprintdRig()
        rig.seams.enroll(.rightIndex, for: rig.uid)
        await rig.call("Claim", "")
        await rig.expect(Self.ok, "VerifyStart", "any")
        try await rig.evaluation.waitUntil { rig.evaluation.reader.waiting }
        XCTAssertTrue(rig.evaluation.reader.isOpen)
        await rig.expect(Self.ok, "Release", note: "Release waits for the scan to end")
        XCTAssertNil(rig.device.claim)
        XCTAssertNil(rig.device.operation)
        XCTAssertEqual(rig.evaluation.reader.cancelledScans, 1)
        await rig.settle()
        XCTAssertFalse(rig.evaluation.reader.isOpen)
        XCTAssertTrue(rig.evaluation.queueIsFree)
        // Stopped by its client in the middle of a scan: fprintd's final status, counted nowhere.
        XCTAssertEqual(
            rig.statuses, ["VerifyFingerSelected right-index-finger", "VerifyStatus verify-no-match done"],
            "a verify-only reader: the first finger; the final status before Release answers")
        XCTAssertEqual(rig.evaluation.verifier.failedMatches(of: rig.uid), 0, "nothing was judged")
    }

    @ServiceActor
    func testVerifyStopInTheMiddleOfAScanSendsTheFinalStatusBeforeItAnswers() async throws {
        let rig = try FprintdRig()
        rig.seams.enroll(.rightIndex, for: rig.uid)
        await rig.call("Claim", "")
        await rig.expect(Self.ok, "VerifyStart", "right-index-finger")
        try await rig.evaluation.waitUntil { rig.evaluation.reader.waiting }
        await rig.expect(Self.ok, "VerifyStop")
        XCTAssertEqual(rig.statuses.last, "VerifyStatus verify-no-match done", "sent before VerifyStop's reply")
        XCTAssertNil(rig.device.operation)
        XCTAssertEqual(rig.evaluation.verifier.failedMatches(of: rig.uid), 0, "a stopped scan counts nowhere")
        await rig.settle()
        // SIGTERM in the middle of a scan ends it as a Stop does.
        await rig.expect(Self.ok, "VerifyStart", "right-index-finger")
        try await rig.evaluation.waitUntil { rig.evaluation.reader.waiting }
        rig.device.stopAll()
        await rig.settle()
        XCTAssertEqual(rig.statuses.suffix(2), ["VerifyFingerSelected right-index-finger", "VerifyStatus verify-no-match done"])
    }

    @ServiceActor
    func testAReaderUnpluggedDuringAVerifyEndsItDisconnected() async throws {
        let rig = try FprintdRig()
        rig.seams.enroll(.rightIndex, for: rig.uid)
        await rig.call("Claim", "")
        rig.evaluation.reader.script = [.fail(FakeReader.removed)]
        await rig.call("VerifyStart", "any")
        await rig.settle()
        XCTAssertEqual(rig.statuses.last, "VerifyStatus verify-disconnected done")
        rig.device.readerGone()
        await rig.expect(Self.failed("Internal"), "VerifyStop", note: "the object of a gone reader answers nothing")
    }

    /// Issue 31 item 1: VerifyStart runs the one verify operation, so the
    /// reader-fairness rule holds on both interfaces. Waits for a finger
    /// that timed out on a warm reader, through fprintd's interface, cool the
    /// user down on both: on 7e74d12 fprintd's own scan loop knew no such
    /// rule, and a user could keep the warm reader waiting for ever there.
    @ServiceActor
    func testWaitsThatTimedOutOnAWarmReaderCoolTheUserDownOnBothInterfaces() async throws {
        let rig = try FprintdRig()
        rig.seams.enroll(.rightIndex, for: rig.uid)
        rig.evaluation.reader.warm = true
        await rig.call("Claim", "")
        for _ in 0..<2 {
            await rig.expect(Self.ok, "VerifyStart", "any")
            try await rig.evaluation.waitUntil { rig.evaluation.reader.waiting }
            rig.evaluation.clock.advance(by: 29)
            XCTAssertTrue(rig.evaluation.reader.waiting, "not before the scan timeout")
            rig.evaluation.clock.advance(by: 1)
            await rig.settle()
            XCTAssertEqual(rig.statuses.last, "VerifyStatus verify-unknown-error done")
            await rig.expect(Self.ok, "VerifyStop")
        }
        let (answer, message) = await rig.call("VerifyStart", "any")
        XCTAssertEqual(answer, Self.failed("PermissionDenied"))
        XCTAssertTrue(message.hasPrefix(FprintdRefusal.readerUnavailable) && message.contains("cooling down"), message)
        XCTAssertNil(rig.device.operation, "nothing left behind")
        XCTAssertEqual(rig.evaluation.reader.opens, 2, "refused before the reader")
        // The rule an app's evaluation of this user meets before its plan (Evaluator.evaluate).
        do throws(ServiceError) {
            try rig.evaluation.verifier.refuseWhileCooling(rig.uid)
            XCTFail("an app's evaluation would not be held back")
        } catch {
            XCTAssertEqual(error.kind, .readerCoolingDown)
        }
    }

    @ServiceActor
    func testAStartWhileAnotherProgramHoldsTheReaderFailsAndLeavesNothingBehind() async throws {
        let rig = try FprintdRig()
        rig.seams.enroll(.rightIndex, for: rig.uid)
        await rig.call("Claim", "")
        rig.seams.openError = ServiceError(.readerInUse, "the fingerprint reader is in use by another program (fprintd); try again when it is free")
        let (answer, message) = await rig.call("VerifyStart", "any")
        XCTAssertEqual(answer, Self.failed("Internal"))
        XCTAssertTrue(message.contains("in use by another program"), message)
        XCTAssertNil(rig.device.operation)
        XCTAssertTrue(rig.evaluation.queueIsFree, "the queue's turn is given back")
        XCTAssertEqual(rig.statuses, [])
    }

    /// A touch belongs to whoever is in front when the finger is read
    /// (PresenceAtScanTests): pam_fprintd's VerifyStart from a session that
    /// was switched away from gets no match from the next touch.
    /// A claimed device verifying "any" for the claimer, who then leaves the front.
    @ServiceActor
    private static func verifyingWhenTheClaimerLeavesTheFront() async throws -> FprintdRig {
        let rig = try FprintdRig()
        rig.seams.enroll(.rightIndex, for: rig.uid)
        await rig.call("Claim", "")
        await rig.expect(Self.ok, "VerifyStart", "any")
        try await rig.evaluation.waitUntil { rig.evaluation.reader.waiting }
        rig.evaluation.environment.presence = .inactive
        return rig
    }

    @ServiceActor
    func testAMatchReadAfterTheClaimerLeftTheFrontIsNoMatchOfTheirs() async throws {
        let rig = try await Self.verifyingWhenTheClaimerLeavesTheFront()
        rig.evaluation.reader.script = [.match(0)]
        await rig.settle()
        XCTAssertEqual(
            rig.statuses, ["VerifyFingerSelected right-index-finger", "VerifyStatus verify-unknown-error done"],
            "the scan was thrown away: an error status, not a match")
        XCTAssertEqual(rig.evaluation.verifier.failedMatches(of: rig.uid), 0, "nor a failure of the user's")
        XCTAssertFalse(rig.evaluation.reader.isOpen)
        await rig.expect(Self.ok, "VerifyStop")
    }

    @ServiceActor
    func testASwitchEndsAVerifyOfAClaimerNoLongerInFrontBeforeAnyTouch() async throws {
        let rig = try await Self.verifyingWhenTheClaimerLeavesTheFront()
        await rig.evaluation.verifier.frontChanged()
        await rig.settle()
        XCTAssertEqual(rig.evaluation.reader.cancelledScans, 1, "the scan waiting for a finger was ended")
        XCTAssertEqual(rig.statuses.last, "VerifyStatus verify-unknown-error done")
        XCTAssertFalse(rig.evaluation.reader.isOpen)
        XCTAssertTrue(rig.evaluation.queueIsFree)
        // A new VerifyStart from behind the switch is refused in fprintd's words.
        await rig.expect(Self.ok, "VerifyStop")
        rig.seams.presence = .inactive
        let (answer, message) = await rig.call("VerifyStart", "any")
        XCTAssertEqual(answer, Self.failed("PermissionDenied"))
        XCTAssertTrue(message.hasPrefix(FprintdRefusal.notAtTheReader), message)
    }

    // MARK: Enroll

    @ServiceActor
    func testAnEnrollReportsEachStageAndCompletes() async throws {
        let rig = try FprintdRig()
        await rig.call("Claim", "")
        rig.seams.enrollSteps = [.stage(1), .retry(.centerFinger), .stage(2), .stage(3), .stage(4), .stage(5)]
        await rig.expect(Self.ok, "EnrollStart", "right-index-finger")
        await rig.settle()
        XCTAssertEqual(
            rig.statuses,
            [
                "EnrollStatus enroll-stage-passed", "EnrollStatus enroll-finger-not-centered", "EnrollStatus enroll-stage-passed",
                "EnrollStatus enroll-stage-passed", "EnrollStatus enroll-stage-passed", "EnrollStatus enroll-completed done",
            ])
        XCTAssertEqual(rig.seams.saved.map(\.0), [.rightIndex])
        XCTAssertEqual(rig.seams.saved.map(\.1), ["root"])
        XCTAssertEqual(rig.seams.changedUsers, [rig.uid])
        XCTAssertFalse(rig.evaluation.reader.isOpen)
        await rig.expect(Self.ok, "EnrollStop")
        await rig.expect(.reply([.strings(["right-index-finger"])]), "ListEnrolledFingers", "")
    }

    @ServiceActor
    func testOnAReaderThatIdentifiesEnrollFirstChecksForADuplicate() async throws {
        let rig = try FprintdRig()
        rig.reader.supportsIdentify = true
        rig.seams.enroll(.leftThumb, for: 1234)  // someone else's print on this reader
        await rig.call("Claim", "")
        XCTAssertEqual(rig.device.propertyValues[FprintdBus.Property.numEnrollStages], .int32(6), "the check is a stage")
        rig.evaluation.reader.script = [.match(0)]
        await rig.call("EnrollStart", "right-index-finger")
        await rig.settle()
        XCTAssertEqual(rig.statuses, ["EnrollStatus enroll-duplicate done"])
        XCTAssertTrue(rig.seams.saved.isEmpty)
        await rig.call("EnrollStop")

        rig.evaluation.reader.script = [.noMatch]
        rig.seams.enrollSteps = [.stage(1), .stage(2), .stage(3), .stage(4), .stage(5)]
        await rig.call("EnrollStart", "right-index-finger")
        await rig.settle()
        XCTAssertEqual(rig.statuses.dropFirst().first, "EnrollStatus enroll-stage-passed", "the check passed: a stage")
        XCTAssertEqual(rig.statuses.last, "EnrollStatus enroll-completed done")
    }

    /// Issue 30 item 4: the check is a match oracle over every account's
    /// prints. A user (uid 65534 here) gets `DuplicateCheckBudget.perDay`
    /// checks a day, each hit on another account's print is a failed match
    /// toward their own lockout, and the next EnrollStart is refused before
    /// the reader scans anything.
    @ServiceActor
    func testTheDuplicateCheckIsBoundedPerUidAndAHitOnAnotherAccountCounts() async throws {
        let rig = try FprintdRig()
        let nobody: UInt32 = 65534
        rig.router.callers.uids = [rig.claimer: nobody, rig.other: nobody]
        rig.reader.supportsIdentify = true
        rig.seams.enroll(.leftThumb, for: 1234)  // someone else's print on this reader
        await rig.expect(Self.ok, "Claim", "")
        for attempt in 1...DuplicateCheckBudget.perDay {
            rig.evaluation.reader.script = [.match(0)]
            await rig.expect(Self.ok, "EnrollStart", "right-index-finger", note: "attempt \(attempt)")
            await rig.settle()
            await rig.call("EnrollStop")
            XCTAssertEqual(rig.statuses.last, "EnrollStatus enroll-duplicate done")
        }
        XCTAssertEqual(rig.evaluation.verifier.failedMatches(of: nobody), DuplicateCheckBudget.perDay,
                       "each guess that came true counts for the one who guessed")
        XCTAssertTrue(rig.evaluation.verifier.isLockedOut(nobody))
        XCTAssertEqual(rig.evaluation.verifier.failedMatches(of: 1234), 0, "nothing for the account guessed at")
        let statuses = rig.statuses.count
        rig.evaluation.reader.script = [.match(0)]
        await rig.expect(.error(DBusError.Name.limitsExceeded.rawValue), "EnrollStart", "right-index-finger")
        await rig.settle()
        XCTAssertEqual(rig.statuses.count, statuses, "no scan past the budget")
        XCTAssertEqual(rig.evaluation.reader.script.count, 1, "the reader was not touched")
    }

    /// Finding one's own print is no guess: nothing counts.
    @ServiceActor
    func testADuplicateOfOnesOwnPrintCountsNothing() async throws {
        let rig = try FprintdRig()
        let nobody: UInt32 = 65534
        rig.router.callers.uids = [rig.claimer: nobody, rig.other: nobody]
        rig.reader.supportsIdentify = true
        rig.seams.enroll(.leftThumb, for: nobody)
        await rig.expect(Self.ok, "Claim", "")
        rig.evaluation.reader.script = [.match(0)]
        await rig.expect(Self.ok, "EnrollStart", "right-index-finger")
        await rig.settle()
        XCTAssertEqual(rig.statuses.last, "EnrollStatus enroll-duplicate done")
        XCTAssertEqual(rig.evaluation.verifier.failedMatches(of: nobody), 0)
        XCTAssertEqual(rig.seams.duplicateChecks.remaining(for: nobody), DuplicateCheckBudget.perDay - 1)
    }

    @ServiceActor
    func testEnrollingAFingerAgainFreesItsSlotFirstAndAFullReaderSaysSo() async throws {
        let rig = try FprintdRig()
        rig.reader.storesPrints = true
        rig.seams.enroll(.rightIndex, for: rig.uid)
        await rig.call("Claim", "")
        rig.seams.enrollSteps = [.stage(1), .fail(FakeFprintdSeams.full)]
        await rig.expect(Self.ok, "EnrollStart", "right-index-finger")
        await rig.settle()
        XCTAssertEqual(rig.seams.chipDeletes, 1, "the old print's slot is freed before the new enrollment")
        XCTAssertTrue(rig.seams.prints(of: rig.uid, on: rig.reader.identity).isEmpty)
        XCTAssertEqual(rig.statuses, ["EnrollStatus enroll-stage-passed", "EnrollStatus enroll-data-full done"])
    }

    @ServiceActor
    func testEnrollStopInTheMiddleEndsItFailed() async throws {
        let rig = try FprintdRig()
        await rig.call("Claim", "")
        rig.seams.enrollSteps = [.stage(1), .wait]
        await rig.call("EnrollStart", "left-index-finger")
        try await rig.evaluation.waitUntil { rig.statuses.count == 1 }
        await rig.expect(Self.ok, "EnrollStop")
        await rig.settle()
        XCTAssertEqual(rig.statuses, ["EnrollStatus enroll-stage-passed", "EnrollStatus enroll-failed done"])
        XCTAssertTrue(rig.seams.saved.isEmpty)
        XCTAssertTrue(rig.evaluation.queueIsFree)
    }

    // MARK: libfprint's errors in fprintd's statuses

    /// fprintd 1.94.5's verify_result_to_name and enroll_result_to_name
    /// (src/device.c), error by error as fprintd 1.94.5's own tests list them
    /// (tests/fprintd.py, test_verify_error_*, test_enroll_error_*): PROTO,
    /// REMOVED and TOO_HOT are "disconnected", DATA_FULL ends an enroll with
    /// enroll-data-full and DATA_DUPLICATE with enroll-duplicate,
    /// DATA_NOT_FOUND a verify with verify-no-match (judged by no reader:
    /// counted nowhere), every other error is "unknown-error". fprintd 1.94.2
    /// (Debian 12) said unknown-error for REMOVED, TOO_HOT and DATA_DUPLICATE
    /// (docs/FPRINTD.md). Before issue 38 TOO_HOT was unknown-error here too.
    @ServiceActor
    func testEveryLibfprintErrorEndsAVerifyAndAnEnrollWithFprintdsStatus() async throws {
        let verify: [FprintDeviceError: FprintdBus.VerifyResult] = [
            .general: .unknownError, .notSupported: .unknownError, .notOpen: .unknownError, .alreadyOpen: .unknownError,
            .busy: .unknownError, .proto: .disconnected, .dataInvalid: .unknownError, .dataNotFound: .noMatch,
            .dataFull: .unknownError, .dataDuplicate: .unknownError, .removed: .disconnected, .tooHot: .disconnected,
        ]
        let enroll: [FprintDeviceError: FprintdBus.EnrollResult] = [
            .general: .unknownError, .notSupported: .unknownError, .notOpen: .unknownError, .alreadyOpen: .unknownError,
            .busy: .unknownError, .proto: .disconnected, .dataInvalid: .unknownError, .dataNotFound: .unknownError,
            .dataFull: .dataFull, .dataDuplicate: .duplicate, .removed: .disconnected, .tooHot: .disconnected,
        ]
        XCTAssertEqual(Set(verify.keys), Set(FprintDeviceError.allCases))
        XCTAssertEqual(Set(enroll.keys), Set(FprintDeviceError.allCases))
        for error in FprintDeviceError.allCases {
            let rig = try FprintdRig()
            rig.seams.enroll(.rightIndex, for: rig.uid)
            await rig.expect(Self.ok, "Claim", "")
            rig.evaluation.reader.script = [.fail(error.error("\(error)"))]
            await rig.expect(Self.ok, "VerifyStart", "any")
            await rig.settle()
            XCTAssertEqual(rig.statuses.last, "VerifyStatus \(verify[error]!.rawValue) done", "\(error)")
            XCTAssertEqual(rig.evaluation.verifier.failedMatches(of: rig.uid), 0, "\(error): no reader judged a scan")
            await rig.expect(Self.ok, "VerifyStop")
            rig.seams.enrollSteps = [.stage(1), .fail(error.error("\(error)"))]
            await rig.expect(Self.ok, "EnrollStart", "left-thumb")
            await rig.settle()
            let final = "EnrollStatus \(enroll[error]!.rawValue) done"
            XCTAssertEqual(rig.statuses.suffix(2), ["EnrollStatus enroll-stage-passed", final], "\(error)")
            await rig.expect(Self.ok, "EnrollStop")
        }
    }

    /// fprintd's duplicate check before an enrollment on a reader that
    /// identifies takes DATA_NOT_FOUND as "no duplicate": the stage passes
    /// (src/device.c enroll_identify_cb; tests/fprintd.py
    /// test_enroll_error_data_not_found). The one enroll operation does this
    /// (Enrollment.refuseDuplicate); here it is held to fprintd's statuses.
    @ServiceActor
    func testADuplicateCheckThatFindsNothingOnTheChipPassesItsStage() async throws {
        let rig = try FprintdRig()
        rig.reader.supportsIdentify = true
        rig.seams.enroll(.leftThumb, for: 1234)
        await rig.expect(Self.ok, "Claim", "")
        rig.evaluation.reader.script = [.fail(FprintDeviceError.dataNotFound.error("Print was not found on the device"))]
        rig.seams.enrollSteps = [.stage(1), .stage(2), .stage(3), .stage(4), .stage(5)]
        await rig.expect(Self.ok, "EnrollStart", "right-index-finger")
        await rig.settle()
        XCTAssertEqual(rig.statuses.first, "EnrollStatus enroll-stage-passed")
        XCTAssertEqual(rig.statuses.last, "EnrollStatus enroll-completed done")
        XCTAssertEqual(rig.seams.saved.map(\.0), [.rightIndex])
    }

    // MARK: Deleting

    @ServiceActor
    func testDeletesOnAChipThatCannotBeReachedKeepThePrint() async throws {
        let rig = try FprintdRig()
        rig.reader.storesPrints = true
        rig.seams.enroll(.rightIndex, for: rig.uid)
        await rig.call("Claim", "")
        rig.seams.chipError = GLibError(domain: 12, code: 0, message: "the chip did not answer")
        await rig.expect(Self.failed("PrintsNotDeletedFromDevice"), "DeleteEnrolledFinger", "right-index-finger")
        rig.seams.chipError = nil
        rig.seams.openError = ServiceError(.readerInUse, "the fingerprint reader is in use by another program (another)")
        await rig.expect(Self.failed("PrintsNotDeletedFromDevice"), "DeleteEnrolledFingers2")
        XCTAssertEqual(rig.seams.prints(of: rig.uid, on: rig.reader.identity).count, 1, "a file never goes while its slot stays")
        rig.seams.openError = nil
        await rig.expect(Self.failed("NoEnrolledPrints"), "DeleteEnrolledFinger", "left-thumb")
        await rig.expect(Self.ok, "DeleteEnrolledFingers2")
        XCTAssertTrue(rig.seams.prints(of: rig.uid, on: rig.reader.identity).isEmpty)
        XCTAssertEqual(rig.seams.changedUsers, [rig.uid])
        XCTAssertFalse(rig.evaluation.reader.isOpen)
    }

    /// fprintd's delete_enrolled_fingers (src/device.c): a print whose file
    /// cannot be removed is PrintsNotDeleted, "Impossible to delete
    /// fingerprint reference …", after the user's other prints have gone
    /// (tests/fprintd.py: the not-writable print stays, the other is
    /// deleted). On main the first failure stopped the delete, with
    /// another text.
    @ServiceActor
    func testAPrintThatCannotBeDeletedIsPrintsNotDeletedAndTheOthersGo() async throws {
        let rig = try FprintdRig()
        rig.seams.enroll(.rightIndex, for: rig.uid)
        rig.seams.enroll(.leftThumb, for: rig.uid)
        rig.seams.unremovable = ["\(rig.uid)/right-index-finger"]
        await rig.expect(Self.ok, "Claim", "")
        let (answer, message) = await rig.call("DeleteEnrolledFingers2")
        XCTAssertEqual(answer, Self.failed("PrintsNotDeleted"))
        XCTAssertTrue(message.hasPrefix("Impossible to delete fingerprint reference got error: "), message)
        XCTAssertEqual(rig.seams.prints(of: rig.uid, on: rig.reader.identity).map(\.finger), [.rightIndex], "the others went")
        XCTAssertEqual(rig.seams.changedUsers, [rig.uid])
        await rig.expect(Self.failed("PrintsNotDeleted"), "DeleteEnrolledFinger", "right-index-finger")
        rig.seams.unremovable = []
        await rig.expect(Self.ok, "DeleteEnrolledFinger", "right-index-finger")
        XCTAssertTrue(rig.seams.prints(of: rig.uid, on: rig.reader.identity).isEmpty)
    }

    // MARK: Properties

    @ServiceActor
    func testFingerStatusChangesArePropertiesChanged() async throws {
        let rig = try FprintdRig()
        rig.reader.fingerStatus?(false, true)
        rig.reader.fingerStatus?(false, true)
        rig.reader.fingerStatus?(true, false)
        let changes = rig.seams.signals.filter { $0.member == "PropertiesChanged" }.map { $0.arguments[1] }
        XCTAssertEqual(
            changes,
            [
                .dictionary([FprintdBus.Property.fingerNeeded: .boolean(true)]),
                .dictionary([
                    FprintdBus.Property.fingerPresent: .boolean(true),
                    FprintdBus.Property.fingerNeeded: .boolean(false),
                ]),
            ])
        XCTAssertEqual(rig.device.propertyValues[FprintdBus.Property.fingerPresent], .boolean(true))
        XCTAssertEqual(rig.device.propertyValues[FprintdBus.Property.name], .string("Fake reader"))
    }
}
