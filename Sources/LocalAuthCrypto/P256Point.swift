internal import COpenSSL

extension P256 {
    /// Whether `bytes` is an uncompressed point of P-256 that a public key
    /// may be: 04 ‖ X ‖ Y, X and Y below the field prime, on the curve.
    /// libcrypto's `EC_POINT_oct2point` over one shared group, a few µs,
    /// where building a `PublicKey` costs ~50 µs (BENCHMARKS.md, "Curves":
    /// the provider fetch, `EVP_PKEY_fromdata`, and `EVP_PKEY_public_check`,
    /// which multiplies the point by the group order). On P-256 the cofactor
    /// is 1, so every point on the curve other than the identity (which has
    /// no 65-byte form) is in the group of prime order: a point this accepts
    /// is one `PublicKey(x963Representation:)` accepts too.
    public static func isPublicPoint(_ bytes: [UInt8]) -> Bool {
        guard bytes.count == x963ByteCount, bytes[0] == 0x04, let group = Curve.shared.group,
            let point = EC_POINT_new(group)
        else { return false }
        defer { EC_POINT_free(point) }
        let accepted = bytes.withUnsafeBufferPointer { EC_POINT_oct2point(group, point, $0.baseAddress, $0.count, nil) } == 1
        if !accepted { ERR_clear_error() }  // the reason is not ours to leave in the thread's queue
        return accepted
    }

    /// P-256's group, made once: it is only read afterwards (libcrypto's
    /// point operations take it const), so threads may share it.
    private final class Curve: @unchecked Sendable {
        static let shared = Curve()
        let group: OpaquePointer? = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1)
    }
}
