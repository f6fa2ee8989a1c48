internal import COpenSSL

/// SHA-256, the one implementation (OpenSSL's EVP_Digest): print checksums,
/// the enrolled-set digest, file names made from identifiers, digests to sign
/// (LocalAuthCrypto's `SHA256` is this, for its public API).
package enum Digest {
    package static let sha256ByteCount = 32

    package static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var size: UInt32 = 0
        let done = bytes.withUnsafeBytes { input in
            digest.withUnsafeMutableBufferPointer { EVP_Digest(input.baseAddress, input.count, $0.baseAddress, &size, EVP_sha256(), nil) }
        }
        // EVP_Digest with a built-in algorithm fails only when it cannot
        // allocate; GLib's GChecksum, used here before, aborted then too.
        guard done == 1, size == UInt32(sha256ByteCount) else { fatalError("EVP_Digest(SHA-256) failed: out of memory") }
        return Array(digest.prefix(sha256ByteCount))
    }
}
