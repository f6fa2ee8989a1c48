import DBusCore
import LocalAuthShared

/// What an operation tells the gate about opening its reader once its turn came.
struct ReaderOpening {
    /// When opening must have succeeded; nil: within the scan timeout.
    var until: ContinuousClock.Instant? = nil
    /// Cancels the opening (and the retries while another program holds the device).
    let cancellable: Cancellable
    /// Why the operation ended early, if it did: that error wins over the reader's.
    let interruption: @ServiceActor () -> Interruption?
    /// Another program holds the device: the open is retried.
    let busy: @ServiceActor () -> Void
}

/// Opens a reader for one operation: libfprint's (LibfprintOpener) in the
/// service, a fake in the unit tests. Throws the caller's error when it cannot.
@ServiceActor
protocol ReaderOpener {
    func open(_ reader: Readers.Identity, _ opening: ReaderOpening) async throws(ServiceError) -> any ReaderSession
}

/// The one way an operation holds a reader, whichever operation and
/// contract: a verify (the Verifier), an enrollment (Enrollment), a chip's
/// maintenance (`withReader`: the Enroller's deletes and lists, fprintd's).
/// `begin` is the sequence all of them follow: the turn in the reader queue
/// (`SensorQueue`) under a time limit on the service clock, the operation's
/// own checks after the wait, the device opened, and both given back
/// together when the hold ends.
@ServiceActor
final class ReaderGate {
    /// Who holds the reader and who waits.
    let queue: SensorQueue
    private let opener: any ReaderOpener
    /// The queue's time limits run on it.
    private let clock: any ServiceClock

    init(queue: SensorQueue, opener: any ReaderOpener, clock: any ServiceClock = EventLoopClock()) {
        self.queue = queue
        self.opener = opener
        self.clock = clock
    }

    /// Waits for `ticket`'s turn at most `seconds`; `timedOut` runs if the
    /// limit passes first and must withdraw the ticket (directly, or through
    /// the call it belongs to). With the turn, `checks` runs the operation's
    /// own checks after the wait and names the reader; then the reader is
    /// opened (`opening`; its error in the operation's words: `notOpened`).
    /// If either throws, the turn is given back. nil: no turn (withdrawn,
    /// timed out, closed for sleep). `ReaderHold.end()` gives back the device,
    /// then the turn.
    func begin<Failure: Error>(
        for ticket: SensorQueue.Ticket, within seconds: Double, timedOut: @escaping @ServiceActor () -> Void,
        checks: @ServiceActor () async throws(Failure) -> Readers.Identity,
        opening: ReaderOpening, notOpened: (ServiceError) -> Failure
    ) async throws(Failure) -> ReaderHold? {
        let limit = clock.after(seconds, timedOut)
        let acquired = await queue.acquire(ticket)
        limit.cancel()
        guard acquired else { return nil }
        do throws(Failure) {
            let identity = try await checks()
            ticket.reader = identity
            do throws(ServiceError) {
                return ReaderHold(session: try await opener.open(identity, opening), queue: queue)
            } catch {
                throw notOpened(error)
            }
        } catch {
            queue.release()
            throw error
        }
    }

    // MARK: Holding a reader for an operation that is not a scan

    /// Runs `body` with reader `identity` held for one operation of the call
    /// `record` (a chip's maintenance): `begin`, with the queue's limit
    /// `readerQueueWait` and the call's end as its checks. `failedToOpen`
    /// says the queue's and the opening's errors in the body's contract's
    /// words. `body` runs on the loop, as the session it is given lives there.
    func withReader<T, Failure: Error>(
        _ identity: Readers.Identity, for record: CallRecord, uid: UInt32,
        _ body: @ServiceActor (any ReaderSession) async throws(Failure) -> T,
        failedToOpen: (ServiceError) -> Failure
    ) async throws(Failure) -> T {
        let ticket = SensorQueue.Ticket(uid: uid, purpose: .readerMaintenance)
        ticket.reader = identity
        ticket.interrupt = { reason in record.interrupt(reason) }
        let hold: ReaderHold
        do throws(ServiceError) {
            let begun = try await begin(
                for: ticket, within: ServiceLimits.readerQueueWait, timedOut: { [queue] in queue.withdraw(ticket) },
                checks: { () throws(ServiceError) -> Readers.Identity in
                    try record.checkNotEnded()
                    return identity
                },
                opening: ReaderOpening(cancellable: record.cancellable, interruption: { record.interruption }, busy: {}),
                notOpened: { $0 })
            guard let begun else { throw record.interruption?.error ?? Interruption.queueTimedOut.error }
            hold = begun
        } catch {
            throw failedToOpen(error)
        }
        defer { hold.end() }
        return try await body(hold.session)
    }

    /// `withReader` for a body in LocalAuth's own errors.
    func withReader<T>(
        _ identity: Readers.Identity, for record: CallRecord, uid: UInt32,
        _ body: @ServiceActor (any ReaderSession) async throws(ServiceError) -> T
    ) async throws(ServiceError) -> T {
        try await withReader(identity, for: record, uid: uid, body, failedToOpen: { $0 })
    }
}

/// A reader held for one operation (`ReaderGate.begin`): the opened session
/// and the turn in the queue, given back together.
@ServiceActor
struct ReaderHold {
    let session: any ReaderSession
    fileprivate let queue: SensorQueue

    /// Gives back the device, then the turn.
    func end() {
        session.release()
        queue.release()
    }
}
