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
    var presence: Presence
    var last: [String: DBusValue]
}

@ServiceActor
final class Environment {
    private let seams: any EnvironmentSeams
    /// When each user last gave the password, and the rule (`--require-password-after`).
    let passwords: PasswordStore
    private var passwordRequirement: PasswordRequirement { passwords.requirement }
    /// Suspend and resume, one ordered state machine (Readers/SleepCycle.swift),
    /// made before the reader choice, which reads whether readers are offered.
    let sleepCycle: SleepCoordinator
    /// SIGTERM: logind's PrepareForSleep is ignored from now on.
    private(set) var stopping = false
    /// Connections subscribed to EnvironmentChanged, by unique name.
    private(set) var subscribers: [String: EnvironmentSubscriber] = [:]
    /// Counts logind's session changes: the newest judgment of subscribers' presence wins.
    private var presenceGeneration: UInt64 = 0
    /// The uids whose state a call changed, told when the call ends.
    private var changedUsers: Set<UInt32> = []
    /// With a time-limited password requirement: when each subscriber uid's
    /// password given last runs out (seconds since the epoch), and the first.
    private var passwordExpiries: [UInt32: Int64] = [:]
    private var earliestPasswordExpiry: Int64?

    init(passwords: PasswordStore, seams: any EnvironmentSeams, sleepCycle: SleepCoordinator, events: ServiceEvents) {
        self.passwords = passwords
        self.seams = seams
        self.sleepCycle = sleepCycle
        // What changes against the order of construction reaches it as events.
        events.onUserChanged { [unowned self] uid in userChanged(uid) }
        events.onEnvironmentMayHaveChanged { [unowned self] in mayHaveChanged() }
    }

    /// SIGTERM.
    func stop() { stopping = true }

    /// From PrepareForSleep(true) until the readers are offered again: none is offered.
    var asleep: Bool { !sleepCycle.offersReaders }

    // MARK: The password after boot

    /// `--require-password-after`: the error while biometrics wait for the password.
    func passwordNeeded(_ uid: UInt32) -> ServiceError? { passwords.passwordNeeded(uid) }

    /// The user gave the password now (policy 2).
    func passwordGiven(_ uid: UInt32) {
        passwords.record(uid)
        userChanged(uid)
    }

    /// Whether the caller can be the person at the reader now
    /// (Callers/Presence.swift). Without logind it is known at once, so a
    /// preflight pays no async round there (BENCHMARKS.md).
    func presence(of caller: CallerRecord) async -> Presence {
        if let known = seams.knownPresence(of: caller) { return known }
        return await seams.presence(of: caller)
    }

    // MARK: Suspend, resume and the lid

    /// PrepareForSleep: before sleep, every operation on a reader ends with
    /// SystemCancel, the readers close, then the inhibitor is released; after
    /// resume a new inhibitor is taken and readers open again on demand. One
    /// ordered state machine decides (Readers/SleepCycle.swift).
    func prepareForSleep(_ sleeping: Bool) {
        guard !stopping else { return }
        Log.info(
            sleeping
                ? "the system is going to sleep: ending scans and closing the readers"
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
    func state(uid: UInt32, app: String, presence: Presence) -> [String: DBusValue] {
        userState(uid).state(app: app, presence: presence)
    }

    /// The part of the state all of a user's connections share, read once
    /// (the reader, the store, the lockout, /etc/shadow): only the app's hash
    /// and the session's presence differ per connection.
    struct UserState {
        let biometryType: BiometryKind
        let enrolled: Bool
        let enrolledSetHash: [UInt8]?
        let lockedOut: Bool
        let inaccessible: Bool
        let hasUsablePrints: Bool
        let passwordSet: Bool

        func state(app: String, presence: Presence) -> [String: DBusValue] {
            typealias Key = LocalAuthBus.EnvironmentKey
            return [
                Key.biometryType: .uint32(biometryType.rawValue),
                Key.biometryEnrolled: .boolean(enrolled),
                Key.biometryLockedOut: .boolean(lockedOut),
                Key.biometryStateHash: .bytes(enrolledSetHash.map { ReaderChoice.appStateHash(enrolledSetHash: $0, app: app) } ?? []),
                Key.builtInSensorInaccessible: .boolean(inaccessible),
                Key.biometryUsable: .boolean(Presence.refusal(presence) == nil && hasUsablePrints),
                Key.passwordSet: .boolean(passwordSet),
            ]
        }
    }

    func userState(_ uid: UInt32) -> UserState {
        // The reader that would serve the user with the lid open: enrolment
        // and the hash do not change when the lid closes.
        let reader = seams.readerWithLidOpen(for: uid)
        return UserState(
            biometryType: seams.readersPresent ? .touchID : .none,
            enrolled: reader.map { seams.isEnrolled(uid, on: $0) } ?? false,
            enrolledSetHash: reader.map { seams.enrolledSetHash(uid: uid, reader: $0) },
            lockedOut: seams.isLockedOut(uid) || passwordNeeded(uid) != nil,
            inaccessible: asleep || (seams.lidClosed && seams.hasBuiltInReader),
            hasUsablePrints: seams.hasUsablePrints(uid),
            passwordSet: seams.hasPassword(uid))
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
                throw ServiceErrors.limit(
                    "uid \(caller.uid) has \(ServiceLimits.environmentSubscribersPerUser) "
                        + "connections subscribed already")
            }
        }
        let state = state(uid: caller.uid, app: app, presence: presence)
        notePasswordExpiry(of: caller.uid)
        subscribers[caller.sender] = EnvironmentSubscriber(
            uid: caller.uid, app: app, caller: caller,
            presence: presence, last: state)
        return [.dictionary(state)]
    }

    /// UnsubscribeEnvironment, or the connection left the bus.
    func unsubscribe(_ sender: String) {
        guard let gone = subscribers.removeValue(forKey: sender) else { return }
        if passwordExpiries[gone.uid] != nil, !subscribers.values.contains(where: { $0.uid == gone.uid }) {
            passwordExpiries[gone.uid] = nil
            earliestPasswordExpiry = passwordExpiries.values.min()
        }
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
            var judged: [(String, Presence)] = []
            for (sender, caller) in judging {
                guard let self else { return }
                judged.append((sender, await self.seams.presence(of: caller)))
            }
            guard let self, generation == self.presenceGeneration else { return }
            for (sender, presence) in judged { self.subscribers[sender]?.presence = presence }
            self.mayHaveChanged()
        }
    }

    // MARK: Who is told, and when

    /// Something that concerns everyone changed (a reader came or went, the
    /// lid, sleep, a session, the accounts): every subscriber's state is
    /// computed again, once per uid.
    func mayHaveChanged() {
        changedUsers.removeAll()
        guard !subscribers.isEmpty else { return }
        tell { _ in true }
    }

    /// `uid`'s own state may have changed (a print enrolled or deleted, a
    /// judged scan, a lockout reset, the password given): heard by that uid's
    /// subscribers when the call ends (`callEnded`), so after its reply.
    func userChanged(_ uid: UInt32) {
        changedUsers.insert(uid)
    }

    /// A call was answered. Most calls change nothing (a preflight,
    /// GetEnvironment, ListRights…) and cost nothing here; those that changed
    /// a user's state said so (`userChanged`), and only that user's
    /// subscribers are computed again. What no call announces is checked
    /// cheaply: /etc/shadow or /etc/passwd changed (one stat each: everyone's
    /// `passwordSet` is read again), and a `--require-password-after` window
    /// that has run out since.
    func callEnded() {
        guard !subscribers.isEmpty else {
            changedUsers.removeAll()
            return
        }
        if seams.accountsChanged() { return mayHaveChanged() }
        if let earliest = earliestPasswordExpiry, Int64(time(nil)) >= earliest {
            let now = Int64(time(nil))
            for (uid, expiry) in passwordExpiries where expiry <= now { changedUsers.insert(uid) }
        }
        guard !changedUsers.isEmpty else { return }
        let changed = changedUsers
        changedUsers.removeAll()
        tell { changed.contains($0.uid) }
    }

    /// Each chosen subscriber whose own state differs from what it was last
    /// told hears it once, unicast; nobody hears another user's. The user's
    /// part is computed once per uid, whatever number of connections it has.
    private func tell(_ chosen: (EnvironmentSubscriber) -> Bool) {
        var users: [UInt32: UserState] = [:]
        for (sender, subscriber) in subscribers where chosen(subscriber) {
            let user: UserState
            if let known = users[subscriber.uid] {
                user = known
            } else {
                user = userState(subscriber.uid)
                users[subscriber.uid] = user
                notePasswordExpiry(of: subscriber.uid)
            }
            let state = user.state(app: subscriber.app, presence: subscriber.presence)
            guard state != subscriber.last else { continue }
            subscribers[sender]?.last = state
            seams.emitEnvironmentChanged(state, to: sender)
        }
    }

    /// `--require-password-after …` with a time limit: when a subscriber's
    /// password given last runs out, it must hear `biometry-locked-out`
    /// although no call changed anything; the next call after that moment
    /// tells it (`callEnded`). Kept for subscribers' uids only.
    private func notePasswordExpiry(of uid: UInt32) {
        guard let within = passwordRequirement.within else { return }
        // Already out (or none given): the state computed now says so, nothing more to wait for.
        if case .record(let record) = passwords.stored(uid),
            case let expiry = record.time + Int64(within.rounded(.down)) + 1, expiry > Int64(time(nil))
        {
            passwordExpiries[uid] = expiry
        } else {
            passwordExpiries[uid] = nil
        }
        earliestPasswordExpiry = passwordExpiries.values.min()
    }
}
