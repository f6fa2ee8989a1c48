import DBusCore
import LocalAuthShared

/// A verify or enroll of fprintd's contract, from its Start to its Stop:
/// fprintd's front-end of the one verify operation (Verifier.verify,
/// Evaluation/Verification.swift) and of the one enroll operation
/// (Enrollment, Enrollment/Enrollment.swift).
///
/// Sharing the reader: a Claim opens the reader and keeps it open until the
/// claim ends, as fprintd's does, but it holds no turn in the service's one
/// queue (SensorQueue, fair between users), so an app's evaluation still runs
/// while a lock screen sits claimed (FprintdDevice.swift, docs/FPRINTD.md).
/// VerifyStart and EnrollStart take their turn in the queue as every
/// operation does, then the reader (through the gate: already open for the
/// claim, it costs no open); both before the call answers, so "started"
/// means the reader is open and waiting for a finger, as it is in fprintd,
/// and a turn that cannot be had is the call's error. The operation holds
/// its first scan until Start has answered. The turn is given back with the
/// operation's final status (not at VerifyStop). Sleep and the lid end the
/// operation through its queue ticket, as they end an evaluation.
@ServiceActor
final class FprintdOperation: ReaderCall {
    enum Kind { case verify, enroll }
    let kind: Kind
    let cancellable = Cancellable()
    /// Its place in the reader queue; sleep and the lid interrupt through it.
    let ticket: SensorQueue.Ticket
    private var done = false
    private var waiters: [CheckedContinuation<Void, Never>] = []
    /// The reader was unplugged: the final status says "disconnected".
    var disconnected = false
    /// No finger came in time, or the service ended it (sleep, the lid): the
    /// final status is an error, not a no-match.
    var timedOut = false
    /// Sleep or the lid ended it (Start's error says so, if it had not started).
    var interruption: Interruption?
    /// No turn in the reader queue within Start's time: another operation kept it.
    private(set) var waitedTooLong = false
    private weak var queue: SensorQueue?

    /// How long Start waits for its turn and for the device to open: less
    /// than a D-Bus client's default reply timeout (25 s).
    static let startWait = 20.0

    init(_ kind: Kind, uid: UInt32, purpose: SensorQueue.Purpose, reader: Readers.Identity, queue: SensorQueue) {
        self.kind = kind
        self.queue = queue
        ticket = SensorQueue.Ticket(uid: uid, purpose: purpose)
        ticket.reader = reader
        ticket.interrupt = { [weak self] reason in self?.interrupt(reason) }
    }

    /// Stop, Release, the claimer gone, SIGTERM.
    func cancel() {
        cancellable.cancel()
        queue?.withdraw(ticket)
        // A first scan held for Start's answer ends now (it sees the cancel).
        answeredStart()
    }

    func readerGone() {
        disconnected = true
        cancel()
    }

    /// Sleep or the lid ends the operation: the client hears an error status.
    func interrupt(_ reason: Interruption) {
        if interruption == nil { interruption = reason }
        timedOut = true
        cancel()
    }

    // MARK: As the one verify and enroll operations see it

    var biometricInterruption: Interruption? { interruption }

    /// Every end of a claim cancels the operation (`cancel`).
    var hasEnded: Bool { cancellable.isCancelled }

    /// The operation ends it early: no finger in time is an error status; no
    /// turn in the queue in time, Start's "busy".
    func stopBiometrics(_ reason: Interruption) {
        guard reason == .queueTimedOut else { return interrupt(reason) }
        waitedTooLong = true
        queue?.withdraw(ticket)
    }

    // MARK: Start's answer

    /// Resumed once: the operation has the reader open (nil), or Start's error.
    private var startWaiter: CheckedContinuation<ServiceError?, Never>?
    private var startOutcome: ServiceError??
    /// The operation's first scan, held until Start has answered (and
    /// VerifyFingerSelected gone out).
    private var firstScan: CheckedContinuation<Void, Never>?
    private var answered = false

    /// Returns once the operation has opened the reader (nil), or with Start's error.
    func started() async -> ServiceError? {
        if let startOutcome { return startOutcome }
        return await withCheckedContinuation { startWaiter = $0 }
    }

    /// The reader is open (nil), or the operation ended before that (Start's
    /// error); the first word counts.
    func start(_ outcome: ServiceError?) {
        guard startOutcome == nil else { return }
        startOutcome = .some(outcome)
        startWaiter?.resume(returning: outcome)
        startWaiter = nil
    }

    /// Whether Start answered that the operation runs (its final status is then due).
    var hasStarted: Bool { startOutcome.map { $0 == nil } ?? false }

    /// The reader is open: Start may answer; the first scan waits for `answeredStart`.
    func readerReady() async {
        start(nil)
        guard !answered else { return }
        await withCheckedContinuation { firstScan = $0 }
    }

    /// Start has answered: the scans may begin.
    func answeredStart() {
        answered = true
        firstScan?.resume()
        firstScan = nil
    }

    // MARK: The end

    /// Whether the scans have ended and the reader is given back.
    var isFinished: Bool { done }

    /// Returns once the scans have ended and the reader is given back (at once if they had).
    func finished() async {
        guard !done else { return }
        await withCheckedContinuation { waiters.append($0) }
    }

    func finish() {
        done = true
        for waiter in waiters { waiter.resume() }
        waiters = []
    }
}
