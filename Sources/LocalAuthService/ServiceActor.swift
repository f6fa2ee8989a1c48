import DBusCore

/// The isolation domain of the whole service: one thread, the one that runs
/// the process's default GLib main context.
///
/// libfprint, polkit's GDBus proxy and our libdbus connection all deliver their
/// callbacks on that thread (see `EventLoop`), so service state is only ever
/// touched there: no locks, and C callbacks re-enter Swift with `assumeIsolated`.
@globalActor
public actor ServiceActor {
    public static let shared = ServiceActor()
    public nonisolated var unownedExecutor: UnownedSerialExecutor {
        EventLoop.processDefault.asUnownedSerialExecutor()
    }
}

extension ServiceActor {
    /// Debug builds check, after an await, that service code resumed on the
    /// loop's thread (where libfprint, polkit and libdbus may be touched):
    /// a task that lost the loop's executor would otherwise run there silently.
    @inline(__always)
    static func assertOnLoop(_ place: StaticString = #function) {
        assert(EventLoop.processDefault.isCurrent, "service code resumed off the loop thread in \(place)")
    }

    /// Runs `body` as service-isolated code from a C callback that libfprint,
    /// polkit or libdbus invoked on the loop thread. Traps anywhere else.
    public static func assumeIsolated<T>(_ body: @ServiceActor () throws -> T) rethrows -> T {
        shared.preconditionIsolated()
        // The check above proves we are on the actor's executor, which is what
        // the isolation annotation promises; strip it to call synchronously.
        return try withoutActuallyEscaping(body) { isolatedBody in
            try unsafeBitCast(isolatedBody, to: (() throws -> T).self)()
        }
    }
}

extension DiscardingTaskGroup {
    /// A child task on the loop that starts at once, on the caller's turn of
    /// the loop, until its first suspension (`addImmediateTask`, Swift 6.2,
    /// SE-0472). Swift 6.0 (Debian 13's) has no such thing: there the task is
    /// enqueued on the loop and starts at its next turn, in the same order.
    mutating func addTaskStartingOnLoop(_ operation: sending @escaping @ServiceActor () async -> Void) {
        #if compiler(>=6.2)
        addImmediateTask(operation: operation)
        #else
        addTask(operation: operation)
        #endif
    }
}
