import LocalAuthSystem

/// SHA-256 for the public API: LocalAuthSystem's `Digest.sha256`, the one
/// implementation (GLib's GChecksum), shared with the service.
public enum SHA256 {
    public static let byteCount = Digest.sha256ByteCount

    /// Never throws today (GChecksum fails only on allocation, which aborts);
    /// `throws` stays so that callers are ready for a failing provider.
    public static func hash(_ data: [UInt8]) throws(CryptoError) -> [UInt8] {
        Digest.sha256(data)
    }
}
