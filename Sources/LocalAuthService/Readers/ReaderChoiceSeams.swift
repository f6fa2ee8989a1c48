import DBusCore
import LocalAuthShared

/// What the reader choice reads and tells (ReaderChoice.swift): libfprint's
/// readers, sleep and the lid, the print store, the caller's app, and the
/// bus. The service gives the real ones (ReaderChoiceWiring.swift); the unit
/// tests give fakes.
@ServiceActor
protocol ReaderChoiceSeams {
    /// The readers libfprint offers that can be used, in enumeration order.
    var usableReaders: [Readers.Identity] { get }
    /// Those of them that are built in (under the lid).
    var builtInReaders: Set<Readers.Identity> { get }
    /// Whether any usable reader is present: BiometryType.
    var readersPresent: Bool { get }
    /// From PrepareForSleep(true) until the readers are offered again.
    var asleep: Bool { get }
    var lidClosed: Bool { get }
    /// The readers holding prints of `uid`.
    func readers(withPrintsOf uid: UInt32) -> Set<Readers.Identity>
    /// The prints of `uid` offered on `reader`.
    func prints(of uid: UInt32, for reader: Readers.Identity) -> [PrintStore.StoredPrint]
    /// The key of the caller's app for its domain state (`CallerIdentity.stateKey`).
    func appKey(of caller: CallerRecord) -> String
    /// Readers came or went: the environment subscribers may have a new state.
    func environmentMayHaveChanged()
    /// PropertiesChanged(BiometryType) to everyone.
    func announceBiometryType(_ kind: BiometryKind)
}
