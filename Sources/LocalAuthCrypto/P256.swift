internal import COpenSSL

/// NIST P-256 keys (EVP_PKEY, group "prime256v1"), the only curve Apple's
/// Secure Enclave and LAPrivateKey use.
public enum P256 {
    /// 04 ‖ X ‖ Y: the uncompressed point, as `SecKeyCopyExternalRepresentation` gives it.
    public static let x963ByteCount = 65
    /// The x-coordinate of the ECDH point.
    public static let sharedSecretByteCount = 32
    /// Largest DER we parse (a P-256 PKCS#8 key is 138 bytes, a signature at most 72).
    static let maximumDERByteCount = 1024

    // MARK: Helpers shared by both halves

    /// EVP_PKEY_PUBLIC_KEY: the domain parameters and the public point.
    static let publicKeySelection = Int32(OSSL_KEYMGMT_SELECT_ALL_PARAMETERS | OSSL_KEYMGMT_SELECT_PUBLIC_KEY)

    /// A fresh EVP_PKEY_CTX for `handle`, freed after `body`.
    static func withContext<R>(_ handle: KeyHandle, _ body: (OpaquePointer) throws(CryptoError) -> R) throws(CryptoError) -> R {
        let context = try OpenSSL.object("EVP_PKEY_CTX_new_from_pkey") { EVP_PKEY_CTX_new_from_pkey(nil, handle.pointer, nil) }
        defer { EVP_PKEY_CTX_free(context) }
        return try body(context)
    }

    /// The object a d2i function makes of `der`, which it must take whole:
    /// too large, empty, unreadable or followed by more bytes is `.invalidKey`
    /// (`kind` names the key in the message; `free` releases what d2i made
    /// when bytes are left over).
    static func decodeDER(
        _ der: [UInt8], _ kind: String, _ function: String,
        _ d2i: (UnsafeMutablePointer<UnsafePointer<UInt8>?>, Int) -> OpaquePointer?, free: (OpaquePointer) -> Void
    ) throws(CryptoError) -> OpaquePointer {
        guard !der.isEmpty, der.count <= maximumDERByteCount else { throw CryptoError(.invalidKey, "a \(kind) of \(der.count) bytes") }
        return try der.withCBytes { (bytes, count) throws(CryptoError) -> OpaquePointer in
            var cursor: UnsafePointer<UInt8>? = bytes
            let object = try OpenSSL.object(function, as: .invalidKey) { d2i(&cursor, count) }
            guard cursor == bytes + count else {
                free(object)
                throw CryptoError(.invalidKey, "trailing bytes after the \(kind)")
            }
            return object
        }
    }

    /// Refuses anything but a P-256 key that passes libcrypto's `check`
    /// (`function`): the whole-key check for a private key (the scalar is in
    /// range and matches the public point), the public one for a public key.
    static func validate(_ handle: KeyHandle, _ function: String, _ check: (OpaquePointer) -> Int32) throws(CryptoError) {
        try requireP256(handle)
        try withContext(handle) { (context) throws(CryptoError) in
            try OpenSSL.check(function, as: .invalidKey) { check(context) }
        }
    }

    /// Refuses anything but an EC key on P-256.
    static func requireP256(_ handle: KeyHandle) throws(CryptoError) {
        guard EVP_PKEY_is_a(handle.pointer, cString("EC")) == 1 else { throw CryptoError(.invalidKey, "not an EC key") }
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        try OpenSSL.check("EVP_PKEY_get_utf8_string_param(group)", as: .invalidKey) {
            EVP_PKEY_get_utf8_string_param(handle.pointer, cString("group"), &name, name.count, &length)
        }
        let group = String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard group == "prime256v1" else { throw CryptoError(.invalidKey, "an EC key on \(group), not P-256") }
    }

    /// The key's public point, uncompressed (04 ‖ X ‖ Y).
    static func encodedPoint(_ handle: KeyHandle) throws(CryptoError) -> [UInt8] {
        // A key decoded from DER may remember a compressed form; ask for uncompressed.
        try OpenSSL.check("EVP_PKEY_set_utf8_string_param(point-format)") {
            EVP_PKEY_set_utf8_string_param(handle.pointer, cString("point-format"), cString("uncompressed"))
        }
        var point = [UInt8](repeating: 0, count: x963ByteCount + 8)
        var length = 0
        try OpenSSL.check("EVP_PKEY_get_octet_string_param(encoded-pub-key)") {
            point.withUnsafeMutableBufferPointer {
                EVP_PKEY_get_octet_string_param(handle.pointer, cString("encoded-pub-key"), $0.baseAddress, $0.count, &length)
            }
        }
        guard length == x963ByteCount, point[0] == 0x04 else { throw CryptoError(.invalidKey, "the public point is not 65 uncompressed bytes") }
        return Array(point.prefix(length))
    }
}
