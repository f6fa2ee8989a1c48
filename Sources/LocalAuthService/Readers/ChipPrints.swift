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
                       _ body: (Readers.Reader) async throws(ServiceError) -> T) async throws(ServiceError) -> T {
        try await withReader(identity, for: record, uid: uid, body, failedToOpen: { $0 })
    }

    /// `withReader` for a body that speaks another contract's errors (fprintd's):
    /// `failedToOpen` says the queue's and the opening's errors in its words.
    func withReader<T, Failure: Error>(_ identity: Readers.Identity, for record: CallRecord, uid: UInt32,
                                       _ body: (Readers.Reader) async throws(Failure) -> T,
                                       failedToOpen: (ServiceError) -> Failure) async throws(Failure) -> T {
        let device: Readers.Reader
        do throws(ServiceError) {
            device = try await openForMaintenance(identity, for: record, uid: uid)
        } catch {
            throw failedToOpen(error)
        }
        defer {
            readers.relinquish(device)
            queue.release()
        }
        return try await body(device)
    }

    /// A turn in the reader queue, then the reader opened; the caller gives back both.
    private func openForMaintenance(_ identity: Readers.Identity, for record: CallRecord,
                                    uid: UInt32) async throws(ServiceError) -> Readers.Reader {
        let ticket = SensorQueue.Ticket(uid: uid, purpose: .readerMaintenance)
        ticket.reader = identity
        ticket.interrupt = { reason in record.interrupt(reason) }
        let waitLimit = EventLoopTimers.after(ServiceLimits.readerQueueWait) { [queue] in queue.withdraw(ticket) }
        let acquired = await queue.acquire(ticket)
        waitLimit.cancel()
        guard acquired else { throw record.interruption?.error ?? Evaluation.Interruption.queueTimedOut.error }
        do throws(ServiceError) {
            try record.checkNotEnded()
            return try await openReader(identity, cancellable: record.cancellable,
                                        interruption: { record.interruption }, busy: {})
        } catch {
            queue.release()
            throw error
        }
    }
}
