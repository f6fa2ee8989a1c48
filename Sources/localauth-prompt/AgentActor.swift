import DBusCore

/// The isolation domain of localauth-prompt: the main thread, which runs the
/// process's default GLib main context. GTK may only be touched there, and
/// GTK's own loop is that context: our D-Bus connection (DBusCore's
/// `EventLoop.processDefault`) and GTK's windows are served by the one loop
/// that `main.swift` runs, so the program has one loop and one thread.
@globalActor
actor AgentActor {
    static let shared = AgentActor()
    nonisolated var unownedExecutor: UnownedSerialExecutor {
        EventLoop.processDefault.asUnownedSerialExecutor()
    }

    /// Runs `body` as agent-isolated code from a callback that GTK or libdbus
    /// invoked on the loop's thread. Traps anywhere else.
    static func assumeIsolated<T>(_ body: @AgentActor () throws -> T) rethrows -> T {
        shared.preconditionIsolated()
        // The check above proves we are on the actor's executor, which is what
        // the isolation annotation promises; strip it to call synchronously.
        return try withoutActuallyEscaping(body) { isolatedBody in
            try unsafeBitCast(isolatedBody, to: (() throws -> T).self)()
        }
    }
}
