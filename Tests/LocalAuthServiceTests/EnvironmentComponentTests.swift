import DBusCore
import Foundation
@testable import LocalAuthService
import LocalAuthShared
import XCTest

/// The Environment component (Sources/LocalAuthService/Environment/) with
/// fakes for its seams: who hears EnvironmentChanged and when, the limits on
/// subscribers, presence judgments, sleep and the lid. Milliseconds, no root.
final class EnvironmentComponentTests: XCTestCase {
    private typealias Key = LocalAuthBus.EnvironmentKey
    private var seams: FakeEnvironmentSeams!
    private var sleep: FakeSleepSeams!
    private var environment: Environment!
    private var scratch: String!

    override func setUp() {
        super.setUp()
        // The service's actor runs on the loop: started before any isolated code.
        _ = ServiceLoop.running
        scratch = NSTemporaryDirectory() + "environment-tests-\(UUID().uuidString)"
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: scratch)
        super.tearDown()
    }

    /// A fresh component with fresh fakes (each test's first line).
    @ServiceActor
    private func makeEnvironment(passwordRequirement: PasswordRequirement = .init()) {
        seams = FakeEnvironmentSeams()
        sleep = FakeSleepSeams()
        environment = Environment(
            passwords: PasswordStore(stateDirectory: scratch, requirement: passwordRequirement), seams: seams,
            sleepCycle: SleepCoordinator(seams: sleep) { body in Task { @ServiceActor in await body() } },
            events: ServiceEvents())
    }

    @ServiceActor
    private func caller(_ sender: String, uid: UInt32) -> CallerRecord {
        CallerRecord(sender: sender, uid: uid, process: nil, securityLabel: nil)
    }

    @ServiceActor @discardableResult
    private func subscribe(_ sender: String, uid: UInt32) async throws(ServiceError) -> [String: DBusValue] {
        let reply = try await environment.subscribe(caller: caller(sender, uid: uid), record: CallRecord(sender: sender, requestID: nil, errors: .localAuth))
        return reply.first?.stringKeyedDictionary ?? [:]
    }

    @ServiceActor
    private func errorName(_ body: () async throws(ServiceError) -> Void) async -> String? {
        do throws(ServiceError) {
            try await body()
            return nil
        } catch { return error.localAuthName }
    }

    // MARK: Who hears EnvironmentChanged

    @ServiceActor
    func testASubscriberHearsItsOwnChangesOnceAndNothingElse() async throws {
        makeEnvironment()
        seams.enrolled = [1000, 1001]
        let first = try await subscribe(":1.10", uid: 1000)
        try await subscribe(":1.11", uid: 1001)
        XCTAssertEqual(first[Key.biometryType], .uint32(BiometryKind.none.rawValue))

        environment.mayHaveChanged()
        XCTAssertTrue(seams.emitted.isEmpty, "nothing changed: nobody hears anything")

        // A reader came: both hear it, once each.
        seams.readersPresent = true
        environment.mayHaveChanged()
        environment.mayHaveChanged()
        XCTAssertEqual(seams.signals(to: ":1.10").count, 1)
        XCTAssertEqual(seams.signals(to: ":1.11").count, 1)
        XCTAssertEqual(seams.signals(to: ":1.10").last?[Key.biometryType], .uint32(BiometryKind.touchID.rawValue))
        XCTAssertEqual(seams.signals(to: ":1.10").last?[Key.biometryUsable], .boolean(true))

        // uid 1000 is locked out: only uid 1000's subscriber hears it.
        seams.lockedOut = [1000]
        environment.mayHaveChanged()
        XCTAssertEqual(seams.signals(to: ":1.10").count, 2)
        XCTAssertEqual(seams.signals(to: ":1.10").last?[Key.biometryLockedOut], .boolean(true))
        XCTAssertEqual(seams.signals(to: ":1.10").last?[Key.biometryUsable], .boolean(false))
        XCTAssertEqual(seams.signals(to: ":1.11").count, 1, "another uid's lockout is not theirs to hear")
    }

    @ServiceActor
    func testADepartedSubscriberIsDroppedAndHearsNothing() async throws {
        makeEnvironment()
        try await subscribe(":1.10", uid: 1000)
        environment.unsubscribe(":1.10")
        XCTAssertNil(environment.subscribers[":1.10"])
        seams.readersPresent = true
        environment.mayHaveChanged()
        XCTAssertTrue(seams.emitted.isEmpty)
    }

    // MARK: What a call costs the subscribers (BENCHMARKS.md, "Curves")

    /// 16 subscribers of each of 3 uids.
    @ServiceActor
    private func subscribeMany() async throws {
        seams.readersPresent = true
        seams.enrolled = [1000, 1001, 1002]
        for uid: UInt32 in 1000...1002 {
            for index in 0..<ServiceLimits.environmentSubscribersPerUser { try await subscribe(":\(uid).\(index)", uid: uid) }
        }
        seams.stateReads = [:]
    }

    @ServiceActor
    func testAPreflightRecomputesNothing() async throws {
        makeEnvironment()
        try await subscribeMany()
        // A call that changed nobody's state (a preflight, GetEnvironment, ListRights) ends.
        environment.callEnded()
        environment.callEnded()
        XCTAssertEqual(seams.stateReads, [:], "no subscriber's state is computed after a call that changed nothing")
        XCTAssertTrue(seams.emitted.isEmpty)
    }

    @ServiceActor
    func testAChangeOfOneUidDoesNotRecomputeAnotherUidsSubscribers() async throws {
        makeEnvironment()
        try await subscribeMany()
        // uid 1000 is locked out by its call (its lockout count changed).
        seams.lockedOut = [1000, 1001]  // 1001's too, but nothing said so: not recomputed
        environment.userChanged(1000)
        environment.callEnded()
        XCTAssertEqual(seams.stateReads, [1000: 1], "computed once for uid 1000's 16 connections, never for 1001 or 1002")
        XCTAssertEqual(Set(seams.emitted.map(\.sender)), Set((0..<16).map { ":1000.\($0)" }))
        XCTAssertTrue(seams.emitted.allSatisfy { $0.state[Key.biometryLockedOut] == .boolean(true) })
        // Told once: the next call, which changed nothing, costs nothing.
        environment.callEnded()
        XCTAssertEqual(seams.stateReads, [1000: 1])
        XCTAssertEqual(seams.emitted.count, 16)
        // A global event (a reader, the lid, sleep, a session) recomputes everyone, once per uid.
        environment.mayHaveChanged()
        XCTAssertEqual(seams.stateReads, [1000: 2, 1001: 1, 1002: 1])
        XCTAssertEqual(seams.signals(to: ":1001.0").last?[Key.biometryLockedOut], .boolean(true))
        XCTAssertTrue(seams.signals(to: ":1002.0").isEmpty)
    }

    @ServiceActor
    func testAPasswordChangeInShadowIsSeen() async throws {
        makeEnvironment()
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        let shadow = scratch + "/shadow"
        let passwd = scratch + "/passwd"
        func write(_ path: String, _ text: String) throws {
            // As passwd(1) and chpasswd do: a new file renamed over the old one.
            try text.write(toFile: path + "+", atomically: false, encoding: .utf8)
            XCTAssertEqual(rename(path + "+", path), 0)
        }
        try write(passwd, "alice:x:1000:1000::/home/alice:/bin/sh\n")
        try write(shadow, "alice:!:20000:0:99999:7:::\n")
        var lookups = 0
        seams.passwordSet = PasswordSetCache(shadowPath: shadow, passwdPath: passwd) { uid in
            // The test's own Accounts.hasPassword over the test's files.
            lookups += 1
            guard uid == 1000, let text = try? String(contentsOfFile: shadow, encoding: .utf8) else { return false }
            let hash = text.split(separator: ":", omittingEmptySubsequences: false)[1]
            return !hash.isEmpty && !hash.hasPrefix("!") && !hash.hasPrefix("*")
        }
        seams.readersPresent = true
        let first = try await subscribe(":1.10", uid: 1000)
        try await subscribe(":1.11", uid: 1000)
        XCTAssertEqual(first[Key.passwordSet], .boolean(false), "a locked password is no password")
        XCTAssertEqual(lookups, 1)
        seams.lockedOut = [1000]
        environment.userChanged(1000)
        environment.callEnded()
        XCTAssertEqual(lookups, 1, "/etc/shadow unchanged: the answer is kept, the file not read again")
        XCTAssertEqual(seams.signals(to: ":1.10").last?[Key.passwordSet], .boolean(false))

        // The user sets a password: the next call's end sees the new file, and both hear it.
        try write(shadow, "alice:$y$j9T$salt$hash:20000:0:99999:7:::\n")
        environment.callEnded()
        XCTAssertEqual(lookups, 2)
        XCTAssertEqual(seams.signals(to: ":1.10").last?[Key.passwordSet], .boolean(true))
        XCTAssertEqual(seams.signals(to: ":1.11").last?[Key.passwordSet], .boolean(true))
        environment.callEnded()
        XCTAssertEqual(lookups, 2)
        XCTAssertEqual(seams.emitted.count, 4)
    }

    /// `--require-password-after 60`: no call says that the time ran out, so
    /// the end of any call after that moment tells the subscriber (as every
    /// call's end did when all subscribers were recomputed each time).
    @ServiceActor
    func testAPasswordWindowRunningOutIsToldAtTheNextCallsEnd() async throws {
        let bootID = try XCTUnwrap(PasswordStore.bootID)
        try FileManager.default.createDirectory(atPath: scratch + "/password-given", withIntermediateDirectories: true)
        // Given 59 s ago: the window runs out within the next two seconds.
        try "\(bootID) \(Int64(time(nil)) - 59)\n".write(toFile: scratch + "/password-given/1000", atomically: true, encoding: .utf8)
        makeEnvironment(passwordRequirement: .init(sinceBoot: false, within: 60))
        seams.readersPresent = true
        seams.enrolled = [1000]
        let first = try await subscribe(":1.10", uid: 1000)
        try await subscribe(":1.11", uid: 1001)
        XCTAssertEqual(first[Key.biometryLockedOut], .boolean(false))
        seams.stateReads = [:]
        try await seams.waitUntil("the window to run out and a call to end", seconds: 4) {
            environment.callEnded()
            return !seams.emitted.isEmpty
        }
        XCTAssertEqual(seams.signals(to: ":1.10").last?[Key.biometryLockedOut], .boolean(true))
        XCTAssertEqual(seams.stateReads, [1000: 1], "only the uid whose window ran out (1001 never gave it: nothing to run out)")
        environment.callEnded()
        XCTAssertEqual(seams.stateReads, [1000: 1], "told once")
    }

    // MARK: Limits

    @ServiceActor
    func testSubscribersAreBoundedPerUidAndInAll() async throws {
        makeEnvironment()
        let perUid = ServiceLimits.environmentSubscribersPerUser
        let inAll = ServiceLimits.environmentSubscribers
        XCTAssertEqual(perUid, 16)
        XCTAssertEqual(inAll, 256)
        for index in 0..<perUid { try await subscribe(":1.\(index)", uid: 1000) }
        let overUid = await errorName { () async throws(ServiceError) in try await subscribe(":1.999", uid: 1000) }
        XCTAssertEqual(overUid, LocalAuthServiceError.limitExceeded)
        // Subscribing again from a connection already counted is not a new one.
        try await subscribe(":1.0", uid: 1000)

        for uid in 1001..<UInt32(1000 + inAll / perUid) {
            for index in 0..<perUid { try await subscribe(":\(uid).\(index)", uid: uid) }
        }
        XCTAssertEqual(environment.subscribers.count, inAll)
        let overAll = await errorName { () async throws(ServiceError) in try await subscribe(":2.0", uid: 2000) }
        XCTAssertEqual(overAll, LocalAuthServiceError.limitExceeded)
        // One leaves: room for another.
        environment.unsubscribe(":1.3")
        try await subscribe(":2.0", uid: 2000)
    }

    // MARK: Presence

    @ServiceActor
    func testAStalePresenceJudgmentDoesNotOverwriteANewerOne() async throws {
        makeEnvironment()
        seams.readersPresent = true
        seams.enrolled = [1000]
        try await subscribe(":1.10", uid: 1000)
        XCTAssertEqual(environment.subscribers[":1.10"]?.presence, .local)

        seams.presenceNeedsLogind = true
        environment.sessionsChanged()  // the user switched away…
        try await seams.waitUntil("the first judgment to ask") { seams.pendingPresenceQuestions == 1 }
        environment.sessionsChanged()  // …and back, before logind answered the first
        try await seams.waitUntil("the second judgment to ask") { seams.pendingPresenceQuestions == 2 }
        seams.answerPresence(1, .local)  // the newer judgment answers first
        try await Task.sleep(for: .milliseconds(5))
        seams.answerPresence(0, .inactive)  // the stale one answers last
        try await Task.sleep(for: .milliseconds(5))
        XCTAssertEqual(environment.subscribers[":1.10"]?.presence, .local, "the newest judgment wins")
        XCTAssertTrue(seams.signals(to: ":1.10").isEmpty, "nothing changed for the subscriber")

        environment.sessionsChanged()
        try await seams.waitUntil("a third judgment") { seams.pendingPresenceQuestions == 1 }
        seams.answerPresence(0, .inactive)
        try await seams.waitUntil("the switch to be heard") { !seams.signals(to: ":1.10").isEmpty }
        XCTAssertEqual(seams.signals(to: ":1.10").last?[Key.biometryUsable], .boolean(false))
    }

    // MARK: Sleep and the lid

    @ServiceActor
    func testSleepEndsReaderWorkBeforeTheInhibitorGoesAndResumeOffersReaders() async throws {
        makeEnvironment()
        seams.readersPresent = true
        try await subscribe(":1.10", uid: 1000)
        environment.prepareForSleep(true)
        XCTAssertEqual(sleep.events, ["end-reader-work"], "the operations end at the signal")
        XCTAssertTrue(environment.asleep)
        XCTAssertEqual(seams.signals(to: ":1.10").last?[Key.builtInSensorInaccessible], .boolean(true))
        try await seams.waitUntil("the inhibitor released") { !self.sleep.inhibitorHeld }
        XCTAssertEqual(sleep.events, ["end-reader-work", "close-started", "closed", "release-inhibitor"])

        environment.prepareForSleep(false)
        XCTAssertFalse(environment.asleep)
        XCTAssertEqual(seams.signals(to: ":1.10").last?[Key.builtInSensorInaccessible], .boolean(false))
        try await seams.waitUntil("the readers offered") { self.sleep.events.last == "offer-readers" }
        XCTAssertEqual(Array(sleep.events.suffix(2)), ["take-inhibitor", "offer-readers"])
        XCTAssertTrue(sleep.inhibitorHeld)
    }

    @ServiceActor
    func testAStoppingServiceIgnoresPrepareForSleep() async {
        makeEnvironment()
        environment.stop()
        environment.prepareForSleep(true)
        XCTAssertTrue(sleep.events.isEmpty)
        XCTAssertFalse(environment.asleep)
    }

    @ServiceActor
    func testTheLidEndsBuiltInReaderWorkOnlyWhenItClosesOverOne() async throws {
        makeEnvironment()
        seams.readersPresent = true
        try await subscribe(":1.10", uid: 1000)
        seams.lidClosed = true
        environment.lidChanged()
        XCTAssertEqual(seams.interruptedBuiltIn, 0, "no built-in reader: nothing to end")
        XCTAssertTrue(seams.emitted.isEmpty, "an external reader stays reachable: nothing changed")
        seams.hasBuiltInReader = true
        environment.lidChanged()
        XCTAssertEqual(seams.interruptedBuiltIn, 1)
        XCTAssertEqual(seams.signals(to: ":1.10").last?[Key.builtInSensorInaccessible], .boolean(true))
        seams.lidClosed = false
        environment.lidChanged()
        XCTAssertEqual(seams.interruptedBuiltIn, 1)
        XCTAssertEqual(seams.signals(to: ":1.10").last?[Key.builtInSensorInaccessible], .boolean(false))
    }
}
