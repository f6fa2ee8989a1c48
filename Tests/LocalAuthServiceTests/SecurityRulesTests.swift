import DBusCore
import Foundation
@testable import LocalAuthService
import LocalAuthShared
import XCTest

/// The security rules as logic, in milliseconds and without the rig: the
/// reader-fairness rule, the fair reader queue, the call limits, the lockout
/// counter that fails closed, and what an error may repeat of an argument.
/// (SecurityTests in EndToEndTests mounts the same attacks for real.)
final class SecurityRulesTests: XCTestCase {
    override func setUp() {
        super.setUp()
        _ = ServiceLoop.running
    }

    // MARK: Reader fairness

    func testOneMissedWaitCostsNothingAndAStreakBacksOffDoubling() {
        var rule = ReaderFairness()
        let start = ContinuousClock.now
        rule.waitTimedOut(1000, at: start, readerWarm: true)
        XCTAssertEqual(rule.remaining(1000, at: start, readerWarm: true), 0, "a person who missed the reader retries at once")
        rule.waitTimedOut(1000, at: start, readerWarm: true)
        XCTAssertEqual(rule.remaining(1000, at: start, readerWarm: true), 30)
        XCTAssertEqual(rule.remaining(1000, at: start + .seconds(10), readerWarm: true), 20, accuracy: 0.001)
        XCTAssertEqual(rule.remaining(1000, at: start, readerWarm: false), 0, "a cold reader needs no rest")
        XCTAssertEqual(rule.remaining(2000, at: start, readerWarm: true), 0, "only the user who kept it waiting")
        XCTAssertEqual(ReaderFairness.backoff(afterTimeouts: 3), 60)
        XCTAssertEqual(ReaderFairness.backoff(afterTimeouts: 4), 120)
        XCTAssertEqual(ReaderFairness.backoff(afterTimeouts: 5), 240)
        XCTAssertEqual(ReaderFairness.backoff(afterTimeouts: 50), 240)
    }

    func testAJudgedScanOrFiveQuietMinutesClearTheStreak() {
        var rule = ReaderFairness()
        let start = ContinuousClock.now
        rule.waitTimedOut(1000, at: start, readerWarm: true)
        rule.waitTimedOut(1000, at: start, readerWarm: true)
        rule.scanJudged(1000)
        XCTAssertEqual(rule.remaining(1000, at: start, readerWarm: true), 0)

        rule.waitTimedOut(1000, at: start, readerWarm: true)
        rule.waitTimedOut(1000, at: start + .seconds(1), readerWarm: true)
        XCTAssertGreaterThan(rule.remaining(1000, at: start + .seconds(2), readerWarm: true), 0)
        let later = start + .seconds(400)
        rule.waitTimedOut(1000, at: later, readerWarm: true)
        XCTAssertEqual(rule.remaining(1000, at: later, readerWarm: true), 0, "an old streak is forgotten")
    }

    func testTimeoutsOnAColdReaderDoNotCount() {
        var rule = ReaderFairness()
        let start = ContinuousClock.now
        for _ in 0..<5 { rule.waitTimedOut(1000, at: start, readerWarm: false) }
        XCTAssertEqual(rule.remaining(1000, at: start, readerWarm: true), 0)
    }

    // MARK: What an error repeats

    func testEchoedArgumentsAreCut() {
        XCTAssertEqual(ServiceErrors.echo("left-thumb"), "left-thumb")
        let huge = String(repeating: "é", count: 10_000)
        let echoed = ServiceErrors.echo(huge)
        XCTAssertLessThan(echoed.utf8.count, ServiceLimits.echoedArgumentBytes + 32)
        XCTAssertTrue(echoed.hasSuffix("(20000 bytes)"), echoed)
        XCTAssertTrue(echoed.hasPrefix("éé"), "cut on a character boundary: \(echoed)")
    }

    // MARK: Reader advice

    /// Each retry of the reader has its own advice, the same words during an
    /// evaluation and an enrollment (never the fallback of a missing name).
    func testEveryRetryHasItsAdviceInBothStatusSignals() {
        let evaluation = RetryKind.allCases.map(\.progress)
        XCTAssertEqual(Set(evaluation).count, RetryKind.allCases.count)
        for kind in RetryKind.allCases {
            XCTAssertEqual(kind.enrollProgress.rawValue, "enroll-" + kind.progress.rawValue)
        }
    }

    // MARK: Adding a credential asks every time

    /// Enrolling a finger adds a way into the account: polkit asks for the
    /// password every time (auth_self), never "kept" for minutes during
    /// which any program of the session could add a finger silently.
    func testEnrollingAsksForThePasswordEveryTime() throws {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        let policy = try String(contentsOf: url.appendingPathComponent("polkit/org.example.LocalAuth.policy"), encoding: .utf8)
        let enroll = try XCTUnwrap(policy.components(separatedBy: "<action id=\"org.example.LocalAuth.enroll\">").dropFirst().first)
            .components(separatedBy: "</action>")[0]
        XCTAssertTrue(enroll.contains("<allow_active>auth_self</allow_active>"), enroll)
        XCTAssertFalse(enroll.contains("_keep"), enroll)
    }

    // MARK: The fair reader queue

    func testTheReaderGoesToAnotherUserBeforeTheSameUserAgain() async { await Self.checkTheReaderGoesToAnotherUserBeforeTheSameUserAgain() }

    @ServiceActor
    private static func checkTheReaderGoesToAnotherUserBeforeTheSameUserAgain() async {
        let queue = SensorQueue()
        let order = Collected()
        let holder = SensorQueue.Ticket(uid: 1000, purpose: .evaluation)
        let held = await queue.acquire(holder)
        XCTAssertTrue(held)
        let tickets = [1000, 1000, 0].map { SensorQueue.Ticket(uid: $0, purpose: .evaluation) }
        var waiters: [Task<Void, Never>] = []
        for (index, ticket) in tickets.enumerated() {
            waiters.append(Task { @ServiceActor in
                if await queue.acquire(ticket) { order.values.append(ticket.uid) }
            })
            // In line in this order before the next one comes.
            while queue.waitingCount <= index { await Task.yield() }
        }
        for handedOn in 1...tickets.count {
            queue.release()
            while order.values.count < handedOn { await Task.yield() }
        }
        for waiter in waiters { await waiter.value }
        XCTAssertEqual(order.values, [0, 1000, 1000], "uid 0 waited behind two of uid 1000's calls, yet went first")
    }

    func testAWithdrawnTicketNeverGetsTheReader() async { await Self.checkAWithdrawnTicketNeverGetsTheReader() }

    @ServiceActor
    private static func checkAWithdrawnTicketNeverGetsTheReader() async {
        let queue = SensorQueue()
        let held = await queue.acquire(SensorQueue.Ticket(uid: 5, purpose: .evaluation))
        XCTAssertTrue(held)
        let ticket = SensorQueue.Ticket(uid: 6, purpose: .evaluation)
        let waiting = Task { @ServiceActor in await queue.acquire(ticket) }
        while queue.waitingCount == 0 { await Task.yield() }
        queue.withdraw(ticket)
        let acquired = await waiting.value
        XCTAssertFalse(acquired)
    }

    func testAnEnrollmentHoldingOrWaitingBlocksASecondOfTheSameCaller() async {
        await Self.checkAnEnrollmentHoldingOrWaitingBlocksASecondOfTheSameCaller()
    }

    @ServiceActor
    private static func checkAnEnrollmentHoldingOrWaitingBlocksASecondOfTheSameCaller() async {
        let queue = SensorQueue()
        XCTAssertFalse(queue.isEnrolling(":1.5"))
        let held = await queue.acquire(SensorQueue.Ticket(uid: 0, purpose: .enrollment(sender: ":1.5")))
        XCTAssertTrue(held)
        XCTAssertTrue(queue.isEnrolling(":1.5"), "holding the reader")
        XCTAssertFalse(queue.isEnrolling(":1.6"))
        let waiter = SensorQueue.Ticket(uid: 0, purpose: .enrollment(sender: ":1.6"))
        let waiting = Task { @ServiceActor in await queue.acquire(waiter) }
        while queue.waitingCount == 0 { await Task.yield() }
        XCTAssertTrue(queue.isEnrolling(":1.6"), "waiting in line")
        queue.release()
        let acquired = await waiting.value
        XCTAssertTrue(acquired)
        XCTAssertFalse(queue.isEnrolling(":1.5"), "released")
        queue.release()
        guard case .free = queue.state else { return XCTFail("the reader should be free") }
    }

    // MARK: Call limits

    func testCallsAreLimitedPerConnectionPerUserAndNotForRoot() async throws { try await Self.checkCallsAreLimitedPerConnectionPerUserAndNotForRoot() }

    @ServiceActor
    private static func checkCallsAreLimitedPerConnectionPerUserAndNotForRoot() throws {
        let registry = CallRegistry()
        for index in 0..<ServiceLimits.callsPerConnection {
            try registry.register(CallRecord(sender: ":1.5", requestID: "r\(index)", errors: .localAuth))
        }
        XCTAssertThrowsError(try registry.register(CallRecord(sender: ":1.5", requestID: nil, errors: .localAuth))) {
            XCTAssertEqual(($0 as? ServiceError)?.kind, .limitExceeded)
        }
        // One uid over several connections.
        var admitted = 0
        var refused = 0
        for connection in 0..<3 {
            for _ in 0..<ServiceLimits.callsPerConnection {
                let record = CallRecord(sender: ":2.\(connection)", requestID: nil, errors: .localAuth)
                try registry.register(record)
                do {
                    try registry.admit(record, uid: 1000)
                    admitted += 1
                } catch {
                    refused += 1
                    registry.remove(record)
                }
            }
        }
        XCTAssertEqual(admitted, ServiceLimits.callsPerUser)
        XCTAssertEqual(refused, 3 * ServiceLimits.callsPerConnection - ServiceLimits.callsPerUser)
        // Root is not limited per user (only per connection and in total).
        for connection in 0..<4 {
            let record = CallRecord(sender: ":3.\(connection)", requestID: nil, errors: .localAuth)
            try registry.register(record)
            XCTAssertNoThrow(try registry.admit(record, uid: 0))
        }
    }

    func testACallEndedBeforeItsEvaluationExistsInterruptsTheEvaluation() async throws { try await Self.checkACallEndedBeforeItsEvaluationExistsInterruptsTheEvaluation() }

    @ServiceActor
    private static func checkACallEndedBeforeItsEvaluationExistsInterruptsTheEvaluation() throws {
        let registry = CallRegistry()
        let record = CallRecord(sender: ":1.9", requestID: "early", errors: .localAuth)
        try registry.register(record)
        registry.end(requestID: "early", of: ":1.8", .appCancelled)
        XCTAssertNil(record.interruption, "another caller cannot end it")
        registry.end(requestID: "early", of: ":1.9", .appCancelled)
        XCTAssertThrowsError(try record.checkNotEnded())
        let evaluation = Evaluation(
            requestID: "early", caller: CallerRecord(sender: ":1.9", uid: 0, process: nil, securityLabel: nil), uid: 0,
            queue: SensorQueue())
        record.work = evaluation
        XCTAssertNotNil(evaluation.interruption, "an evaluation made for an ended call starts ended")
    }

    // MARK: The lockout counter fails closed

    func testALockoutCounterThatCannotBeReadMeansLockedOut() async throws { try await Self.checkALockoutCounterThatCannotBeReadMeansLockedOut() }

    @ServiceActor
    private static func checkALockoutCounterThatCannotBeReadMeansLockedOut() throws {
        let state = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: state) }
        let store = LockoutStore(stateDirectory: state)
        XCTAssertEqual(store.failures(of: 1), 0, "no file: no failures")
        try FileManager.default.createDirectory(atPath: state + "/lockout/2", withIntermediateDirectories: true)
        XCTAssertTrue(store.isLockedOut(2), "a directory where the count should be")
        try Data("many\n".utf8).write(to: URL(fileURLWithPath: state + "/lockout/3"))
        XCTAssertTrue(store.isLockedOut(3), "a damaged count")
    }

    func testAFailureThatCannotBeWrittenThrowsAndStillCounts() async throws { try await Self.checkAFailureThatCannotBeWrittenThrowsAndStillCounts() }

    @ServiceActor
    private static func checkAFailureThatCannotBeWrittenThrowsAndStillCounts() throws {
        let state = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: state) }
        let store = LockoutStore(stateDirectory: state)
        try FileManager.default.createDirectory(atPath: state + "/lockout/4.tmp-\(getpid())", withIntermediateDirectories: true)
        XCTAssertThrowsError(try store.recordFailure(4))
        XCTAssertEqual(store.failures(of: 4), 1, "the count in memory still rose")
    }

    /// A fresh directory; the caller removes it.
    private static func temporaryDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "localauth-rules-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}

@ServiceActor
private final class Collected {
    var values: [UInt32] = []
}
