internal import CDBus
internal import CDBusGLib
import Dispatch
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
    private let raw: RawConnection
    private let state = Mutex(State())

    private struct State {
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

    /// An exported object: its handler and the largest call body it takes.
    struct Export {
        var maximumBodyBytes: Int
        var oversized: (@Sendable (IncomingCall) -> Void)?
        var handler: MethodHandler
    }

    struct Subscription {
        var sender: String?
        var interface: String
        var member: String?
        var path: String?
        var handler: SignalHandler
    }

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

    // MARK: Sending

    /// Queues `message` for sending; from any thread.
    public func send(_ message: Message) {
        guard isConnected else { return }
        dbus_connection_send(raw.pointer, message.raw, nil)
    }

    /// Emits a signal; with `destination`, only that connection receives it.
    public func emit(path: ObjectPath, interface: String, member: String, arguments: [DBusValue],
                     destination: String? = nil) throws(DBusError) {
        send(try Message.signal(path: path, interface: interface, member: member,
                                arguments: arguments, destination: destination))
    }

    /// Calls a method and returns its reply's values, or throws its error.
    /// `timeout` nil means libdbus's default (25 s); `.infinity` waits for ever.
    ///
    /// The async methods here take the caller's isolation (`isolation:`,
    /// `#isolation` by default): they start on the caller's executor, so code
    /// on the loop's own actor (the service) sends at once from the loop
    /// thread instead of first hopping to Swift's global executor. (Where the
    /// task resumes after the reply: see `EventLoop`.) This is what Swift
    /// 6.2's `nonisolated(nonsending)` says, spelled so that Swift 6.0
    /// (Debian 13's) compiles it too.
    public func call(destination: String, path: ObjectPath, interface: String, member: String,
                     arguments: [DBusValue] = [], timeout: Double? = nil,
                     isolation: isolated (any Actor)? = #isolation) async throws(DBusError) -> [DBusValue] {
        let message = try Message.methodCall(destination: destination, path: path, interface: interface,
                                             member: member, arguments: arguments)
        return try await call(message, timeout: timeout).result()
    }

    /// Sends a method call and returns the reply message (which may be an error reply).
    public func call(_ message: Message, timeout: Double? = nil,
                     isolation: isolated (any Actor)? = #isolation) async throws(DBusError) -> Message {
        let result: Result<Message, DBusError> = await withCheckedContinuation { continuation in
            let start: @Sendable () -> Void = {
                self.sendWithReply(message, timeout: timeout) { continuation.resume(returning: $0) }
            }
            if loop.isCurrent { start() } else { loop.post(start) }
        }
        return try result.get()
    }

    /// The synchronous form of `call`, for synchronous APIs such as
    /// `canEvaluatePolicy`. Never call it on the loop's own thread.
    public func callBlocking(destination: String, path: ObjectPath, interface: String, member: String,
                             arguments: [DBusValue] = [], timeout: Double? = nil) throws(DBusError) -> [DBusValue] {
        precondition(!loop.isCurrent, "a blocking call on the event loop's thread would deadlock")
        let message = try Message.methodCall(destination: destination, path: path, interface: interface,
                                             member: member, arguments: arguments)
        let outcome = BlockingOutcome()
        loop.post {
            self.sendWithReply(message, timeout: timeout) { result in
                outcome.result = result
                outcome.done.signal()
            }
        }
        outcome.done.wait()
        return try outcome.result!.get().result()
    }

    /// On the loop's thread: sends and arranges for `completion` to run there with the reply.
    private func sendWithReply(_ message: Message, timeout: Double?,
                               completion: @escaping @Sendable (Result<Message, DBusError>) -> Void) {
        let milliseconds: Int32
        switch timeout {
        case nil: milliseconds = CDBUS_TIMEOUT_USE_DEFAULT
        case let seconds? where seconds.isInfinite || seconds > 2_000_000: milliseconds = CDBUS_TIMEOUT_INFINITE
        case let seconds?: milliseconds = Int32(max(1, (seconds * 1000).rounded()))
        }
        var pending: OpaquePointer? = nil
        guard isConnected,
              dbus_connection_send_with_reply(raw.pointer, message.raw, &pending, milliseconds) != 0,
              let pending
        else {
            completion(.failure(DBusError(.disconnected, "not connected to the bus")))
            return
        }
        let box = PendingBox(completion)
        let notify: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Void = { pending, userData in
            Unmanaged<PendingBox>.fromOpaque(userData!).takeUnretainedValue().finish(pending!)
        }
        dbus_pending_call_set_notify(pending, notify, Unmanaged.passRetained(box).toOpaque(), { userData in
            Unmanaged<PendingBox>.fromOpaque(userData!).release()
        })
        // A reply that completed before the notify function was set (possible
        // when another thread read the socket) is handled here instead.
        if dbus_pending_call_get_completed(pending) != 0 { box.finish(pending) }
    }

    // MARK: Receiving

    /// Serves method calls to `path` with `handler` (on the loop's thread).
    ///
    /// `maximumBodyBytes` is the largest call body the object takes
    /// (`Message.approximateBodySize`): a larger call never reaches `handler`,
    /// so nothing decodes it, keeps it or echoes it. It is answered by
    /// `oversized` (a contract's own error name), or else with
    /// org.freedesktop.DBus.Error.LimitsExceeded; either way the message is
    /// released at once. Every object states its bound: there is no default.
    public func export(_ path: ObjectPath, maximumBodyBytes: Int,
                       oversized: (@Sendable (IncomingCall) -> Void)? = nil, handler: @escaping MethodHandler) {
        let export = Export(maximumBodyBytes: maximumBodyBytes, oversized: oversized, handler: handler)
        state.withLock { $0.objects[path.rawValue] = export }
    }

    /// Stops serving `path`: its calls get UnknownObject again, and its
    /// parent's Introspect no longer lists it (a device that was unplugged).
    public func unexport(_ path: ObjectPath) {
        _ = state.withLock { $0.objects.removeValue(forKey: path.rawValue) }
    }

    /// The paths served now, sorted.
    public var exportedPaths: [String] { state.withLock { $0.objects.keys.sorted() } }

    /// Bounds what libdbus itself holds of incoming messages: once the
    /// messages read and not yet released add up to `bytes`, it stops reading
    /// the socket until some are released. Without it libdbus reads ahead up
    /// to 63 MiB, so a few concurrent calls of tens of MiB each (which the
    /// bus delivers) pass a 64 MiB MemoryMax before any handler sees one. A
    /// message larger than `bytes` is still read whole (libdbus cannot refuse
    /// it without dropping the whole connection: `set_max_message_size`
    /// disconnects), but then alone. Messages a handler keeps (a call in
    /// flight) count too: `bytes` must stay above what the service may keep.
    public func limitBufferedIncoming(bytes: Int) {
        dbus_connection_set_max_received_size(raw.pointer, bytes)
    }

    /// What `limitBufferedIncoming` set (libdbus's default is 63 MiB).
    public var bufferedIncomingLimit: Int { dbus_connection_get_max_received_size(raw.pointer) }

    /// Calls `handler` on the loop for each matching signal, after asking the
    /// bus to route them here. Unicast signals addressed to us need no match rule;
    /// pass `addMatchRule: false` for those.
    @discardableResult
    public func subscribe(sender: String?, interface: String, member: String?, path: String? = nil,
                          extraMatch: String = "", addMatchRule: Bool = true,
                          isolation: isolated (any Actor)? = #isolation,
                          handler: @escaping SignalHandler) async throws(DBusError) -> UInt64 {
        let id = register(Subscription(sender: sender, interface: interface, member: member, path: path, handler: handler))
        guard addMatchRule else { return id }
        var rule = "type='signal',interface='\(interface)'"
        if let sender { rule += ",sender='\(sender)'" }
        if let member { rule += ",member='\(member)'" }
        if let path { rule += ",path='\(path)'" }
        rule += extraMatch
        _ = try await call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                           interface: "org.freedesktop.DBus", member: "AddMatch", arguments: [.string(rule)])
        return id
    }

    /// Calls `handler` for signals addressed to this connection (unicast), which
    /// the bus delivers without a match rule, sent by `sender`. Takes effect at once.
    ///
    /// Anyone on the bus may send a unicast signal to anyone: the sender is
    /// what makes a signal believable. A well-known `sender` matches only its
    /// current owner, which needs `followOwner(of:)` first; until the owner is
    /// known, nothing matches.
    @discardableResult
    public func subscribeUnicast(sender: String, interface: String, member: String?,
                                 handler: @escaping SignalHandler) -> UInt64 {
        register(Subscription(sender: sender, interface: interface, member: member, path: nil, handler: handler))
    }

    // MARK: Following a name's owner

    /// Starts following which connection owns the well-known `name`, so that
    /// signals subscribed from `name` are checked against its real owner.
    /// Blocks for two round trips; never call it on the loop's own thread.
    public func followOwnerBlocking(of name: String) throws(DBusError) {
        guard startFollowing(name) else { return }
        _ = try callBlocking(destination: Self.busDriver, path: "/org/freedesktop/DBus", interface: Self.busDriver,
                             member: "AddMatch", arguments: [.string(Self.ownerMatchRule(name))])
        let seen = state.withLock { $0.ownerChanges[name] ?? 0 }
        let owner: String?
        do {
            owner = try callBlocking(destination: Self.busDriver, path: "/org/freedesktop/DBus", interface: Self.busDriver,
                                     member: "GetNameOwner", arguments: [.string(name)]).first?.string
        } catch where error.name == .nameHasNoOwner {
            owner = nil
        }
        applyOwner(owner, of: name, ifNoChangeSince: seen)
    }

    /// The async form of `followOwnerBlocking(of:)`.
    public func followOwner(of name: String, isolation: isolated (any Actor)? = #isolation) async throws(DBusError) {
        guard startFollowing(name) else { return }
        _ = try await call(destination: Self.busDriver, path: "/org/freedesktop/DBus", interface: Self.busDriver,
                           member: "AddMatch", arguments: [.string(Self.ownerMatchRule(name))])
        let seen = state.withLock { $0.ownerChanges[name] ?? 0 }
        let owner: String?
        do {
            owner = try await call(destination: Self.busDriver, path: "/org/freedesktop/DBus", interface: Self.busDriver,
                                   member: "GetNameOwner", arguments: [.string(name)]).first?.string
        } catch where error.name == .nameHasNoOwner {
            owner = nil
        }
        applyOwner(owner, of: name, ifNoChangeSince: seen)
    }

    /// The unique name that owns `name` now, if it is followed and owned.
    public func owner(of name: String) -> String? {
        state.withLock { $0.owners[name] ?? nil }
    }

    private static func ownerMatchRule(_ name: String) -> String {
        "type='signal',sender='\(busDriver)',interface='\(busDriver)',member='NameOwnerChanged',arg0='\(name)'"
    }

    /// False if `name` is already followed.
    private func startFollowing(_ name: String) -> Bool {
        state.withLock { state in
            guard state.owners[name] == nil else { return false }
            state.owners[name] = .some(nil)
            return true
        }
    }

    private func applyOwner(_ owner: String?, of name: String, ifNoChangeSince seen: UInt64) {
        state.withLock { state in
            // A NameOwnerChanged that arrived meanwhile is at least as new.
            guard (state.ownerChanges[name] ?? 0) == seen else { return }
            state.owners[name] = .some(owner)
        }
    }

    /// NameOwnerChanged from the bus driver for a followed name: the new owner.
    private func noteOwnerChange(_ message: Message) {
        guard message.sender == Self.busDriver, message.interface == Self.busDriver,
              message.member == "NameOwnerChanged" else { return }
        let arguments = message.arguments
        guard arguments.count == 3, let name = arguments[0].string, let newOwner = arguments[2].string else { return }
        state.withLock { state in
            guard state.owners[name] != nil else { return }
            state.ownerChanges[name, default: 0] += 1
            state.owners[name] = .some(newOwner.isEmpty ? nil : newOwner)
        }
    }

    private func register(_ subscription: Subscription) -> UInt64 {
        state.withLock { state in
            let id = state.nextSubscription
            state.nextSubscription += 1
            state.subscriptions[id] = subscription
            return id
        }
    }

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
            noteOwnerChange(message)
            let handlers = state.withLock { state in
                state.subscriptions.values.filter { $0.matches(message, owners: state.owners) }.map(\.handler)
            }
            for handler in handlers { handler(message) }
            return handlers.isEmpty ? DBUS_HANDLER_RESULT_NOT_YET_HANDLED : DBUS_HANDLER_RESULT_HANDLED
        default:
            return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
        }
    }

    private func routeMethodCall(_ message: Message) {
        let call = IncomingCall(message: message, connection: self)
        let path = message.path ?? "/"
        let (export, exported) = state.withLock { ($0.objects[path], Array($0.objects.keys)) }
        if let export {
            // Bounded before anything is decoded (docs/SECURITY.md, "Limits").
            let size = message.approximateBodySize
            guard size <= export.maximumBodyBytes else {
                if let oversized = export.oversized { return oversized(call) }
                return call.fail(DBusError(.limitsExceeded,
                                           "the call's arguments are larger than \(export.maximumBodyBytes) bytes"))
            }
            export.handler(call)
            return
        }
        // Paths above an exported object answer Introspect with their children,
        // so that `busctl tree` and d-feet can walk down to it.
        let children = Set(exported.compactMap { ObjectPath.child(of: path, toward: $0) }).sorted()
        if !children.isEmpty {
            if message.interface == nil || message.interface == "org.freedesktop.DBus.Introspectable",
               message.member == "Introspect" {
                call.reply([.string(Introspection.node(children: children))])
            } else {
                call.fail(DBusError(.unknownMethod, "no method \(message.member ?? "") at \(path)"))
            }
            return
        }
        call.fail(DBusError(.unknownObject, "no object at path \(path)"))
    }
}

/// A method call being served. Reply exactly once with `reply` or `fail`.
public struct IncomingCall: Sendable {
    public let message: Message
    let connection: BusConnection

    public var sender: String { message.sender ?? "" }
    public var interface: String? { message.interface }
    public var member: String { message.member ?? "" }
    public var path: String { message.path ?? "/" }
    public var signature: String { message.signature }
    public var arguments: [DBusValue] { message.arguments }

    /// Replies with `values`; if they cannot be marshalled the caller gets that error.
    public func reply(_ values: [DBusValue] = []) {
        guard message.expectsReply else { return }
        do {
            connection.send(try message.methodReturn(values))
        } catch {
            fail(error)
        }
    }

    public func fail(_ error: DBusError) {
        guard message.expectsReply, let reply = message.errorReply(error) else { return }
        connection.send(reply)
    }
}

/// libdbus's filter for every connection: hands each message to its
/// `BusConnection` (the user data). One function, so that `close()` can
/// remove exactly what `connect` added.
private let messageFilter: DBusHandleMessageFunction = { _, message, userData in
    let connection = Unmanaged<BusConnection>.fromOpaque(userData!).takeUnretainedValue()
    return connection.route(Message(retaining: message!))
}

extension BusConnection.Subscription {
    /// Whether `message` is for this subscription, its sender included: a
    /// match rule only filters broadcasts, and anyone may send a unicast
    /// signal to anyone, so the sender is checked here for every signal.
    /// The bus driver sends as `org.freedesktop.DBus` itself; every other
    /// connection as its unique name, so a well-known `sender` is compared
    /// with its followed owner (`owners`), and matches nothing while unknown.
    func matches(_ message: Message, owners: [String: String?]) -> Bool {
        guard message.interface == interface else { return false }
        if let member, message.member != member { return false }
        if let path, message.path != path { return false }
        guard let sender else { return true }
        guard let actual = message.sender else { return false }
        if sender.hasPrefix(":") || sender == BusConnection.busDriver { return actual == sender }
        guard let owner = owners[sender] ?? nil else { return false }
        return actual == owner
    }
}

extension ObjectPath {
    /// The name of the child of `parent` on the way to `descendant`, if any.
    static func child(of parent: String, toward descendant: String) -> String? {
        let prefix = parent == "/" ? "/" : parent + "/"
        guard descendant.hasPrefix(prefix), descendant != parent else { return nil }
        return descendant.dropFirst(prefix.count).split(separator: "/").first.map(String.init)
    }
}

enum Introspection {
    static let doctype = """
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
        """

    static func node(children: [String]) -> String {
        var xml = doctype + "\n<node>\n"
        xml += "  <interface name=\"org.freedesktop.DBus.Introspectable\">\n"
        xml += "    <method name=\"Introspect\"><arg name=\"xml_data\" type=\"s\" direction=\"out\"/></method>\n"
        xml += "  </interface>\n"
        for child in children { xml += "  <node name=\"\(child)\"/>\n" }
        return xml + "</node>\n"
    }
}

/// libdbus connections are thread-safe; the pointer may cross threads.
private struct RawConnection: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// The completion of one pending call; runs at most once, on the loop's thread.
private final class PendingBox: @unchecked Sendable {
    private var completion: (@Sendable (Result<Message, DBusError>) -> Void)?
    init(_ completion: @escaping @Sendable (Result<Message, DBusError>) -> Void) { self.completion = completion }

    func finish(_ pending: OpaquePointer) {
        guard let completion else { return }
        self.completion = nil
        if let reply = dbus_pending_call_steal_reply(pending) {
            completion(.success(Message(taking: reply)))
        } else {
            completion(.failure(DBusError(.noReply, "no reply")))
        }
        dbus_pending_call_unref(pending)
    }
}

/// Carries a blocking call's result across the semaphore that orders it.
private final class BlockingOutcome: @unchecked Sendable {
    var result: Result<Message, DBusError>?
    let done = DispatchSemaphore(value: 0)
}
