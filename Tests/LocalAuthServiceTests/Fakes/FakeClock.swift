@testable import LocalAuthService

/// A clock the test moves: timers fire when `advance` passes their deadline,
/// never by themselves, so a 30 s scan timeout costs no time.
@ServiceActor
final class FakeClock: ServiceClock {
    private let start = ContinuousClock.now
    private var elapsed: Duration = .zero
    private var timers: [FakeTimer] = []

    var now: ContinuousClock.Instant { start + elapsed }

    func after(_ seconds: Double, _ work: @escaping @ServiceActor () -> Void) -> any ServiceTimer {
        let timer = FakeTimer(deadline: elapsed + .milliseconds(Int64(seconds * 1000)), work: work)
        timers.append(timer)
        return timer
    }

    /// Timers that are armed and not cancelled, by their delay from now.
    var pendingDelays: [Double] {
        timers.filter { !$0.cancelled && !$0.fired }.map { ($0.deadline - elapsed) / .seconds(1) }
    }

    /// Moves time on by `duration`, firing each timer that falls due, in order.
    func advance(by duration: Duration) { advance(by: duration / .seconds(1)) }

    /// Moves time on by `seconds`, firing each timer that falls due, in order.
    func advance(by seconds: Double) {
        elapsed += .milliseconds(Int64(seconds * 1000))
        let due = timers.filter { !$0.cancelled && !$0.fired && $0.deadline <= elapsed }.sorted { $0.deadline < $1.deadline }
        for timer in due {
            timer.fired = true
            timer.work()
        }
        timers.removeAll { $0.cancelled || $0.fired }
    }
}

@ServiceActor
final class FakeTimer: ServiceTimer {
    let deadline: Duration
    let work: @ServiceActor () -> Void
    var cancelled = false
    var fired = false

    init(deadline: Duration, work: @escaping @ServiceActor () -> Void) {
        self.deadline = deadline
        self.work = work
    }

    func cancel() { cancelled = true }
}
