internal import CDBusGLib

extension BusConnection {
    /// glibc's own starting threshold: every block this large or larger is a
    /// mapping of its own.
    public static let largeBufferBytes = 128 * 1024

    /// Makes every allocation of at least `bytes` a mapping of its own,
    /// returned to the kernel the moment it is freed, for the whole process
    /// and for good (glibc's `M_MMAP_THRESHOLD`, fixed). For a service that
    /// reads messages from anyone; call it before the first one arrives.
    ///
    /// Why: libdbus reads a message into its buffer and then copies the body
    /// into the message, so a 33 MB call costs two 33 MB blocks for a moment
    /// (`limitBufferedIncoming`). Left to itself, glibc raises its threshold
    /// to the size of each mapped block it frees (up to 32 MiB): after the
    /// first large message, the next bodies come from the heap. There a freed
    /// body stays resident (the heap is trimmed only past twice the new
    /// threshold), and once anything small lies above it, a body a few bytes
    /// larger than that hole takes new memory beside it: a third 33 MB block,
    /// a fourth, and tens of MB still resident after the calls were refused
    /// (RELIABILITY.md, the large-calls row; `LargeCallTests`).
    @discardableResult
    public static func mapLargeBuffersApart(atLeast bytes: Int = largeBufferBytes) -> Bool {
        cdbusglib_fix_mmap_threshold(Int32(clamping: bytes)) == 1
    }
}
