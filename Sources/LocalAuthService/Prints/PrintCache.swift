import Synchronization

/// Deserialized prints by their serialized bytes.
///
/// Every request still reads the store from disk (what is offered is always
/// what is on disk); only libfprint's parsing of bytes already seen is saved.
/// Keyed by content, the cache can never be stale: changed bytes are a new
/// key. Parsing a print costs more than the rest of a CanEvaluatePolicy call
/// together (BENCHMARKS.md, "Measurements behind the code").
///
/// The prints handed out are shared: libfprint only reads an enrolled print
/// (verify, identify, compare); nothing may change one after it was read.
final class PrintCache: Sendable {
    static let shared = PrintCache()
    /// Bounds the memory: beyond this many distinct prints the cache starts afresh.
    static let limit = 256

    private let prints = Mutex<[[UInt8]: GObjectRef]>([:])

    func print(for bytes: [UInt8]) -> GObjectRef? {
        prints.withLock { $0[bytes] }
    }

    func store(_ print: GObjectRef, for bytes: [UInt8]) {
        prints.withLock { prints in
            if prints.count >= Self.limit { prints.removeAll() }
            prints[bytes] = print
        }
    }
}
