internal import CDBus
import Dispatch

// Sending: messages, signals, and method calls whose replies are awaited
// (async, or blocking a thread that is not the loop's), each reply handed
// back on the loop's thread through its pending call.
extension BusConnection {
    /// Queues `message` for sending; from any thread.
    public func send(_ message: Message) {
        guard isConnected else { return }
        dbus_connection_send(raw.pointer, message.raw, nil)
    }

    /// Emits a signal; with `destination`, only that connection receives it.
    public func emit(
        path: ObjectPath, interface: String, member: String, arguments: [DBusValue],
        destination: String? = nil
    ) throws(DBusError) {
        send(
            try Message.signal(
                path: path, interface: interface, member: member,
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
    public func call(
        destination: String, path: ObjectPath, interface: String, member: String,
        arguments: [DBusValue] = [], timeout: Double? = nil,
        isolation: isolated (any Actor)? = #isolation
    ) async throws(DBusError) -> [DBusValue] {
        let message = try Message.methodCall(
            destination: destination, path: path, interface: interface,
            member: member, arguments: arguments)
        return try await call(message, timeout: timeout).result()
    }

    /// Sends a method call and returns the reply message (which may be an error reply).
    public func call(
        _ message: Message, timeout: Double? = nil,
        isolation: isolated (any Actor)? = #isolation
    ) async throws(DBusError) -> Message {
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
    public func callBlocking(
        destination: String, path: ObjectPath, interface: String, member: String,
        arguments: [DBusValue] = [], timeout: Double? = nil
    ) throws(DBusError) -> [DBusValue] {
        let message = try Message.methodCall(
            destination: destination, path: path, interface: interface,
            member: member, arguments: arguments)
        return try callBlocking(message, timeout: timeout).result()
    }

    /// The synchronous form of `call(_:timeout:)`: the reply message (which
    /// may be an error reply). Never call it on the loop's own thread.
    public func callBlocking(_ message: Message, timeout: Double? = nil) throws(DBusError) -> Message {
        precondition(!loop.isCurrent, "a blocking call on the event loop's thread would deadlock")
        let outcome = BlockingOutcome()
        loop.post {
            self.sendWithReply(message, timeout: timeout) { result in
                outcome.result = result
                outcome.done.signal()
            }
        }
        outcome.done.wait()
        return try outcome.result!.get()
    }

    /// On the loop's thread: sends and arranges for `completion` to run there with the reply.
    private func sendWithReply(
        _ message: Message, timeout: Double?,
        completion: @escaping @Sendable (Result<Message, DBusError>) -> Void
    ) {
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
        dbus_pending_call_set_notify(
            pending, notify, Unmanaged.passRetained(box).toOpaque(),
            { userData in
                Unmanaged<PendingBox>.fromOpaque(userData!).release()
            })
        // A reply that completed before the notify function was set (possible
        // when another thread read the socket) is handled here instead.
        if dbus_pending_call_get_completed(pending) != 0 { box.finish(pending) }
    }
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
