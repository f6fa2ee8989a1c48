import DBusCore
import Glibc
import LocalAuthShared

// The Environment component: the world around the reader, joined to the
// service. It owns suspend and resume (the sleep cycle), the connections
// subscribed to Apple's LAEnvironment (GetEnvironment, SubscribeEnvironment,
// EnvironmentChanged) with their last-told state and presence, and the
// password-given records (`--require-password-after`). It follows logind's
// PrepareForSleep, the lid and the sessions (EnvironmentWiring.swift feeds
// them in); everything else it reads through EnvironmentSeams. The rules
// themselves are EnvironmentRules.swift; logind and UPower are Logind.swift.

/// A connection that asked for EnvironmentChanged, and what it was last told.
/// Its presence is judged again whenever a logind session becomes active or
/// inactive (a user switch), so `biometry-usable` follows the person at the reader.
struct EnvironmentSubscriber {
    let uid: UInt32
    let app: String
    let caller: CallerRecord
    var presence: EnvironmentRules.Presence
    var last: [String: DBusValue]
}

@ServiceActor
final class Environment {
    private let seams: any EnvironmentSeams
    private let passwordRequirement: EnvironmentRules.PasswordRequirement
    /// When each user last gave the password (`--require-password-after`).
    let passwords: PasswordStore
    /// Suspend and resume, one ordered state machine (Readers/SleepCycle.swift).
    let sleepCycle: SleepCoordinator
    /// Connections subscribed to EnvironmentChanged, by unique name.
    private(set) var subscribers: [String: EnvironmentSubscriber] = [:]
    /// Counts logind's session changes: the newest judgment of subscribers' presence wins.
    private var presenceGeneration: UInt64 = 0

    init(passwords: PasswordStore, passwordRequirement: EnvironmentRules.PasswordRequirement,
         seams: any EnvironmentSeams, sleepSeams: any SleepSeams,
         spawn: @escaping @ServiceActor (@escaping @ServiceActor () async -> Void) -> Void) {
        self.passwords = passwords
        self.passwordRequirement = passwordRequirement
        self.seams = seams
        sleepCycle = SleepCoordinator(seams: sleepSeams, spawn: spawn)
    }

    /// From PrepareForSleep(true) until the readers are offered again: none is offered.
    var asleep: Bool { !sleepCycle.offersReaders }

    // MARK: The password after boot

    /// `--require-password-after`: the error while biometrics wait for the password.
    func passwordNeeded(_ uid: UInt32) -> ServiceError? {
        guard passwordRequirement.isActive else { return nil }
        return EnvironmentRules.passwordNeeded(passwordRequirement, stored: passwords.stored(uid),
                                               bootID: PasswordStore.bootID, now: Int64(time(nil)))
    }

    /// The user gave the password now (policy 2).
    func passwordGiven(_ uid: UInt32) { passwords.record(uid) }

    /// Whether the caller can be the person at the reader now
    /// (Callers/Presence.swift). Without logind it is known at once, so a
    /// preflight pays no async round there (BENCHMARKS.md).
    func presence(of caller: CallerRecord) async -> EnvironmentRules.Presence {
        if let known = seams.knownPresence(of: caller) { return known }
        return await seams.presence(of: caller)
    }

    // MARK: Suspend, resume and the lid

    /// PrepareForSleep: before sleep, every operation on a reader ends with
    /// SystemCancel, the readers close, then the inhibitor is released; after
    /// resume a new inhibitor is taken and readers open again on demand. One
    /// ordered state machine decides (Readers/SleepCycle.swift).
    func prepareForSleep(_ sleeping: Bool) {
        guard !seams.stopping else { return }
        Log.info(sleeping ? "the system is going to sleep: ending scans and closing the readers"
                          : "the system resumed")
        sleepCycle.prepareForSleep(sleeping)
        mayHaveChanged()
    }

    /// The lid closed: the operations on the built-in readers end, as for
    /// sleep (nobody can touch a reader under a closed lid).
    func lidChanged() {
        if seams.lidClosed, seams.hasBuiltInReader { seams.interruptBuiltInReaders() }
        mayHaveChanged()
    }

    // MARK: LAEnvironment

    /// The caller's LAEnvironment state (keys: LocalAuthBus.EnvironmentKey).
    func state(uid: UInt32, app: String, presence: EnvironmentRules.Presence) -> [String: DBusValue] {
        typealias Key = LocalAuthBus.EnvironmentKey
        // The reader that would serve the user with the lid open: enrolment
        // and the hash do not change when the lid closes.
        let reader = seams.readerWithLidOpen(for: uid)
        let enrolled = reader.map { seams.isEnrolled(uid, on: $0) } ?? false
        let hash = reader.map { EnvironmentRules.appStateHash(enrolledSetHash: seams.enrolledSetHash(uid: uid, reader: $0),
                                                              app: app) } ?? []
        let inaccessible = asleep || (seams.lidClosed && seams.hasBuiltInReader)
        let usableNow = EnvironmentRules.refusal(presence) == nil && seams.hasUsablePrints(uid)
        return [
            Key.biometryType: .uint32(seams.readersPresent ? BiometryKind.touchID.rawValue : BiometryKind.none.rawValue),
            Key.biometryEnrolled: .boolean(enrolled),
            Key.biometryLockedOut: .boolean(seams.isLockedOut(uid) || passwordNeeded(uid) != nil),
            Key.biometryStateHash: .bytes(hash),
            Key.builtInSensorInaccessible: .boolean(inaccessible),
            Key.biometryUsable: .boolean(usableNow),
            Key.passwordSet: .boolean(seams.hasPassword(uid)),
        ]
    }

    /// GetEnvironment: the caller's state now.
    func getEnvironment(caller: CallerRecord, record: CallRecord) async throws(ServiceError) -> [DBusValue] {
        let app = seams.appKey(of: caller)
        let presence = await presence(of: caller)
        try record.checkNotEnded()
        return [.dictionary(state(uid: caller.uid, app: app, presence: presence))]
    }

    /// SubscribeEnvironment: this connection hears EnvironmentChanged for its
    /// own uid until it unsubscribes or leaves the bus. Returns the state now.
    func subscribe(caller: CallerRecord, record: CallRecord) async throws(ServiceError) -> [DBusValue] {
        let app = seams.appKey(of: caller)
        let presence = await presence(of: caller)
        try record.checkNotEnded()
        if subscribers[caller.sender] == nil {
            guard subscribers.count < ServiceLimits.environmentSubscribers else {
                throw ServiceErrors.limit("\(ServiceLimits.environmentSubscribers) connections are subscribed already")
            }
            let mine = subscribers.values.filter { $0.uid == caller.uid }.count
            guard mine < ServiceLimits.environmentSubscribersPerUser else {
                throw ServiceErrors.limit("uid \(caller.uid) has \(ServiceLimits.environmentSubscribersPerUser) "
                                          + "connections subscribed already")
            }
        }
        let state = state(uid: caller.uid, app: app, presence: presence)
        subscribers[caller.sender] = EnvironmentSubscriber(uid: caller.uid, app: app, caller: caller,
                                                           presence: presence, last: state)
        return [.dictionary(state)]
    }

    /// UnsubscribeEnvironment, or the connection left the bus.
    func unsubscribe(_ sender: String) {
        subscribers[sender] = nil
    }

    /// A logind session became active or inactive: each subscriber's presence
    /// is judged again (its session's properties, read now), then whoever's
    /// state changed hears it. A later change supersedes an earlier judgment
    /// still under way, so an old answer never overwrites a newer one.
    func sessionsChanged() {
        guard !subscribers.isEmpty else { return }
        presenceGeneration &+= 1
        let generation = presenceGeneration
        let judging = subscribers.map { ($0.key, $0.value.caller) }
        Task { @ServiceActor [weak self] in
            var judged: [(String, EnvironmentRules.Presence)] = []
            for (sender, caller) in judging {
                guard let self else { return }
                judged.append((sender, await self.seams.presence(of: caller)))
            }
            guard let self, generation == self.presenceGeneration else { return }
            for (sender, presence) in judged { self.subscribers[sender]?.presence = presence }
            self.mayHaveChanged()
        }
    }

    /// Something may have changed (a call ended, a reader came or went, the
    /// lid, sleep): each subscriber whose own state differs from what it was
    /// last told hears it once, unicast; nobody hears another user's.
    func mayHaveChanged() {
        guard !subscribers.isEmpty else { return }
        for (sender, subscriber) in subscribers {
            let state = state(uid: subscriber.uid, app: subscriber.app, presence: subscriber.presence)
            guard state != subscriber.last else { continue }
            subscribers[sender]?.last = state
            seams.emitEnvironmentChanged(state, to: sender)
        }
    }
}
