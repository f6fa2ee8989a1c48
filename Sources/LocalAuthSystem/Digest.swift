internal import CGLib

/// SHA-256, the one implementation (GLib's GChecksum): print checksums,
/// the enrolled-set digest, file names made from identifiers, digests to sign
/// (LocalAuthCrypto's `SHA256` is this, for its public API). GLib and not
/// OpenSSL because the domain state is hashed on every preflight, and the
/// service loads libcrypto only when a right is touched (COpenSSL's lazy
/// loading, BENCHMARKS.md, issue 25); the bytes are SHA-256's either way
/// (KDFTests' known answers, the domain-state stability tests).
package enum Digest {
    package static let sha256ByteCount = 32

    package static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        // g_checksum_new fails only for an unknown type; it aborts, as GLib
        // does, when it cannot allocate.
        guard let checksum = g_checksum_new(G_CHECKSUM_SHA256) else { fatalError("g_checksum_new(SHA-256) failed") }
        defer { g_checksum_free(checksum) }
        bytes.withUnsafeBufferPointer { g_checksum_update(checksum, $0.baseAddress, $0.count) }
        var digest = [UInt8](repeating: 0, count: sha256ByteCount)
        var size = gsize(sha256ByteCount)
        digest.withUnsafeMutableBufferPointer { g_checksum_get_digest(checksum, $0.baseAddress, &size) }
        guard size == gsize(sha256ByteCount) else { fatalError("g_checksum_get_digest(SHA-256) gave \(size) bytes") }
        return digest
    }
}
