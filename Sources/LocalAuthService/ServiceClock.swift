import DBusCore

/// Time, as the components read it and wait on it: the Evaluator's scan
/// and queue timeouts and fairness, the rights' authorization lifetime.
/// One seam for all of them, so a unit test drives time with one fake
/// (Tests/LocalAuthServiceTests/Fakes/FakeClock.swift) instead of sleeping.
@ServiceActor
protocol ServiceClock: AnyObject {
    var now: ContinuousClock.Instant { get }
    /// Runs `work` after `seconds`, unless cancelled first.
    func after(_ seconds: Double, _ work: @escaping @ServiceActor () -> Void) -> any ServiceTimer
}

@ServiceActor
protocol ServiceTimer {
    func cancel()
}

/// The real clock, and timers on the service's loop.
@ServiceActor
final class EventLoopClock: ServiceClock {
    var now: ContinuousClock.Instant { .now }

    func after(_ seconds: Double, _ work: @escaping @ServiceActor () -> Void) -> any ServiceTimer {
        EventLoopTimers.after(seconds, work)
    }
}

extension EventLoop.Timer: ServiceTimer {}
