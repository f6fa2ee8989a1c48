internal import CFprint
import DBusCore
import LocalAuthShared

/// The one way a call's operation gets a reader, and the errors a caller
/// gets when it cannot: a turn in the reader queue (`SensorQueue`), the
/// device opened within the scan timeout (retrying while another program
/// holds it: `Readers.acquire`), given back afterwards (closed after the
/// linger). The Evaluator, the Enroller and fprintd's operations go through it
/// (`open` after their own turn in the queue; `withReader` for both).
@ServiceActor
final class ReaderGate {
    private let readers: Readers
    private let queue: SensorQueue
    private let scanTimeout: Double
    /// The queue's time limit for a chip's maintenance runs on it.
    private let clock: any ServiceClock

    init(readers: Readers, queue: SensorQueue, scanTimeout: Double, clock: any ServiceClock = EventLoopClock()) {
        self.clock = clock
        self.readers = readers
        self.queue = queue
        self.scanTimeout = scanTimeout
    }

    /// Opens `identity` for one operation, within the scan timeout (or by
    /// `deadline`: fprintd's Start answers within a D-Bus reply timeout): the
    /// errors a caller gets when it cannot (Readers.acquire).
    func open(
        _ identity: Readers.Identity, until deadline: ContinuousClock.Instant? = nil, cancellable: Cancellable,
        interruption: @ServiceActor () -> Interruption?,
        busy: @ServiceActor () -> Void
    ) async throws(ServiceError) -> Readers.Reader {
        let deadline = deadline ?? ContinuousClock.now + .milliseconds(Int(scanTimeout * 1000))
        do {
            return try await readers.acquire(identity, until: deadline, cancellable: cancellable, busy: busy)
        } catch {
            if let interruption = interruption() { throw interruption.error }
            switch error {
            case .removed: throw Interruption.readerRemoved.error
            case .cancelled: throw ServiceErrors.la(.systemCancel, "cancelled while opening the fingerprint reader")
            case .suspended: throw Interruption.systemSleeping.error
            case .heldByAnotherProgram(let why):
                throw ServiceError(
                    .readerInUse,
                    "the fingerprint reader is in use by another program (\(why)); try again when it is free")
            }
        }
    }

    /// The reader's errors that mean it cannot be used now, for an
    /// evaluation and an enrollment alike (a removed reader is forgotten at once).
    func unusable(_ error: GLibError, _ device: Readers.Reader) -> ServiceError? {
        if error.isDevice(FP_DEVICE_ERROR_REMOVED_VALUE) {
            readers.forget(device)
            return Interruption.readerRemoved.error
        }
        if error.isDevice(FP_DEVICE_ERROR_TOO_HOT_VALUE) {
            return ServiceErrors.la(.systemCancel, "the fingerprint reader is cooling down; try again shortly")
        }
        return nil
    }

    // MARK: Holding a reader for an operation that is not a scan

    /// Runs `body` with reader `identity` held for one operation of the call
    /// `record`: its turn in the reader queue (at most `readerQueueWait`),
    /// the device opened (retrying while another program holds it, within
    /// the scan timeout), and given back afterwards (closed after the linger).
    /// `T` is `Sendable`: `body`'s type is a nonisolated async function, so
    /// its result comes back to this actor from outside it, which Swift 6.0
    /// refuses for a type that may not cross.
    func withReader<T: Sendable>(
        _ identity: Readers.Identity, for record: CallRecord, uid: UInt32,
        _ body: (Readers.Reader) async throws(ServiceError) -> T
    ) async throws(ServiceError) -> T {
        try await withReader(identity, for: record, uid: uid, body, failedToOpen: { $0 })
    }

    /// `withReader` for a body that speaks another contract's errors (fprintd's):
    /// `failedToOpen` says the queue's and the opening's errors in its words.
    func withReader<T: Sendable, Failure: Error>(
        _ identity: Readers.Identity, for record: CallRecord, uid: UInt32,
        _ body: (Readers.Reader) async throws(Failure) -> T,
        failedToOpen: (ServiceError) -> Failure
    ) async throws(Failure) -> T {
        let hold: SensorQueue.Hold<Readers.Reader>
        do throws(ServiceError) {
            hold = try await beginMaintenance(identity, for: record, uid: uid)
        } catch {
            throw failedToOpen(error)
        }
        defer { hold.end() }
        return try await body(hold.opened)
    }

    /// A turn in the reader queue, then the reader opened (SensorQueue.begin);
    /// the caller ends the hold, which gives back both.
    private func beginMaintenance(
        _ identity: Readers.Identity, for record: CallRecord,
        uid: UInt32
    ) async throws(ServiceError) -> SensorQueue.Hold<Readers.Reader> {
        let ticket = SensorQueue.Ticket(uid: uid, purpose: .readerMaintenance)
        ticket.reader = identity
        ticket.interrupt = { reason in record.interrupt(reason) }
        let hold = try await queue.begin(
            ticket, within: ServiceLimits.readerQueueWait, on: clock, timedOut: { [queue] in queue.withdraw(ticket) },
            open: { () async throws(ServiceError) -> Readers.Reader in
                try record.checkNotEnded()
                return try await open(
                    identity, cancellable: record.cancellable,
                    interruption: { record.interruption }, busy: {})
            }, release: { [readers] in readers.relinquish($0) })
        guard let hold else { throw record.interruption?.error ?? Interruption.queueTimedOut.error }
        return hold
    }
}
