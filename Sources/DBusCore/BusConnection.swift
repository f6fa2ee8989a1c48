internal import CDBus
internal import CDBusGLib
import Synchronization

/// A connection to a message bus, served by an `EventLoop`.
///
/// libdbus is thread-safe, so sending works from any thread; everything that
/// arrives (method calls, signals, replies) is handled on the loop's thread.
/// Method calls are never dropped: a path nobody exported gets UnknownObject,
/// and a handler that throws produces an error reply.
public final class BusConnection: Sendable {
    public enum Bus: Sendable {
        /// The system bus; libdbus honours `DBUS_SYSTEM_BUS_ADDRESS`.
        case system
        case session
        /// A bus at an explicit address such as `unix:path=/run/x/bus`.
        case address(String)
    }

    /// Called on the loop's thread for each method call to an exported path.
    public typealias MethodHandler = @Sendable (IncomingCall) -> Void
    /// Called on the loop's thread for each matching signal.
    public typealias SignalHandler = @Sendable (Message) -> Void

    public let loop: EventLoop
    /// This connection's unique bus name (`:1.42`).
    public let uniqueName: String
    let raw: RawConnection
    let state = Mutex(State())

    /// Everything the connection's parts share, behind one lock: the
    /// exported objects (BusExports.swift), the signal subscriptions
    /// (BusSignals.swift), the followed names (BusNameOwners.swift).
    struct State {
        var objects: [String: Export] = [:]
        var subscriptions: [UInt64: Subscription] = [:]
        var nextSubscription: UInt64 = 1
        var onDisconnect: [@Sendable () -> Void] = []
        var closed = false
        /// Well-known names whose owner this connection follows (`followOwner`),
        /// with their current unique-name owner (nil: no owner).
        var owners: [String: String?] = [:]
        /// NameOwnerChanged signals seen per followed name, so that a
        /// GetNameOwner answer older than one of them is not applied.
        var ownerChanges: [String: UInt64] = [:]
    }

    /// The bus itself: the only sender of NameOwnerChanged, NameAcquired, ….
    public static let busDriver = "org.freedesktop.DBus"

    /// Connects and says Hello; blocks the calling thread for that handshake only.
    public static func connect(to bus: Bus, loop: EventLoop) throws(DBusError) -> BusConnection {
        dbus_threads_init_default()
        let raw: OpaquePointer? = try DBusError.check { error -> OpaquePointer? in
            switch bus {
            case .system: return dbus_bus_get_private(DBUS_BUS_SYSTEM, error)
            case .session: return dbus_bus_get_private(DBUS_BUS_SESSION, error)
            case .address(let address):
                guard let connection = dbus_connection_open_private(address, error) else { return nil }
                if dbus_bus_register(connection, error) == 0 {
                    dbus_connection_close(connection)
                    dbus_connection_unref(connection)
                    return nil
                }
                return connection
            }
        }
        guard let raw else { throw DBusError(.noServer, "could not connect to the bus") }
        // A library must never take the process down when the bus goes away.
        dbus_connection_set_exit_on_disconnect(raw, 0)
        let name = dbus_bus_get_unique_name(raw).map { String(cString: $0) } ?? ""
        let connection = BusConnection(raw: raw, loop: loop, uniqueName: name)
        dbus_connection_add_filter(raw, messageFilter, Unmanaged.passUnretained(connection).toOpaque(), nil)
        cdbusglib_attach(raw, loop.context)
        return connection
    }

    private init(raw: OpaquePointer, loop: EventLoop, uniqueName: String) {
        self.raw = RawConnection(pointer: raw)
        self.loop = loop
        self.uniqueName = uniqueName
    }

    deinit {
        close()
        dbus_connection_unref(raw.pointer)
    }

    /// Flushes what is queued and closes; later sends are dropped, later calls fail.
    public func close() {
        let wasClosed = state.withLock { state in
            defer { state.closed = true }
            return state.closed
        }
        guard !wasClosed else { return }
        dbus_connection_flush(raw.pointer)
        cdbusglib_detach(raw.pointer)
        // The filter holds an unretained pointer to this object: it must not
        // outlive it, whatever libdbus still dispatches after the close.
        dbus_connection_remove_filter(raw.pointer, messageFilter, Unmanaged.passUnretained(self).toOpaque())
        dbus_connection_close(raw.pointer)
    }

    public var isConnected: Bool { dbus_connection_get_is_connected(raw.pointer) != 0 }

    /// Runs `handler` on the loop once the bus connection is lost.
    public func onDisconnect(_ handler: @escaping @Sendable () -> Void) {
        state.withLock { $0.onDisconnect.append(handler) }
    }

    // MARK: Names

    public enum NameRequestResult: Sendable { case primaryOwner, alreadyOwner, taken }

    /// Asks for a well-known name without queueing for it. Blocks for one round trip.
    public func requestName(_ name: String) throws(DBusError) -> NameRequestResult {
        let result = try DBusError.check { dbus_bus_request_name(raw.pointer, name, CDBUS_NAME_FLAG_DO_NOT_QUEUE, $0) }
        switch result {
        case CDBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER: return .primaryOwner
        case CDBUS_REQUEST_NAME_REPLY_ALREADY_OWNER: return .alreadyOwner
        default: return .taken
        }
    }

    // MARK: Incoming buffers

    /// Bounds what libdbus itself holds of incoming messages: once the
    /// messages read and not yet released add up to `bytes`, it stops reading
    /// the socket until some are released. Without it libdbus reads ahead up
    /// to 63 MiB, so a few concurrent calls of tens of MiB each (which the
    /// bus delivers) pass the unit's 128 MiB MemoryMax before any handler sees one. A
    /// message larger than `bytes` is still read whole (libdbus cannot refuse
    /// it without dropping the whole connection: `set_max_message_size`
    /// disconnects), but then alone. Messages a handler keeps (a call in
    /// flight) count too: `bytes` must stay above what the service may keep.
    public func limitBufferedIncoming(bytes: Int) {
        dbus_connection_set_max_received_size(raw.pointer, bytes)
    }

    /// What `limitBufferedIncoming` set (libdbus's default is 63 MiB).
    public var bufferedIncomingLimit: Int { dbus_connection_get_max_received_size(raw.pointer) }

    // MARK: Dispatch

    /// Routes one incoming message; runs on the loop's thread inside libdbus's dispatch.
    fileprivate func route(_ message: Message) -> DBusHandlerResult {
        switch message.kind {
        case .methodCall:
            routeMethodCall(message)
            return DBUS_HANDLER_RESULT_HANDLED
        case .signal:
            if message.interface == "org.freedesktop.DBus.Local", message.member == "Disconnected" {
                let handlers = state.withLock { $0.onDisconnect }
                for handler in handlers { handler() }
                return DBUS_HANDLER_RESULT_HANDLED
            }
            return routeSignal(message)
        default:
            return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
        }
    }
}

/// libdbus's filter for every connection: hands each message to its
/// `BusConnection` (the user data). One function, so that `close()` can
/// remove exactly what `connect` added.
private let messageFilter: DBusHandleMessageFunction = { _, message, userData in
    let connection = Unmanaged<BusConnection>.fromOpaque(userData!).takeUnretainedValue()
    return connection.route(Message(retaining: message!))
}

/// libdbus connections are thread-safe; the pointer may cross threads.
struct RawConnection: @unchecked Sendable {
    let pointer: OpaquePointer
}
