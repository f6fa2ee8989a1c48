import DBusCore
import LocalAuthShared

// Holding a reader for one operation of a call that is not a scan: deleting
// or listing the prints on a reader's chip (the Enroller's, Enrollment/
// EnrollerChips.swift; fprintd's delete, Fprintd/FprintdDevice.swift).
extension LocalAuthService {
    /// Runs `body` with reader `identity` held for one operation of the call
    /// `record`: its turn in the reader queue (at most `readerQueueWait`),
    /// the device opened (retrying while another program holds it, within
    /// the scan timeout), and given back afterwards (closed after the linger).
    func withReader<T>(_ identity: Readers.Identity, for record: CallRecord, uid: UInt32,
                       _ body: (Readers.Reader) async throws(DBusError) -> T) async throws(DBusError) -> T {
        let ticket = SensorQueue.Ticket(uid: uid, purpose: .readerMaintenance)
        ticket.reader = identity
        ticket.interrupt = { reason in record.interrupt(reason) }
        let waitLimit = EventLoopTimers.after(ServiceLimits.readerQueueWait) { [queue] in queue.withdraw(ticket) }
        let acquired = await queue.acquire(ticket)
        waitLimit.cancel()
        guard acquired else { throw record.interruption?.error ?? Evaluation.Interruption.queueTimedOut.error }
        defer { queue.release() }
        try record.checkNotEnded()
        let device = try await openReader(identity, cancellable: record.cancellable,
                                          interruption: { record.interruption }, busy: {})
        defer { readers.relinquish(device) }
        return try await body(device)
    }
}
