import DBusCore
import Foundation
@testable import LocalAuthService
import LocalAuthShared
import XCTest

/// Sleep and resume as one ordered state machine (issue 20, item 3), with
/// fakes for the readers and logind: milliseconds, no root, no rig. The rig
/// tests (EnvironmentTests) run the same cycles against python-dbusmock's logind.
final class SleepCycleTests: XCTestCase {
    override func setUp() {
        super.setUp()
        _ = ServiceLoop.running
    }

    // MARK: The pure cycle

    func testSleepEndsTheWorkClosesThenReleasesAndResumeTakesAgain() {
        var cycle = SleepCycle()
        XCTAssertTrue(cycle.offersReaders)
        XCTAssertEqual(cycle.handle(.prepareForSleep(true)), [.endReaderWork, .closeReaders])
        XCTAssertFalse(cycle.offersReaders, "no reader while the close runs")
        XCTAssertEqual(cycle.handle(.readersClosed), [.releaseInhibitor], "released only once every reader is closed")
        XCTAssertEqual(cycle.phase, .asleep)
        XCTAssertEqual(cycle.handle(.prepareForSleep(true)), [], "a repeated signal changes nothing")
        XCTAssertEqual(cycle.handle(.prepareForSleep(false)), [.takeInhibitor, .offerReaders])
        XCTAssertTrue(cycle.offersReaders)
        XCTAssertEqual(cycle.handle(.prepareForSleep(false)), [])
    }

    func testAResumeDuringTheCloseKeepsTheInhibitorAndOffersReadersOnlyOnceClosed() {
        var cycle = SleepCycle()
        _ = cycle.handle(.prepareForSleep(true))
        XCTAssertEqual(cycle.handle(.prepareForSleep(false)), [], "nothing may reopen while the close runs")
        XCTAssertFalse(cycle.offersReaders)
        let after = cycle.handle(.readersClosed)
        XCTAssertFalse(after.contains(.releaseInhibitor), "the inhibitor is kept: the system is awake")
        XCTAssertEqual(after, [.takeInhibitor, .offerReaders])
        XCTAssertEqual(cycle.phase, .awake)
    }

    func testSleepAgainDuringTheCloseReleasesOnceClosed() {
        var cycle = SleepCycle()
        _ = cycle.handle(.prepareForSleep(true))
        _ = cycle.handle(.prepareForSleep(false))
        XCTAssertEqual(cycle.handle(.prepareForSleep(true)), [])
        XCTAssertEqual(cycle.handle(.readersClosed), [.releaseInhibitor])
        XCTAssertEqual(cycle.phase, .asleep)
    }

    // MARK: The coordinator, with fakes

    @ServiceActor
    func testTheCoordinatorRunsEachActionAfterThePreviousOneEnded() async throws {
        let seams = FakeSeams()
        let coordinator = SleepCoordinator(seams: seams) { body in Task { @ServiceActor in await body() } }
        coordinator.prepareForSleep(true)
        XCTAssertEqual(seams.events, ["end"], "every operation ends at the signal, before any await")
        try await seams.waitUntil { seams.events == ["end", "close-started"] }
        // The close still runs: the resume that fails the suspend arrives now.
        coordinator.prepareForSleep(false)
        XCTAssertFalse(coordinator.offersReaders, "not offered while closing")
        seams.finishClose()
        try await seams.waitUntil { seams.events.last == "offer" }
        XCTAssertEqual(seams.events, ["end", "close-started", "close-ended", "take", "offer"])
        XCTAssertTrue(seams.inhibitorHeld, "never left without an inhibitor")
        XCTAssertTrue(coordinator.offersReaders)

        // A full cycle: release after the close, take again on resume.
        coordinator.prepareForSleep(true)
        try await seams.waitUntil { seams.events.last == "close-started" }
        seams.finishClose()
        try await seams.waitUntil { seams.events.last == "release" }
        XCTAssertFalse(seams.inhibitorHeld)
        coordinator.prepareForSleep(false)
        try await seams.waitUntil { seams.events.last == "offer" }
        XCTAssertEqual(Array(seams.events.suffix(6)), ["end", "close-started", "close-ended", "release", "take", "offer"])
        XCTAssertTrue(seams.inhibitorHeld)
    }

    // MARK: The calls sleep ends through their records

    /// The rows whose answer waits for a scan, said by the tables
    /// (`MethodSpec.scans`): the five of org.example.LocalAuth that the
    /// registry once listed by name, and none of fprintd's (its Starts answer
    /// before their scans; their operations end through the reader queue).
    func testTheTablesSayWhichCallsScan() {
        let scanning = Set(LocalAuthContract.methods.filter { $0.value.scans }.keys)
        let expected: Set<String> = [
            LocalAuthBus.Method.evaluatePolicy, LocalAuthBus.Method.enroll, LocalAuthBus.Method.enrollWithOptions,
            LocalAuthBus.Method.verifyUser, LocalAuthRightsBus.Method.authorizeRight,
        ]
        XCTAssertEqual(scanning, expected)
        XCTAssertEqual(FprintdDevice.contract.methods.filter { $0.value.scans }.keys.sorted(), [])
        XCTAssertEqual(FprintdServer.contract.methods.filter { $0.value.scans }.keys.sorted(), [])
    }

    func testSleepEndsTheCallsThatScanAndNoOther() async { await Self.checkSleepEndsTheCallsThatScanAndNoOther() }

    @ServiceActor
    private static func checkSleepEndsTheCallsThatScanAndNoOther() {
        let registry = CallRegistry()
        let scanning = CallRecord(sender: ":1.1", requestID: nil, errors: .localAuth, scans: true)
        let other = CallRecord(sender: ":1.1", requestID: nil, errors: .fprintd)
        XCTAssertNoThrow(try registry.register(scanning))
        XCTAssertNoThrow(try registry.register(other))
        registry.interruptReaderWork(.systemSleeping)
        XCTAssertThrowsError(try scanning.checkNotEnded()) { XCTAssertEqual(($0 as? ServiceError)?.kind, .la(.systemCancel)) }
        XCTAssertNoThrow(try other.checkNotEnded(), "a call that scans nothing ends by its own path")
    }

    // MARK: The reader queue at sleep and under the lid

    @ServiceActor
    func testSleepEndsTheHolderAndEveryWaiterWhateverTheirCallAndRefusesNewOnes() async throws {
        let queue = SensorQueue()
        var ended: [String] = []
        func ticket(_ name: String, uid: UInt32, reader: String) -> SensorQueue.Ticket {
            let ticket = SensorQueue.Ticket(uid: uid, purpose: .evaluation)
            ticket.reader = Readers.Identity(driver: reader, deviceID: "0")
            ticket.interrupt = { reason in ended.append("\(name): \(reason)") }
            return ticket
        }
        // A VerifyUser scan holds the built-in reader; an AuthorizeRight waits.
        let verifyUser = ticket("verify-user", uid: 0, reader: "builtin")
        let authorizeRight = ticket("authorize-right", uid: 1000, reader: "external")
        let holding = await queue.acquire(verifyUser)
        XCTAssertTrue(holding)
        let waiting = Task { @ServiceActor in await queue.acquire(authorizeRight) }
        try await Task.sleep(for: .milliseconds(10))
        XCTAssertEqual(queue.waitingCount, 1)

        // The lid ends only the built-in reader's operation.
        queue.interrupt(on: [Readers.Identity(driver: "builtin", deviceID: "0")], .lidClosed)
        XCTAssertEqual(ended, ["verify-user: lidClosed"])
        XCTAssertEqual(queue.waitingCount, 1)

        queue.closeForSleep(.systemSleeping)
        XCTAssertEqual(Set(ended.dropFirst()), ["verify-user: systemSleeping", "authorize-right: systemSleeping"])
        let gotIt = await waiting.value
        XCTAssertFalse(gotIt, "a waiter never gets the reader once sleep began")
        queue.release()

        let late = ticket("late", uid: 1001, reader: "builtin")
        let lateGot = await queue.acquire(late)
        XCTAssertFalse(lateGot, "nothing starts between PrepareForSleep(true) and the readers offered again")
        XCTAssertEqual(ended.last, "late: systemSleeping")
        queue.reopen()
        let fresh = await queue.acquire(ticket("fresh", uid: 1001, reader: "builtin"))
        XCTAssertTrue(fresh)
    }
}

/// The readers and logind, as the sleep cycle sees them.
@ServiceActor
private final class FakeSeams: SleepSeams {
    var events: [String] = []
    var inhibitorHeld = true
    private var closing: CheckedContinuation<Void, Never>?

    func endReaderWork() { events.append("end") }

    func closeReaders() async {
        events.append("close-started")
        await withCheckedContinuation { closing = $0 }
        events.append("close-ended")
    }

    func finishClose() {
        closing?.resume()
        closing = nil
    }

    func releaseInhibitor() {
        inhibitorHeld = false
        events.append("release")
    }

    func takeInhibitor() async {
        await Task.yield()
        inhibitorHeld = true
        events.append("take")
    }

    func offerReaders() { events.append("offer") }

    /// Waits (at most a second) for the coordinator's task to get there.
    func waitUntil(_ condition: @ServiceActor () -> Bool) async throws {
        for _ in 0..<1000 {
            if condition() { return }
            try await Task.sleep(for: .milliseconds(1))
        }
        XCTFail("waited a second: \(events)")
    }
}
