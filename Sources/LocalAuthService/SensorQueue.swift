/// The reader serves one operation at a time; the others wait. A waiter can
/// be withdrawn (its caller left or cancelled, or it waited too long), which
/// removes it from the line at once.
///
/// Fair between users: when the reader is handed on, the first waiter of
/// another uid than the one that just held it goes first, so one user with
/// many pending calls makes someone else wait at most one turn, not all of
/// theirs (docs/SECURITY.md). Within one uid, arrival order.
@ServiceActor
final class SensorQueue {
    final class Ticket {
        let uid: UInt32
        fileprivate var continuation: CheckedContinuation<Bool, Never>?
        init(uid: UInt32) { self.uid = uid }
    }

    private var busy = false
    private var holder: UInt32?
    private var waiting: [Ticket] = []

    /// How many wait in line now.
    var waitingCount: Int { waiting.count }

    /// Waits for the reader; false if the ticket was withdrawn first.
    func acquire(_ ticket: Ticket) async -> Bool {
        if !busy && waiting.isEmpty {
            busy = true
            holder = ticket.uid
            return true
        }
        return await withCheckedContinuation { continuation in
            ticket.continuation = continuation
            waiting.append(ticket)
        }
    }

    /// Hands the reader to the next in line, or marks it free.
    func release() {
        guard !waiting.isEmpty else {
            busy = false
            holder = nil
            return
        }
        let index = waiting.firstIndex { $0.uid != holder } ?? 0
        let next = waiting.remove(at: index)
        holder = next.uid
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
