internal import COpenSSL

/// ECDSA signatures in their two forms: the raw (r, s) pair a TPM returns, and
/// the X9.62 DER (`SEQUENCE { INTEGER r, INTEGER s }`) that Apple's
/// `SecKeyCreateSignature`, `P256.PrivateKey.signature(for:)` and OpenSSL use.
/// The DER is made by libcrypto (`ECDSA_SIG_set0`, `i2d_ECDSA_SIG`), not by hand.
public enum ECDSASignature {
    /// The DER of (r, s), each big-endian without or with leading zeros (at most 66 bytes).
    public static func der(r: [UInt8], s: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard !r.isEmpty, !s.isEmpty, r.count <= 66, s.count <= 66 else {
            throw CryptoError(.invalidInput, "ECDSA r and s of \(r.count) and \(s.count) bytes")
        }
        let signature = try OpenSSL.object("ECDSA_SIG_new") { ECDSA_SIG_new() }
        defer { ECDSA_SIG_free(signature) }
        let bigR = try OpenSSL.object("BN_bin2bn(r)") { BN_bin2bn(r, Int32(r.count), nil) }
        guard let bigS = BN_bin2bn(s, Int32(s.count), nil) else {
            BN_free(bigR)
            throw OpenSSL.failure("BN_bin2bn(s)", as: .library)
        }
        // On success ECDSA_SIG_set0 owns both numbers (freed with the signature).
        guard ECDSA_SIG_set0(signature, bigR, bigS) == 1 else {
            BN_free(bigR)
            BN_free(bigS)
            throw OpenSSL.failure("ECDSA_SIG_set0", as: .library)
        }
        return try OpenSSL.encode("i2d_ECDSA_SIG") { i2d_ECDSA_SIG(signature, $0) }
    }
}
