internal import CGLib

/// Owns one reference to a GObject (FpPrint, FpDevice, GCancellable, …).
/// Only ever used on the service's loop thread; `@unchecked Sendable` lets it
/// pass through continuations that resume on that same thread.
final class GObjectRef: @unchecked Sendable {
    let pointer: OpaquePointer

    /// Takes over a reference the caller owns.
    init(taking pointer: OpaquePointer) { self.pointer = pointer }

    /// Adds a reference of its own.
    init(retaining pointer: OpaquePointer) {
        cglib_object_ref(UnsafeMutableRawPointer(pointer))
        self.pointer = pointer
    }

    deinit { cglib_object_unref(UnsafeMutableRawPointer(pointer)) }

    func cast<T>(_: T.Type = T.self) -> UnsafeMutablePointer<T> {
        UnsafeMutableRawPointer(pointer).assumingMemoryBound(to: T.self)
    }
}

/// A GCancellable for one operation.
final class Cancellable: @unchecked Sendable {
    let ref: GObjectRef
    init() { ref = GObjectRef(taking: OpaquePointer(g_cancellable_new())) }
    var raw: UnsafeMutablePointer<GCancellable> { ref.cast() }
    func cancel() { g_cancellable_cancel(raw) }
    var isCancelled: Bool { g_cancellable_is_cancelled(raw) != 0 }
}

/// Bridges one GLib async call (callback + `_finish`) to Swift `async`.
/// `start` receives the GAsyncReadyCallback and its user data; `finish` runs in
/// the callback with the GAsyncResult and turns it into a Swift result.
///
/// Every call in progress is known (`PendingGLibCalls`), so that a shutdown
/// can give up on an operation whose C side never finishes (a reader that
/// ignores its cancellation): the awaiting task then ends with
/// `GLibError.abandoned`, and the late callback, if it ever comes, is dropped.
@ServiceActor
func glibAsync<T: Sendable>(
    _ start: (GAsyncReadyCallback, UnsafeMutableRawPointer) -> Void,
    finish: @escaping @ServiceActor (OpaquePointer) -> Result<T, GLibError>
) async throws(GLibError) -> T {
    let result: Result<T, GLibError> = await withCheckedContinuation { continuation in
        let pending = PendingGLibCalls.Waiter(
            completed: { asyncResult in continuation.resume(returning: finish(asyncResult)) },
            abandoned: { continuation.resume(returning: .failure(.abandoned)) })
        PendingGLibCalls.add(pending)
        start({ _, asyncResult, userData in
            let call = Unmanaged<PendingGLibCalls.Waiter>.fromOpaque(userData!).takeRetainedValue()
            ServiceActor.assumeIsolated { call.complete(asyncResult!) }
        }, Unmanaged.passRetained(pending).toOpaque())
    }
    return try result.get()
}

/// The GLib async calls awaited now. Each resumes its task exactly once:
/// by its callback, or by `abandonAll` at a stuck shutdown.
@ServiceActor
enum PendingGLibCalls {
    @ServiceActor
    final class Waiter {
        private var completed: ((OpaquePointer) -> Void)?
        private var abandoned: (() -> Void)?

        init(completed: @escaping (OpaquePointer) -> Void, abandoned: @escaping () -> Void) {
            self.completed = completed
            self.abandoned = abandoned
        }

        func complete(_ asyncResult: OpaquePointer) {
            PendingGLibCalls.calls.removeValue(forKey: ObjectIdentifier(self))
            let resume = completed
            completed = nil
            abandoned = nil
            resume?(asyncResult)
        }

        fileprivate func abandon() {
            let resume = abandoned
            completed = nil
            abandoned = nil
            resume?()
        }
    }

    private static var calls: [ObjectIdentifier: Waiter] = [:]

    static var count: Int { calls.count }

    fileprivate static func add(_ call: Waiter) { calls[ObjectIdentifier(call)] = call }

    /// Ends every awaiting task with `GLibError.abandoned`; the C operations
    /// keep their user data until their callbacks come, which then do nothing.
    static func abandonAll() {
        let stuck = calls.values
        calls.removeAll()
        for call in stuck { call.abandon() }
    }
}
