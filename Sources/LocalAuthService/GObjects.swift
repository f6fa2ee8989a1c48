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
@ServiceActor
func glibAsync<T: Sendable>(
    _ start: (GAsyncReadyCallback, UnsafeMutableRawPointer) -> Void,
    finish: @escaping @ServiceActor (OpaquePointer) -> Result<T, GLibError>
) async throws(GLibError) -> T {
    let result: Result<T, GLibError> = await withCheckedContinuation { continuation in
        let box = AsyncCompletion { asyncResult in
            continuation.resume(returning: ServiceActor.assumeIsolated { finish(asyncResult) })
        }
        start({ _, asyncResult, userData in
            Unmanaged<AsyncCompletion>.fromOpaque(userData!).takeRetainedValue().complete(asyncResult!)
        }, Unmanaged.passRetained(box).toOpaque())
    }
    return try result.get()
}

private final class AsyncCompletion {
    let complete: (OpaquePointer) -> Void
    init(_ complete: @escaping (OpaquePointer) -> Void) { self.complete = complete }
}
