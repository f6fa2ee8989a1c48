/// The service's work, from the callbacks that receive it (a call off the
/// wire, a reader plugged in) to the one task that runs `run()`'s task group.
///
/// Why not `AsyncStream`: both ends live on the service's loop, and the
/// stream's generic internals (not specialized across the module boundary)
/// cost every call metadata lookups and locking (BENCHMARKS.md,
/// "Measurements behind the code"). This queue is a plain array and one
/// waiting continuation, only ever touched on the loop.
@ServiceActor
final class WorkQueue<Item: Sendable> {
    private var items: [Item] = []
    private var head = 0
    private var waiter: UnsafeContinuation<Item?, Never>?
    private(set) var isFinished = false

    /// Hands `item` to the waiting consumer, or keeps it for the next `next()`.
    /// Dropped after `finish()` (the service is stopping).
    func yield(_ item: Item) {
        guard !isFinished else { return }
        if let waiter {
            self.waiter = nil
            waiter.resume(returning: item)
        } else {
            items.append(item)
        }
    }

    /// Ends the queue: `next()` returns what is left, then nil.
    func finish() {
        guard !isFinished else { return }
        isFinished = true
        if let waiter {
            self.waiter = nil
            waiter.resume(returning: nil)
        }
    }

    /// The next item, in order; nil once finished and drained. One consumer.
    func next() async -> Item? {
        if head < items.count {
            let item = items[head]
            head += 1
            if head == items.count {
                items.removeAll(keepingCapacity: true)
                head = 0
            }
            return item
        }
        if isFinished { return nil }
        precondition(waiter == nil, "WorkQueue has one consumer")
        return await withUnsafeContinuation { waiter = $0 }
    }
}
