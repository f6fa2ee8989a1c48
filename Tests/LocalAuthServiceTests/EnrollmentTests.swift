import DBusCore
@testable import LocalAuthService
import LocalAuthShared
import XCTest

/// The one enroll operation (Sources/LocalAuthService/Enrollment/Enrollment.swift)
/// that LocalAuth's Enroll and fprintd's EnrollStart both run, over the
/// fakes of fprintd's seams (a scripted reader session) and a fake call:
/// the rules both contracts now share by construction.
final class EnrollmentTests: XCTestCase {
    override func setUp() {
        super.setUp()
        _ = ServiceLoop.running
    }

    /// An enrollment as a front-end keeps it.
    @ServiceActor
    private final class Call: ReaderCall {
        let ticket = SensorQueue.Ticket(uid: 1000, purpose: .enrollment(sender: ":1.5"))
        let cancellable = Cancellable()
        var stopped: Interruption?
        var biometricInterruption: Interruption? { stopped }
        var hasEnded = false
        func stopBiometrics(_ reason: Interruption) {
            stopped = reason
            cancellable.cancel()
        }
    }

    @ServiceActor
    private final class Fixture {
        let evaluation: EvaluatorRig
        let seams: FakeFprintdSeams
        let call = Call()
        private(set) var saved = 0
        var saveError: ServiceError?
        private(set) var events: [Enrollment.Event] = []

        init() throws {
            evaluation = try EvaluatorRig()
            seams = FakeFprintdSeams(rig: evaluation)
        }

        func request(storesPrints: Bool = true, candidates: (gallery: [EnrolledPrint], own: Set<[UInt8]>)? = nil) -> Enrollment.Job {
            Enrollment.Job(
                uid: 1000, username: "alice", finger: .rightIndex, reader: evaluation.reader.identity,
                storesPrints: storesPrints, queueWait: 60, fingerWait: 30,
                duplicateCandidates: { candidates }, asker: 1000,
                save: { [self] _ throws(ServiceError) in
                    if let saveError { throw saveError }
                    saved += 1
                })
        }

        /// Runs one enrollment; nil: a print was kept. `event` sees each event too.
        func run(_ request: Enrollment.Job, event: @escaping @ServiceActor (Enrollment.Event) -> Void = { _ in }) async -> Enrollment.Failure? {
            do throws(Enrollment.Failure) {
                try await seams.enrollment.run(request, for: call) { [self] in
                    events.append($0)
                    event($0)
                }
                return nil
            } catch {
                return error
            }
        }
    }

    @ServiceActor
    func testEachStageIsToldAndThePrintIsKeptOnce() async throws {
        let fixture = try Fixture()
        fixture.seams.enrollSteps = (1...5).map { .stage($0) }
        let failure = await fixture.run(fixture.request())
        XCTAssertNil(failure)
        XCTAssertEqual(fixture.saved, 1)
        XCTAssertEqual(fixture.events, [.readerReady(stages: 5)] + (1...5).map { .stagePassed($0) })
        XCTAssertEqual(fixture.seams.chipDeletes, 0)
        XCTAssertTrue(fixture.evaluation.queueIsFree, "the reader's turn is given back")
        XCTAssertFalse(fixture.evaluation.reader.isOpen, "and the reader")
    }

    /// Nothing is kept for a call that ended while its last stage completed
    /// (the caller left, Release, SIGTERM), and the print it made leaves the
    /// chip: before the one operation, LocalAuth's Enroll left it there.
    @ServiceActor
    func testAPrintMadeForACallThatEndedIsNotKeptAndLeavesTheChip() async throws {
        let fixture = try Fixture()
        fixture.seams.enrollSteps = (1...5).map { .stage($0) }
        let call = fixture.call
        let failure = await fixture.run(fixture.request()) { event in
            if event == .stagePassed(5) { call.hasEnded = true }
        }
        guard case .interrupted? = failure else { return XCTFail("\(String(describing: failure))") }
        XCTAssertEqual(fixture.saved, 0)
        XCTAssertEqual(fixture.seams.chipDeletes, 1, "its slot on the chip is freed")
    }

    @ServiceActor
    func testAPrintThatCannotBeSavedLeavesTheChip() async throws {
        let fixture = try Fixture()
        fixture.seams.enrollSteps = (1...5).map { .stage($0) }
        fixture.saveError = ServiceError(.storageFailed, "disk full")
        let failure = await fixture.run(fixture.request())
        guard case .notSaved(let error)? = failure else { return XCTFail("\(String(describing: failure))") }
        XCTAssertEqual(error.kind, .storageFailed)
        XCTAssertEqual(fixture.seams.chipDeletes, 1)
        let plain = try Fixture()
        plain.seams.enrollSteps = (1...5).map { .stage($0) }
        plain.saveError = ServiceError(.storageFailed, "disk full")
        _ = await plain.run(plain.request(storesPrints: false))
        XCTAssertEqual(plain.seams.chipDeletes, 0, "a reader without a chip has no slot to free")
    }

    /// The duplicate check: a scan to repeat is repeated; a hit on another
    /// account's print is a guess that came true and counts in the asker's
    /// lockout; a hit on one's own counts nothing; no match goes on to enroll.
    @ServiceActor
    func testTheDuplicateCheckCountsOnlyAHitOnAnotherAccount() async throws {
        let mine = EnrolledPrint(finger: .leftThumb, source: .fprintd, stamp: [1], template: FakeTemplate())
        let theirs = EnrolledPrint(finger: .leftThumb, source: .fprintd, stamp: [2], template: FakeTemplate())
        let candidates = (gallery: [mine, theirs], own: Set([[UInt8(1)]]))

        let other = try Fixture()
        other.evaluation.reader.script = [.retry(.centerFinger), .match(1)]
        let failure = await other.run(other.request(candidates: candidates))
        guard case .duplicate? = failure else { return XCTFail("\(String(describing: failure))") }
        XCTAssertEqual(other.evaluation.reader.scans, 2, "the scan to repeat was repeated")
        XCTAssertEqual(other.events, [.readerReady(stages: 5), .retry(.centerFinger, stage: 0)])
        XCTAssertEqual(other.evaluation.verifier.failedMatches(of: 1000), 1, "another account's print: one failed match")
        XCTAssertEqual(other.saved, 0)

        let own = try Fixture()
        own.evaluation.reader.script = [.match(0)]
        _ = await own.run(own.request(candidates: candidates))
        XCTAssertEqual(own.evaluation.verifier.failedMatches(of: 1000), 0, "one's own print: nothing counted")

        let new = try Fixture()
        new.evaluation.reader.script = [.noMatch]
        new.seams.enrollSteps = (1...5).map { .stage($0) }
        let none = await new.run(new.request(candidates: candidates))
        XCTAssertNil(none)
        XCTAssertEqual(new.events.prefix(2), [.readerReady(stages: 5), .duplicateCheckPassed])
    }

    /// No finger in time ends the enrollment through the call (its front-end
    /// says why), and the reader and its turn are given back.
    @ServiceActor
    func testNoFingerInTimeEndsItThroughTheCall() async throws {
        let fixture = try Fixture()
        fixture.seams.enrollSteps = [.stage(1), .wait]
        var request = fixture.request()
        request = Enrollment.Job(
            uid: request.uid, username: request.username, finger: request.finger, reader: request.reader,
            storesPrints: false, queueWait: 60, fingerWait: 0.05, asker: 1000, save: request.save)
        let failure = await fixture.run(request)
        guard case .interrupted? = failure else { return XCTFail("\(String(describing: failure))") }
        XCTAssertEqual(fixture.call.stopped, .timedOut)
        XCTAssertTrue(fixture.evaluation.queueIsFree)
    }
}
