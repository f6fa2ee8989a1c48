internal import CGLib
import DBusCore
import LocalAuthShared

// The readers each user is served by, hotplug announced as PropertiesChanged,
// and the domain state, which changes exactly when the enrolled set does.
extension LocalAuthService {
    // MARK: Readers

    /// The reader that serves `uid`: the configured one (`--reader`), else the
    /// first usable reader with prints of the user, else the first usable one.
    func reader(for uid: UInt32) -> Readers.Identity? {
        let usable = reachableReaders
        return Self.chooseReader(among: usable, configured: configuration.reader,
                                 withPrints: usable.count > 1 && configuration.reader == nil
                                     ? prints.readers(withPrintsOf: uid) : [])
    }

    /// The rule of `reader(for:)`, as pure logic: the configured reader or
    /// none; else the first of `usable` that has prints of the user, else the
    /// first. `withPrints` is read only when there is a choice to make.
    nonisolated static func chooseReader(among usable: [Readers.Identity], configured: ReaderSelector?,
                                         withPrints: Set<Readers.Identity>) -> Readers.Identity? {
        if let configured { return usable.first { configured.matches($0.driver, $0.deviceID) } }
        return usable.first { withPrints.contains($0) } ?? usable.first
    }

    /// At start: clears what interrupted writes left, and follows reader
    /// hotplug so that BiometryType (PropertiesChanged) and preflight follow.
    func prepareStoreAndReaders() {
        prints.removeTemporaries()
        let announced = Announced(readers.isPresent ? .touchID : .none)
        readers.onChange = { [weak self] in
            guard let self else { return }
            let now: BiometryKind = self.readers.isPresent ? .touchID : .none
            let names = self.readers.usableReaders.map(\.description)
            Log.info("readers now: \(names.isEmpty ? "none" : names.joined(separator: ", "))")
            self.environmentMayHaveChanged()
            guard now != announced.value else { return }
            announced.value = now
            try? self.bus.emit(path: ObjectPath(stringLiteral: LocalAuthBus.objectPath),
                               interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
                               arguments: [.string(LocalAuthBus.interface),
                                           .dictionary([LocalAuthBus.Property.biometryType: .uint32(now.rawValue)]),
                                           .strings([])])
        }
    }

    // MARK: Domain state

    /// A hash of the caller's enrolled set on the reader that serves them:
    /// which fingers, from which source, and which enrollment of each (a new
    /// enrollment of the same finger has a new id, so replacing changes it).
    /// Made only of what is on disk, so it is the same across restarts.
    /// Per app, as Apple's: keyed with the caller's identity (its proven
    /// sandbox's app id, else its executable; `CallerIdentity.stateKey`).
    func domainState(_ request: Request) async throws(ServiceError) -> [DBusValue] {
        let app = callers.identity(request.caller).stateKey
        guard let reader = reader(for: request.uid) else { throw noReaderError }
        return [.bytes(EnvironmentRules.appStateHash(enrolledSetHash: enrolledSetHash(uid: request.uid, reader: reader),
                                                     app: app))]
    }

    /// The hash behind the domain state and the rights' `biometryCurrentSet`.
    /// A reused match (`reuse-duration`) is tied to `enrolledSet` instead
    /// (Evaluation/Evaluator.swift), which the scan loop has at hand.
    func enrolledSetHash(uid: UInt32, reader: Readers.Identity) -> [UInt8] {
        var material = Array("localauth-domain-state 1\n\(reader.driver)\n\(reader.deviceID)\n".utf8)
        for stored in prints.prints(of: uid, for: reader) {
            material += Array("\(stored.finger.rawValue)\n\(stored.source.rawValue)\n".utf8)
            material += Digest.sha256(stored.stamp) + Digest.sha256(stored.bytes)
        }
        return Digest.sha256(material)
    }
}

/// The BiometryType last announced with PropertiesChanged.
@ServiceActor
private final class Announced {
    var value: BiometryKind
    init(_ value: BiometryKind) { self.value = value }
}
