import DBusCore
import Foundation
import LocalAuthShared
import Synchronization

/// The process's one connection to localauthd, on a private event loop thread
/// (never the app's own GLib context or main thread). Connects at first use and
/// again after the bus or the service went away.
final class ServiceClient: Sendable {
    static let shared = ServiceClient()

    private let loop = EventLoop.startThread(name: "LocalAuthentication")
    private let connection = Mutex<BusConnection?>(nil)
    /// EvaluationStatus listeners by request id.
    private let statusListeners = Mutex<[String: @Sendable (String) -> Void]>([:])
    /// EnrollStatus listener of the enrollment in progress (one per caller).
    private let enrollListener = Mutex<(@Sendable (String, Int, Int) -> Void)?>(nil)
    /// EnvironmentChanged listener (LAEnvironment.currentUser).
    private let environmentListener = Mutex<(@Sendable ([String: DBusValue]) -> Void)?>(nil)
    /// Told when the service's name gets a new owner (the service started
    /// again after its idle exit), on the client's loop thread.
    private let serviceStartListener = Mutex<(@Sendable () -> Void)?>(nil)
    /// The service's BiometryType, kept as GDBusProxy keeps a property (and as
    /// liblocalauth does): read once, then updated by the service's
    /// PropertiesChanged, forgotten when the service's name changes owner or
    /// the connection is new. So a preflight is one round trip, not two.
    private let biometry = Mutex(BiometryCache())

    private struct BiometryCache {
        var value: UInt32?
        /// Bumped by every change (signal, new owner, new connection): a Get
        /// answered before a change must not overwrite what the change said.
        var generation = 0
        /// The connection that has the match rule for PropertiesChanged.
        var watching: ObjectIdentifier?
    }

    /// The live connection, made on demand.
    func bus() throws(DBusError) -> BusConnection {
        try connection.withLock { current throws(DBusError) -> BusConnection in
            if let current, current.isConnected { return current }
            let fresh = try BusConnection.connect(to: .system, loop: loop)
            // Any program on the bus can send us a signal named EvaluationStatus
            // or EnrollStatus: only the real owner of the service's name is
            // believed (docs/SECURITY.md).
            try fresh.followOwnerBlocking(of: LocalAuthBus.serviceName)
            fresh.subscribeUnicast(sender: LocalAuthBus.serviceName, interface: LocalAuthBus.interface,
                                   member: LocalAuthBus.Signal.evaluationStatus) { [self] message in
                let arguments = message.arguments
                guard arguments.count == 2, let id = arguments[0].string, let status = arguments[1].string else { return }
                statusListeners.withLock { $0[id] }?(status)
            }
            fresh.subscribeUnicast(sender: LocalAuthBus.serviceName, interface: LocalAuthBus.interface,
                                   member: LocalAuthBus.Signal.enrollStatus) { [self] message in
                let arguments = message.arguments
                guard arguments.count == 3, let status = arguments[0].string,
                      let stage = arguments[1].uint32, let stages = arguments[2].uint32 else { return }
                enrollListener.withLock { $0 }?(status, Int(stage), Int(stages))
            }
            fresh.subscribeUnicast(sender: LocalAuthBus.serviceName, interface: LocalAuthBus.interface,
                                   member: LocalAuthBus.Signal.environmentChanged) { [self] message in
                guard let state = message.arguments.first?.stringKeyedDictionary else { return }
                environmentListener.withLock { $0 }?(state)
            }
            // Routed here by the match rule `biometryType()` adds before it first asks.
            fresh.subscribeUnicast(sender: LocalAuthBus.serviceName, interface: "org.freedesktop.DBus.Properties",
                                   member: "PropertiesChanged") { [self] message in
                let arguments = message.arguments
                guard arguments.count == 3, arguments[0].string == LocalAuthBus.interface else { return }
                let changed = arguments[1].stringKeyedDictionary?[LocalAuthBus.Property.biometryType]?.unwrapped.uint32
                let invalidated = arguments[2].stringArray?.contains(LocalAuthBus.Property.biometryType) ?? false
                guard changed != nil || invalidated else { return }
                biometry.withLock { $0.value = changed; $0.generation += 1 }
            }
            // followOwnerBlocking's match rule routes the service's
            // NameOwnerChanged here; only the bus driver's is believed.
            fresh.subscribeUnicast(sender: BusConnection.busDriver, interface: BusConnection.busDriver,
                                   member: "NameOwnerChanged") { [self] message in
                let arguments = message.arguments
                guard arguments.count == 3, arguments[0].string == LocalAuthBus.serviceName else { return }
                // A new service (or none) may see other readers.
                biometry.withLock { $0.value = nil; $0.generation += 1 }
                guard let owner = arguments[2].string, !owner.isEmpty else { return }
                serviceStartListener.withLock { $0 }?()
            }
            biometry.withLock { $0 = BiometryCache(value: nil, generation: $0.generation + 1, watching: nil) }
            current = fresh
            return fresh
        }
    }

    /// The service's BiometryType: no call while the cached value is current;
    /// else a match rule for its changes (once per connection), then a Get.
    func biometryType() throws(DBusError) -> UInt32 {
        let connection = try bus()
        let (cached, generation, watching) = biometry.withLock { ($0.value, $0.generation, $0.watching) }
        if let cached { return cached }
        let id = ObjectIdentifier(connection)
        if watching != id {
            let rule = "type='signal',sender='\(LocalAuthBus.serviceName)',interface='org.freedesktop.DBus.Properties',"
                + "member='PropertiesChanged',path='\(LocalAuthBus.objectPath)',arg0='\(LocalAuthBus.interface)'"
            _ = try connection.callBlocking(destination: BusConnection.busDriver, path: "/org/freedesktop/DBus",
                                            interface: BusConnection.busDriver, member: "AddMatch", arguments: [.string(rule)])
            biometry.withLock { $0.watching = id }
        }
        let reply = try callBlocking("Get", [.string(LocalAuthBus.interface), .string(LocalAuthBus.Property.biometryType)],
                                     interface: "org.freedesktop.DBus.Properties")
        let raw = reply.first?.unwrapped.uint32 ?? 0
        // Kept only if nothing changed meanwhile and the match rule is in place
        // (else a change could pass unseen); a change's own value is newer.
        biometry.withLock { if $0.generation == generation, $0.watching == id { $0.value = raw } }
        return raw
    }

    func call(_ member: String, _ arguments: [DBusValue] = [], timeout: Double? = nil) async throws(DBusError) -> [DBusValue] {
        try await bus().call(destination: LocalAuthBus.serviceName, path: ObjectPath(stringLiteral: LocalAuthBus.objectPath),
                             interface: LocalAuthBus.interface, member: member, arguments: arguments, timeout: timeout)
    }

    func callBlocking(_ member: String, _ arguments: [DBusValue] = [], interface: String = LocalAuthBus.interface) throws(DBusError) -> [DBusValue] {
        try bus().callBlocking(destination: LocalAuthBus.serviceName, path: ObjectPath(stringLiteral: LocalAuthBus.objectPath),
                               interface: interface, member: member, arguments: arguments)
    }

    func listen(to requestID: String, _ listener: @escaping @Sendable (String) -> Void) {
        statusListeners.withLock { $0[requestID] = listener }
    }

    func listenForEnrollment(_ listener: (@Sendable (String, Int, Int) -> Void)?) {
        enrollListener.withLock { $0 = listener }
    }

    func listenForEnvironment(_ listener: (@Sendable ([String: DBusValue]) -> Void)?) {
        environmentListener.withLock { $0 = listener }
    }

    func listenForServiceStart(_ listener: (@Sendable () -> Void)?) {
        serviceStartListener.withLock { $0 = listener }
    }

    func stopListening(to requestID: String) {
        _ = statusListeners.withLock { $0.removeValue(forKey: requestID) }
    }
}

extension LAError {
    /// The LAError for an error from the service or the bus.
    init(_ error: DBusError) {
        if let code = LocalAuthErrorCode(dbusName: error.name.rawValue) {
            self.init(LAError.Code(code), message: error.message, dbusErrorName: error.name.rawValue)
            return
        }
        let code: LAError.Code
        switch error.name {
        case DBusError.Name(rawValue: LocalAuthServiceError.notAtTheReader):
            // A remote or seatless session: nobody there can touch the reader.
            code = .biometryNotAvailable
        case DBusError.Name(rawValue: LocalAuthServiceError.permissionDenied):
            // Not allowed to use biometrics here: to the app, biometry is unavailable.
            code = .biometryNotAvailable
        case .serviceUnknown, .nameHasNoOwner, .noServer, .disconnected, .noReply, .timeout, .timedOut, .ioError:
            // No service, no authentication.
            code = .biometryNotAvailable
        case .invalidArgs:
            code = .invalidContext
        default:
            code = .systemCancel
        }
        self.init(code, message: error.message, dbusErrorName: error.name.rawValue)
    }

    /// The D-Bus error name behind this error, if the service or the bus sent it.
    public var dbusErrorName: String? { _nsError.userInfo[LAError.dbusErrorNameKey] as? String }
}
