/// The reader serves one operation at a time; the others wait in arrival
/// order. A waiter can be withdrawn (its caller left or cancelled), which
/// removes it from the line at once.
@ServiceActor
final class SensorQueue {
    final class Ticket {
        fileprivate var continuation: CheckedContinuation<Bool, Never>?
    }

    private var busy = false
    private var waiting: [Ticket] = []

    var isBusy: Bool { busy }

    /// Waits for the reader; false if the ticket was withdrawn first.
    func acquire(_ ticket: Ticket) async -> Bool {
        if !busy && waiting.isEmpty {
            busy = true
            return true
        }
        return await withCheckedContinuation { continuation in
            ticket.continuation = continuation
            waiting.append(ticket)
        }
    }

    /// Hands the reader to the next in line, or marks it free.
    func release() {
        if waiting.isEmpty {
            busy = false
            return
        }
        let next = waiting.removeFirst()
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
