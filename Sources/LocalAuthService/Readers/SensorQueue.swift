/// Who holds the reader, and who waits for it: the one place that says so.
/// The reader serves one operation at a time (an evaluation's scans or an
/// enrollment); the others wait. A waiter can be withdrawn (its caller left
/// or cancelled, or it waited too long), which removes it from the line at once.
///
/// Fair between users: when the reader is handed on, the first waiter of
/// another uid than the one that just held it goes first, so one user with
/// many pending calls makes someone else wait at most one turn, not all of
/// theirs (docs/SECURITY.md). Within one uid, arrival order.
@ServiceActor
final class SensorQueue {
    /// What an operation holds the reader for.
    enum Purpose: Equatable {
        case evaluation
        /// An enrollment asked by the bus connection `sender`: one at a time each.
        case enrollment(sender: String)
        /// A delete on the chip, or an administrator's look at it.
        case readerMaintenance
    }

    final class Ticket {
        let uid: UInt32
        let purpose: Purpose
        /// The reader the operation will use, once known (a closing lid ends
        /// the operations on the built-in reader only).
        var reader: Readers.Identity?
        /// Ends the operation that holds or waits with this ticket (its
        /// evaluation or its call), for sleep and the lid.
        var interrupt: (@ServiceActor (Interruption) -> Void)?
        fileprivate var continuation: CheckedContinuation<Bool, Never>?
        init(uid: UInt32, purpose: Purpose) {
            self.uid = uid
            self.purpose = purpose
        }
    }

    enum State {
        case free
        case held(by: Ticket)
    }

    private(set) var state: State = .free
    private var waiting: [Ticket] = []
    /// While set (from PrepareForSleep(true) until the readers are offered
    /// again), every ticket is refused with this interruption.
    private(set) var closed: Interruption?

    /// How many wait in line now.
    var waitingCount: Int { waiting.count }

    /// Whether `sender` has an enrollment holding or waiting for the reader.
    func isEnrolling(_ sender: String) -> Bool {
        let purpose = Purpose.enrollment(sender: sender)
        if case .held(let holder) = state, holder.purpose == purpose { return true }
        return waiting.contains { $0.purpose == purpose }
    }

    /// Waits for the reader; false if the ticket was withdrawn first. The
    /// ticket is in line (or holds the reader) before this first suspends.
    func acquire(_ ticket: Ticket) async -> Bool {
        if let closed {
            ticket.interrupt?(closed)
            return false
        }
        guard case .held(let holder) = state else {
            state = .held(by: ticket)
            return true
        }
        Log.info("uid \(ticket.uid) waits for the reader, held by uid \(holder.uid) "
                 + "(\(waiting.count + 1) waiting)")
        return await withCheckedContinuation { continuation in
            ticket.continuation = continuation
            waiting.append(ticket)
        }
    }

    /// Hands the reader to the next in line, or marks it free.
    func release() {
        guard case .held(let holder) = state else { return }
        guard !waiting.isEmpty else {
            state = .free
            return
        }
        let index = waiting.firstIndex { $0.uid != holder.uid } ?? 0
        let next = waiting.remove(at: index)
        state = .held(by: next)
        next.continuation?.resume(returning: true)
        next.continuation = nil
    }

    /// Takes a waiting ticket out of the line; no effect once it holds the reader.
    func withdraw(_ ticket: Ticket) {
        guard let index = waiting.firstIndex(where: { $0 === ticket }) else { return }
        waiting.remove(at: index)
        ticket.continuation?.resume(returning: false)
        ticket.continuation = nil
    }

    // MARK: Sleep and the lid

    /// Ends every operation holding or waiting for a reader, whatever call
    /// it serves (EvaluatePolicy, VerifyUser, AuthorizeRight, enrollment),
    /// and refuses new ones until `reopen`.
    func closeForSleep(_ reason: Interruption) {
        closed = reason
        interrupt(reason) { _ in true }
    }

    func reopen() { closed = nil }

    /// Ends the operations holding or waiting for one of `readers` (the
    /// built-in ones, when the lid closes).
    func interrupt(on readers: Set<Readers.Identity>, _ reason: Interruption) {
        interrupt(reason) { $0.reader.map(readers.contains) ?? false }
    }

    private func interrupt(_ reason: Interruption, where chosen: (Ticket) -> Bool) {
        var tickets = waiting.filter(chosen)
        if case .held(let holder) = state, chosen(holder) { tickets.append(holder) }
        for ticket in tickets {
            ticket.interrupt?(reason)
            // Out of the line at once, even if its owner does nothing on interrupt.
            withdraw(ticket)
        }
    }
}
