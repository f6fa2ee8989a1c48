/// Suspend and resume as one ordered state machine (issue 20, item 3).
///
/// logind's `PrepareForSleep(true)` must end every scan and enrollment and
/// close every reader *before* the delay inhibitor is released; a
/// `PrepareForSleep(false)` may arrive while that close still runs (a
/// suspend that failed, or one that ran past `InhibitDelayMaxSec`). The
/// phases say what holds at each moment, so no order of signals can leave
/// the service without a reader or without an inhibitor:
///
///     awake ──true──▶ closing ──closed──▶ asleep ──false──▶ awake
///                       │  ▲                 (release)      (take)
///                  false│  │true
///                       ▼  │
///                    closing(resumed) ──closed──▶ awake (inhibitor kept)
///
/// Pure logic: `SleepCoordinator` runs the actions in order.
struct SleepCycle: Equatable {
    enum Phase: Equatable {
        case awake
        /// Operations are ending and readers closing; `resumed`: a
        /// PrepareForSleep(false) came meanwhile (the inhibitor is kept).
        case closing(resumed: Bool)
        /// Readers closed, the inhibitor released: logind may suspend.
        case asleep
    }

    enum Event: Equatable {
        case prepareForSleep(Bool)
        /// `closeReaders` finished: no operation runs, every reader is closed.
        case readersClosed
    }

    enum Action: Equatable {
        /// Ends every operation holding or waiting for a reader, and refuses new ones.
        case endReaderWork
        case closeReaders
        case releaseInhibitor
        case takeInhibitor
        /// Readers may be offered again (new operations open them on demand).
        case offerReaders
    }

    private(set) var phase: Phase = .awake

    /// Whether readers are offered: only while awake, never while closing.
    var offersReaders: Bool { phase == .awake }

    mutating func handle(_ event: Event) -> [Action] {
        switch (phase, event) {
        case (.awake, .prepareForSleep(true)):
            phase = .closing(resumed: false)
            return [.endReaderWork, .closeReaders]
        case (.closing, .prepareForSleep(true)):
            // Going to sleep again before the close ended: release once it has.
            phase = .closing(resumed: false)
            return []
        case (.closing, .prepareForSleep(false)):
            // The inhibitor was never released: keep it, and offer the
            // readers once the close has ended (never a half-closed reader).
            phase = .closing(resumed: true)
            return []
        case (.closing(resumed: true), .readersClosed):
            phase = .awake
            return [.takeInhibitor, .offerReaders]
        case (.closing(resumed: false), .readersClosed):
            phase = .asleep
            return [.releaseInhibitor]
        case (.asleep, .prepareForSleep(false)):
            phase = .awake
            return [.takeInhibitor, .offerReaders]
        case (.awake, .prepareForSleep(false)), (.asleep, .prepareForSleep(true)),
             (.awake, .readersClosed), (.asleep, .readersClosed):
            return []
        }
    }
}

/// What the sleep cycle acts on: the readers and logind. The service gives
/// the real ones; the unit tests give fakes.
@ServiceActor
protocol SleepSeams {
    func endReaderWork()
    /// Returns once no operation runs on any reader and every reader is closed.
    func closeReaders() async
    func releaseInhibitor()
    func takeInhibitor() async
    func offerReaders()
}

/// Runs `SleepCycle`'s actions one after another, in the order the events
/// asked for them: an action never starts before the one before it ended.
@ServiceActor
final class SleepCoordinator {
    private(set) var cycle = SleepCycle()
    private var pending: [SleepCycle.Action] = []
    private var running = false
    private let seams: any SleepSeams
    /// Starts the drain as a task (the service's task group; a plain Task in tests).
    private let spawn: @ServiceActor (@escaping @ServiceActor () async -> Void) -> Void

    init(seams: any SleepSeams, spawn: @escaping @ServiceActor (@escaping @ServiceActor () async -> Void) -> Void) {
        self.seams = seams
        self.spawn = spawn
    }

    var offersReaders: Bool { cycle.offersReaders }

    /// logind's PrepareForSleep (already checked for its sender).
    func prepareForSleep(_ sleeping: Bool) {
        enqueue(cycle.handle(.prepareForSleep(sleeping)))
    }

    private func enqueue(_ actions: [SleepCycle.Action]) {
        // Ending the operations cannot wait for a task: it is done at once,
        // so no scan outlives the signal by even one turn of the loop.
        for action in actions where action == .endReaderWork { seams.endReaderWork() }
        pending += actions.filter { $0 != .endReaderWork }
        guard !running, !pending.isEmpty else { return }
        running = true
        spawn { [self] in await drain() }
    }

    private func drain() async {
        while !pending.isEmpty {
            let action = pending.removeFirst()
            switch action {
            case .endReaderWork: seams.endReaderWork()
            case .closeReaders:
                await seams.closeReaders()
                pending += cycle.handle(.readersClosed)
            case .releaseInhibitor: seams.releaseInhibitor()
            case .takeInhibitor: await seams.takeInhibitor()
            case .offerReaders: seams.offerReaders()
            }
        }
        running = false
    }
}
