import DBusCore
import LocalAuthShared

// Wiring only: the readers, the sleep cycle, logind, the print store, the
// callers and the bus as the reader choice's seams, given as components.

@ServiceActor
struct ServiceReaderChoiceSeams: ReaderChoiceSeams {
    let readers: Readers
    let sleepCycle: SleepCoordinator
    let logind: Logind
    let prints: PrintStore
    let callers: Callers
    let events: ServiceEvents
    let bus: BusConnection

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
