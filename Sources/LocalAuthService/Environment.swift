import DBusCore
import Glibc
import LocalAuthShared

// The world around the reader, joined to the service: suspend and resume,
// the lid, whether the caller can be at the reader, the password after boot,
// and Apple's LAEnvironment (GetEnvironment, SubscribeEnvironment,
// EnvironmentChanged). The rules themselves are EnvironmentRules.swift; logind
// and UPower are Logind.swift.

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

/// When each user last gave the password (policy 2), for
/// `--require-password-after`: `<state>/password-given/<uid>`, "<boot id>
/// <unix seconds>". A file that cannot be read or parsed fails closed.
@ServiceActor
final class PasswordStore {
    private let directory: String
    private var cache: [UInt32: EnvironmentRules.Stored] = [:]

    init(stateDirectory: String) { directory = stateDirectory + "/password-given" }

    /// This boot's id: the kernel's, else the one the unit passes. The shipped
    /// unit has `ProcSubset=pid`, which hides /proc/sys, so it sets
    /// `LOCALAUTH_BOOT_ID=%b` (systemd's boot id specifier); without either the
    /// password is never taken as given this boot (fails closed).
    static var bootID: String? {
        if let kernel = Posix.readFile("/proc/sys/kernel/random/boot_id") {
            return String(decoding: kernel, as: UTF8.self).trimmed
        }
        guard let passed = getenv("LOCALAUTH_BOOT_ID").map({ String(cString: $0) }) else { return nil }
        return bootIDFromUnit(passed)
    }

    /// systemd's `%b` is the boot id as 32 hex digits; the kernel's file has
    /// the same 128 bits with dashes (8-4-4-4-12). Anything else is refused.
    static func bootIDFromUnit(_ text: String) -> String? {
        let digits = Array(text.lowercased().utf8)
        guard digits.count == 32, digits.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else { return nil }
        var out: [UInt8] = []
        for (index, digit) in digits.enumerated() {
            if [8, 12, 16, 20].contains(index) { out.append(45) }
            out.append(digit)
        }
        return String(decoding: out, as: UTF8.self)
    }

    func stored(_ uid: UInt32) -> EnvironmentRules.Stored {
        if let cached = cache[uid] { return cached }
        let path = "\(directory)/\(uid)"
        let result: EnvironmentRules.Stored
        switch Posix.readFileOrErrno(path) {
        case .success(let bytes):
            if let record = EnvironmentRules.PasswordRecord(text: String(decoding: bytes, as: UTF8.self)) {
                result = .record(record)
            } else {
                Log.error("\(path) is damaged: the password is required before biometrics for uid \(uid)")
                result = .damaged
            }
        case .failure(let error) where error.code == ENOENT:
            result = .none
        case .failure(let error):
            Log.error("\(path) cannot be read (\(error)): the password is required before biometrics for uid \(uid)")
            return .damaged
        }
        cache[uid] = result
        return result
    }

    /// The user gave the password now.
    func record(_ uid: UInt32) {
        guard let boot = Self.bootID else { return }
        let record = EnvironmentRules.PasswordRecord(bootID: boot, time: Int64(time(nil)))
        do {
            try AtomicFile.makeDirectory(directory)
            try AtomicFile.write(Array(record.text.utf8), to: "\(directory)/\(uid)")
            cache[uid] = .record(record)
        } catch {
            // Not cached as given: biometrics keep waiting (fails closed).
            Log.error("could not record the password of uid \(uid): \(error)")
        }
    }
}

extension LocalAuthService {
    // MARK: Which readers can be touched

    /// The usable readers a person can touch now: none while the system
    /// sleeps; while the lid is closed, only external ones.
    var reachableReaders: [Readers.Identity] {
        guard !asleep else { return [] }
        return EnvironmentRules.reachable(readers.usableReaders, builtIn: readers.builtIn, lidClosed: logind.lidClosed)
    }

    /// Why there is no reader for a user: preflight and policy 1 answer it
    /// at once (BiometryNotAvailable), policy 2 takes the password alone.
    var noReaderError: ServiceError {
        if asleep { return ServiceErrors.la(.biometryNotAvailable, "the system is going to sleep") }
        if logind.lidClosed, !readers.builtIn.isEmpty {
            return ServiceErrors.la(.biometryNotAvailable,
                                    "the lid is closed: the built-in fingerprint reader cannot be touched")
        }
        return ServiceErrors.noReader
    }

    /// `--require-password-after`: the error while biometrics wait for the password.
    func passwordNeeded(_ uid: UInt32) -> ServiceError? {
        let requirement = configuration.passwordRequirement
        guard requirement.isActive else { return nil }
        return EnvironmentRules.passwordNeeded(requirement, stored: passwords.stored(uid), bootID: PasswordStore.bootID,
                                               now: Int64(time(nil)))
    }

    /// Whether the caller can be the person at the reader now
    /// (Callers/Presence.swift). Without logind it is known at once, so a
    /// preflight pays no async round there (BENCHMARKS.md).
    func presence(of request: Request) async -> EnvironmentRules.Presence {
        if let known = callers.knownPresence(request.caller) { return known }
        return await callers.presence(request.caller)
    }

    // MARK: Suspend and resume

    func startFollowingLogind() async {
        logind.onSleep = { [weak self] sleeping in self?.prepareForSleep(sleeping) }
        logind.onLidChange = { [weak self] in self?.lidChanged() }
        logind.onSessionChange = { [weak self] in self?.sessionsChanged() }
        await logind.start()
    }

    /// PrepareForSleep: before sleep, every operation on a reader ends with
    /// SystemCancel, the readers close, then the inhibitor is released; after
    /// resume a new inhibitor is taken and readers open again on demand. One
    /// ordered state machine decides (Readers/SleepCycle.swift).
    func prepareForSleep(_ sleeping: Bool) {
        guard !stopping else { return }
        Log.info(sleeping ? "the system is going to sleep: ending scans and closing the readers"
                          : "the system resumed")
        sleepCycle.prepareForSleep(sleeping)
        environmentMayHaveChanged()
    }

    /// The lid closed: the operations on the built-in readers end, as for
    /// sleep (nobody can touch a reader under a closed lid).
    func lidChanged() {
        if logind.lidClosed, !readers.builtIn.isEmpty {
            queue.interrupt(on: readers.builtIn, .lidClosed)
        }
        environmentMayHaveChanged()
    }

    // MARK: LAEnvironment

    /// The caller's LAEnvironment state (keys: LocalAuthBus.EnvironmentKey).
    func environmentState(uid: UInt32, app: String, presence: EnvironmentRules.Presence) -> [String: DBusValue] {
        typealias Key = LocalAuthBus.EnvironmentKey
        // The reader that would serve the user with the lid open: enrolment
        // and the hash do not change when the lid closes.
        let usable = readers.usableReaders
        let reader = Self.chooseReader(among: usable, configured: configuration.reader,
                                       withPrints: usable.count > 1 && configuration.reader == nil
                                           ? prints.readers(withPrintsOf: uid) : [])
        let enrolled = reader.map { !prints.prints(of: uid, for: $0).isEmpty } ?? false
        let hash = reader.map { EnvironmentRules.appStateHash(enrolledSetHash: enrolledSetHash(uid: uid, reader: $0), app: app) } ?? []
        let inaccessible = asleep || (logind.lidClosed && !readers.builtIn.isEmpty)
        let usableNow = EnvironmentRules.refusal(presence) == nil && (try? evaluator.checkBiometricsUsable(for: uid)) != nil
        return [
            Key.biometryType: .uint32(readers.isPresent ? BiometryKind.touchID.rawValue : BiometryKind.none.rawValue),
            Key.biometryEnrolled: .boolean(enrolled),
            Key.biometryLockedOut: .boolean(evaluator.isLockedOut(uid) || passwordNeeded(uid) != nil),
            Key.biometryStateHash: .bytes(hash),
            Key.builtInSensorInaccessible: .boolean(inaccessible),
            Key.biometryUsable: .boolean(usableNow),
            Key.passwordSet: .boolean(Accounts.hasPassword(uid: uid)),
        ]
    }

    func getEnvironment(_ request: Request) async throws(ServiceError) -> [DBusValue] {
        let app = callers.identity(request.caller).stateKey
        let presence = await presence(of: request)
        try request.record.checkNotEnded()
        return [.dictionary(environmentState(uid: request.uid, app: app, presence: presence))]
    }

    /// SubscribeEnvironment: this connection hears EnvironmentChanged for its
    /// own uid until it unsubscribes or leaves the bus. Returns the state now.
    func subscribeEnvironment(_ request: Request) async throws(ServiceError) -> [DBusValue] {
        let app = callers.identity(request.caller).stateKey
        let presence = await presence(of: request)
        try request.record.checkNotEnded()
        if environmentSubscribers[request.sender] == nil {
            guard environmentSubscribers.count < ServiceLimits.environmentSubscribers else {
                throw ServiceErrors.limit("\(ServiceLimits.environmentSubscribers) connections are subscribed already")
            }
            let mine = environmentSubscribers.values.filter { $0.uid == request.uid }.count
            guard mine < ServiceLimits.environmentSubscribersPerUser else {
                throw ServiceErrors.limit("uid \(request.uid) has \(ServiceLimits.environmentSubscribersPerUser) "
                                          + "connections subscribed already")
            }
        }
        let state = environmentState(uid: request.uid, app: app, presence: presence)
        environmentSubscribers[request.sender] = EnvironmentSubscriber(uid: request.uid, app: app, caller: request.caller,
                                                                       presence: presence, last: state)
        return [.dictionary(state)]
    }

    func unsubscribeEnvironment(_ request: Request) throws(ServiceError) -> [DBusValue] {
        environmentSubscribers[request.sender] = nil
        return []
    }

    /// A logind session became active or inactive: each subscriber's presence
    /// is judged again (its session's properties, read now), then whoever's
    /// state changed hears it. A later change supersedes an earlier judgment
    /// still under way, so an old answer never overwrites a newer one.
    func sessionsChanged() {
        guard !environmentSubscribers.isEmpty else { return }
        presenceGeneration &+= 1
        let generation = presenceGeneration
        let subscribers = environmentSubscribers.map { ($0.key, $0.value.caller) }
        Task { @ServiceActor [weak self] in
            var judged: [(String, EnvironmentRules.Presence)] = []
            for (sender, caller) in subscribers {
                guard let self else { return }
                judged.append((sender, await self.callers.presence(caller)))
            }
            guard let self, generation == self.presenceGeneration else { return }
            for (sender, presence) in judged { self.environmentSubscribers[sender]?.presence = presence }
            self.environmentMayHaveChanged()
        }
    }

    /// Something may have changed (a call ended, a reader came or went, the
    /// lid, sleep): each subscriber whose own state differs from what it was
    /// last told hears it once, unicast; nobody hears another user's.
    func environmentMayHaveChanged() {
        guard !environmentSubscribers.isEmpty else { return }
        for (sender, subscriber) in environmentSubscribers {
            let state = environmentState(uid: subscriber.uid, app: subscriber.app, presence: subscriber.presence)
            guard state != subscriber.last else { continue }
            environmentSubscribers[sender]?.last = state
            try? bus.emit(path: ObjectPath(stringLiteral: LocalAuthBus.objectPath), interface: LocalAuthBus.interface,
                          member: LocalAuthBus.Signal.environmentChanged, arguments: [.dictionary(state)],
                          destination: sender)
        }
    }
}
