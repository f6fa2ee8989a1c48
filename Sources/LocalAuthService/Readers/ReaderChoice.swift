import DBusCore
import LocalAuthShared

// The reader choice component: which reader serves each user (the
// configured one, else one with their prints, else the first), which
// readers a person can touch now (none asleep, no built-in one under a
// closed lid), hotplug announced as PropertiesChanged, and the domain state,
// which changes exactly when the enrolled set does. It owns the BiometryType
// last announced; everything else it reads through ReaderChoiceSeams.
@ServiceActor
final class ReaderChoice {
    private let configured: ReaderSelector?
    private let seams: any ReaderChoiceSeams
    /// The BiometryType last announced with PropertiesChanged (the one at
    /// start: `startFollowingHotplug`).
    private var announced = BiometryKind.none

    init(configured: ReaderSelector?, seams: any ReaderChoiceSeams) {
        self.configured = configured
        self.seams = seams
    }

    // MARK: Which reader

    /// The usable readers a person can touch now: none while the system
    /// sleeps; while the lid is closed, only external ones.
    var reachableReaders: [Readers.Identity] {
        guard !seams.asleep else { return [] }
        return Self.reachable(seams.usableReaders, builtIn: seams.builtInReaders, lidClosed: seams.lidClosed)
    }

    /// The reader that serves `uid`: the configured one (`--reader`), else the
    /// first reachable reader with prints of the user, else the first reachable one.
    func reader(for uid: UInt32) -> Readers.Identity? {
        choose(among: reachableReaders, for: uid)
    }

    /// The reader that would serve `uid` with the lid open and the system
    /// awake: enrolment and the domain state do not change when the lid closes.
    func readerWithLidOpen(for uid: UInt32) -> Readers.Identity? {
        choose(among: seams.usableReaders, for: uid)
    }

    private func choose(among usable: [Readers.Identity], for uid: UInt32) -> Readers.Identity? {
        Self.chooseReader(
            among: usable, configured: configured,
            withPrints: usable.count > 1 && configured == nil ? seams.readers(withPrintsOf: uid) : [])
    }

    /// The rule of `reader(for:)`, as pure logic: the configured reader or
    /// none; else the first of `usable` that has prints of the user, else the
    /// first. `withPrints` is read only when there is a choice to make.
    nonisolated static func chooseReader(
        among usable: [Readers.Identity], configured: ReaderSelector?,
        withPrints: Set<Readers.Identity>
    ) -> Readers.Identity? {
        if let configured { return usable.first { configured.matches($0.driver, $0.deviceID) } }
        return usable.first { withPrints.contains($0) } ?? usable.first
    }

    /// Why there is no reader for a user: preflight and policy 1 answer it
    /// at once (BiometryNotAvailable), policy 2 takes the password alone.
    var noReaderError: ServiceError {
        if seams.asleep { return ServiceErrors.la(.biometryNotAvailable, "the system is going to sleep") }
        if seams.lidClosed, !seams.builtInReaders.isEmpty {
            return ServiceErrors.la(
                .biometryNotAvailable,
                "the lid is closed: the built-in fingerprint reader cannot be touched")
        }
        return ServiceErrors.noReader
    }

    // MARK: Hotplug

    /// At start: the BiometryType now is the one callers know.
    func startFollowingHotplug() {
        announced = seams.readersPresent ? .touchID : .none
    }

    /// A reader came or went (Readers.observe): subscribers hear their
    /// environment again, and BiometryType is announced when it changed.
    func readersChanged() {
        let now: BiometryKind = seams.readersPresent ? .touchID : .none
        let names = seams.usableReaders.map(\.description)
        Log.info("readers now: \(names.isEmpty ? "none" : names.joined(separator: ", "))")
        seams.environmentMayHaveChanged()
        guard now != announced else { return }
        announced = now
        seams.announceBiometryType(now)
    }

    // MARK: Domain state

    /// GetDomainState: a hash of the caller's enrolled set on the reader that
    /// serves them: which fingers, from which source, and which enrollment of
    /// each (a new enrollment of the same finger has a new id, so replacing
    /// changes it). Made only of what is on disk, so it is the same across
    /// restarts. Per app, as Apple's: keyed with the caller's identity (its
    /// proven sandbox's app id, else its executable; `CallerIdentity.stateKey`).
    func domainState(of caller: CallerRecord) throws(ServiceError) -> [DBusValue] {
        let app = seams.appKey(of: caller)
        guard let reader = reader(for: caller.uid) else { throw noReaderError }
        return [
            .bytes(
                Self.appStateHash(
                    enrolledSetHash: enrolledSetHash(uid: caller.uid, reader: reader),
                    app: app))
        ]
    }

    /// The hash behind the domain state and the rights' `biometryCurrentSet`.
    /// A reused match (`reuse-duration`) is tied to `enrolledSet` instead
    /// (Evaluation/EvaluationPlan.swift), which the scan loop has at hand.
    func enrolledSetHash(uid: UInt32, reader: Readers.Identity) -> [UInt8] {
        var material = Array("localauth-domain-state 1\n\(reader.driver)\n\(reader.deviceID)\n".utf8)
        for stored in seams.prints(of: uid, for: reader) {
            material += Array("\(stored.finger.rawValue)\n\(stored.source.rawValue)\n".utf8)
            material += Digest.sha256(stored.stamp) + Digest.sha256(stored.bytes)
        }
        return Digest.sha256(material)
    }
}

extension ReaderChoice {
    /// The readers that may be used: while the lid is closed, none built in.
    nonisolated static func reachable(
        _ usable: [Readers.Identity], builtIn: Set<Readers.Identity>,
        lidClosed: Bool
    ) -> [Readers.Identity] {
        lidClosed ? usable.filter { !builtIn.contains($0) } : usable
    }

    /// Apple's stateHash differs per app: ours is the user's enrolled-set hash
    /// keyed with the app (the executable the service sees), so two apps
    /// cannot compare hashes to follow a person, and each changes exactly
    /// when the enrolled set does. Pure (EnvironmentRulesTests).
    nonisolated static func appStateHash(enrolledSetHash: [UInt8], app: String) -> [UInt8] {
        Digest.sha256(Array("localauth-app-domain-state 1\n\(app)\n".utf8) + enrolledSetHash)
    }
}
