import DBusCore

/// Timers on the service's loop.
enum EventLoopTimers {
    static func after(_ seconds: Double, _ work: @escaping @ServiceActor () -> Void) -> EventLoop.Timer {
        EventLoop.processDefault.schedule(after: seconds) {
            ServiceActor.assumeIsolated { work() }
        }
    }
}
