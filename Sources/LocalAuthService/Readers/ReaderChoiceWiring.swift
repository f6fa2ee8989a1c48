import DBusCore
import LocalAuthShared

// Wiring only: the service's readers, print store, logind, callers and bus
// as the reader choice's seams, and the service's old entry points to the
// reader choice, kept for the code other components still call them from.

@ServiceActor
final class ServiceReaderChoiceSeams: ReaderChoiceSeams {
    /// The service outlives the component that alone holds this adapter
    /// (unowned(unsafe): a checked `unowned` load takes the side table's slow
    /// retain and release on every call; see ServiceEvaluatorWiring).
    private unowned(unsafe) let service: LocalAuthService

    init(_ service: LocalAuthService) { self.service = service }

    var usableReaders: [Readers.Identity] { service.readers.usableReaders }
    var builtInReaders: Set<Readers.Identity> { service.readers.builtIn }
    var readersPresent: Bool { service.readers.isPresent }
    var asleep: Bool { service.environment.asleep }
    var lidClosed: Bool { service.logind.lidClosed }
    func readers(withPrintsOf uid: UInt32) -> Set<Readers.Identity> { service.prints.readers(withPrintsOf: uid) }
    func prints(of uid: UInt32, for reader: Readers.Identity) -> [PrintStore.StoredPrint] {
        service.prints.prints(of: uid, for: reader)
    }
    func appKey(of caller: CallerRecord) -> String { service.callers.identity(caller).stateKey }
    func environmentMayHaveChanged() { service.environment.mayHaveChanged() }
    func announceBiometryType(_ kind: BiometryKind) {
        try? service.bus.emit(
            path: ObjectPath(stringLiteral: LocalAuthBus.objectPath),
            interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
            arguments: [
                .string(LocalAuthBus.interface),
                .dictionary([LocalAuthBus.Property.biometryType: .uint32(kind.rawValue)]),
                .strings([]),
            ])
    }
}

extension LocalAuthService {
    /// At start: clears what interrupted writes left, and follows reader
    /// hotplug so that BiometryType (PropertiesChanged) and preflight follow.
    func prepareStoreAndReaders() {
        prints.removeTemporaries()
        readerChoice.startFollowingHotplug()
        readers.onChange = { [weak self] in self?.readerChoice.readersChanged() }
    }

}
