import DBusCore
@testable import LocalAuthService
import LocalAuthShared
import XCTest

/// The readers, lockout, callers and bus as the Environment component sees
/// them: plain values a test sets, and a log of what it told whom.
@ServiceActor
final class FakeEnvironmentSeams: EnvironmentSeams {
    static let reader = Readers.Identity(driver: "virtual_device", deviceID: "0")

    var readersPresent = false
    var hasBuiltInReader = false
    var lidClosed = false
    var enrolled: Set<UInt32> = []
    var lockedOut: Set<UInt32> = []
    var interruptedBuiltIn = 0
    /// Presence by sender; `knownPresence` answers from it at once unless
    /// `presenceNeedsLogind`, when `presence(of:)` waits for `answerPresence`.
    var presences: [String: Presence] = [:]
    var presenceNeedsLogind = false
    private var askedPresence: [(sender: String, answer: CheckedContinuation<Presence, Never>)] = []
    /// EnvironmentChanged signals sent: to whom, with what.
    private(set) var emitted: [(sender: String, state: [String: DBusValue])] = []

    func readerWithLidOpen(for uid: UInt32) -> Readers.Identity? { readersPresent ? Self.reader : nil }
    func isEnrolled(_ uid: UInt32, on reader: Readers.Identity) -> Bool { enrolled.contains(uid) }
    func enrolledSetHash(uid: UInt32, reader: Readers.Identity) -> [UInt8] { [UInt8(truncatingIfNeeded: uid)] }
    func interruptBuiltInReaders() { interruptedBuiltIn += 1 }
    func isLockedOut(_ uid: UInt32) -> Bool {
        stateReads[uid, default: 0] += 1
        return lockedOut.contains(uid)
    }
    func hasUsablePrints(_ uid: UInt32) -> Bool { readersPresent && enrolled.contains(uid) && !lockedOut.contains(uid) }
    func hasPassword(_ uid: UInt32) -> Bool { passwordSet?.hasPassword(uid) ?? true }
    func accountsChanged() -> Bool { passwordSet?.changedSinceLastAsked() ?? false }
    func appKey(of caller: CallerRecord) -> String { "app-of-\(caller.sender)" }
    func knownPresence(of caller: CallerRecord) -> Presence? {
        presenceNeedsLogind ? nil : presences[caller.sender] ?? .local
    }
    func presence(of caller: CallerRecord) async -> Presence {
        guard presenceNeedsLogind else { return presences[caller.sender] ?? .local }
        return await withCheckedContinuation { askedPresence.append((caller.sender, $0)) }
    }
    func emitEnvironmentChanged(_ state: [String: DBusValue], to sender: String) { emitted.append((sender, state)) }

    // MARK: For the tests

    /// How many times each uid's state was computed (one lockout read each).
    var stateReads: [UInt32: Int] = [:]
    /// A real cache over a test's own shadow and passwd files, if set.
    var passwordSet: PasswordSetCache?

    var pendingPresenceQuestions: Int { askedPresence.count }

    /// Answers the `index`th presence question still waiting (0: the oldest).
    func answerPresence(_ index: Int, _ presence: Presence) {
        askedPresence.remove(at: index).answer.resume(returning: presence)
    }

    func signals(to sender: String) -> [[String: DBusValue]] { emitted.filter { $0.sender == sender }.map(\.state) }

    /// Waits (at most a second, or `seconds`) for `condition`.
    func waitUntil(_ what: String, seconds: Int = 1, _ condition: @ServiceActor () -> Bool) async throws {
        for _ in 0..<1000 * seconds {
            if condition() { return }
            try await Task.sleep(for: .milliseconds(1))
        }
        XCTFail("waited \(seconds) s for \(what)")
    }
}

/// The readers and logind as the sleep cycle sees them, in the order it acted on them.
@ServiceActor
final class FakeSleepSeams: SleepSeams {
    var events: [String] = []
    var inhibitorHeld = true

    func endReaderWork() { events.append("end-reader-work") }
    func closeReaders() async {
        events.append("close-started")
        await Task.yield()
        events.append("closed")
    }
    func releaseInhibitor() {
        inhibitorHeld = false
        events.append("release-inhibitor")
    }
    func takeInhibitor() async {
        inhibitorHeld = true
        events.append("take-inhibitor")
    }
    func offerReaders() { events.append("offer-readers") }
}
