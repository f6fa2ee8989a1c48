import DBusCore
import LocalAuthShared

// Wiring only: the readers, the sleep cycle, logind, the print store, the
// callers and the bus as the reader choice's seams, given as components.

@ServiceActor
final class ServiceReaderChoiceSeams: ReaderChoiceSeams {
    private let readers: Readers
    private let sleepCycle: SleepCoordinator
    private let logind: Logind
    private let prints: PrintStore
    private let callers: Callers
    private let events: ServiceEvents
    private let bus: BusConnection

    init(
        readers: Readers, sleepCycle: SleepCoordinator, logind: Logind, prints: PrintStore, callers: Callers,
        events: ServiceEvents, bus: BusConnection
    ) {
        self.readers = readers
        self.sleepCycle = sleepCycle
        self.logind = logind
        self.prints = prints
        self.callers = callers
        self.events = events
        self.bus = bus
    }

    var usableReaders: [Readers.Identity] { readers.usableReaders }
    var builtInReaders: Set<Readers.Identity> { readers.builtIn }
    var readersPresent: Bool { readers.isPresent }
    var asleep: Bool { !sleepCycle.offersReaders }
    var lidClosed: Bool { logind.lidClosed }
    func readers(withPrintsOf uid: UInt32) -> Set<Readers.Identity> { prints.readers(withPrintsOf: uid) }
    func prints(of uid: UInt32, for reader: Readers.Identity) -> [PrintStore.StoredPrint] { prints.prints(of: uid, for: reader) }
    func appKey(of caller: CallerRecord) -> String { callers.identity(caller).stateKey }
    func environmentMayHaveChanged() { events.publishEnvironmentMayHaveChanged() }
    func announceBiometryType(_ kind: BiometryKind) {
        try? bus.emit(
            path: ObjectPath(stringLiteral: LocalAuthBus.objectPath),
            interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
            arguments: [
                .string(LocalAuthBus.interface),
                .dictionary([LocalAuthBus.Property.biometryType: .uint32(kind.rawValue)]),
                .strings([]),
            ])
    }
}
