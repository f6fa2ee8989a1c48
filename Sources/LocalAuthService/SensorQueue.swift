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
    }

    final class Ticket {
        let uid: UInt32
        let purpose: Purpose
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
}
