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

    public struct PrivateKey: Sendable {
        let handle: KeyHandle
        public let publicKey: PublicKey

        /// A fresh random key.
        public init() throws(CryptoError) {
            let context = try OpenSSL.object("EVP_PKEY_CTX_new_from_name(EC)") { EVP_PKEY_CTX_new_from_name(nil, cString("EC"), nil) }
            defer { EVP_PKEY_CTX_free(context) }
            try OpenSSL.check("EVP_PKEY_keygen_init") { EVP_PKEY_keygen_init(context) }
            try OpenSSL.check("EVP_PKEY_CTX_set_group_name(P-256)") { EVP_PKEY_CTX_set_group_name(context, cString("prime256v1")) }
            var key: OpaquePointer?
            try OpenSSL.check("EVP_PKEY_generate(P-256)") { EVP_PKEY_generate(context, &key) }
            try self.init(checked: KeyHandle(key!))
        }

        /// A key from its PKCS#8 PrivateKeyInfo DER (what `derRepresentation` gives).
        /// Anything else (another curve, trailing bytes, a private scalar that
        /// does not match its public point) is `.invalidKey`.
        public init(derRepresentation der: [UInt8]) throws(CryptoError) {
            guard !der.isEmpty, der.count <= maximumDERByteCount else { throw CryptoError(.invalidKey, "a PKCS#8 key of \(der.count) bytes") }
            let info = try der.withCBytes { (bytes, count) throws(CryptoError) -> OpaquePointer in
                var cursor: UnsafePointer<UInt8>? = bytes
                let info = try OpenSSL.object("d2i_PKCS8_PRIV_KEY_INFO", as: .invalidKey) { d2i_PKCS8_PRIV_KEY_INFO(nil, &cursor, count) }
                guard cursor == bytes + count else {
                    PKCS8_PRIV_KEY_INFO_free(info)
                    throw CryptoError(.invalidKey, "trailing bytes after the PKCS#8 key")
                }
                return info
            }
            defer { PKCS8_PRIV_KEY_INFO_free(info) }
            let key = try OpenSSL.object("EVP_PKCS82PKEY", as: .invalidKey) { EVP_PKCS82PKEY(info) }
            try self.init(checked: KeyHandle(key))
        }

        private init(checked handle: KeyHandle) throws(CryptoError) {
            try P256.requireP256(handle)
            // A whole-key check: the scalar is in range and matches the public point.
            try P256.withContext(handle) { (context) throws(CryptoError) in
                try OpenSSL.check("EVP_PKEY_check", as: .invalidKey) { EVP_PKEY_check(context) }
            }
            self.handle = handle
            // The public half as its own public-only key, so that a PublicKey
            // never carries the private scalar with it.
            publicKey = try PublicKey(x963Representation: P256.encodedPoint(handle))
        }

        /// PKCS#8 PrivateKeyInfo DER: what the service seals at rest.
        public var derRepresentation: [UInt8] {
            get throws(CryptoError) {
                let info = try OpenSSL.object("EVP_PKEY2PKCS8") { EVP_PKEY2PKCS8(handle.pointer) }
                defer { PKCS8_PRIV_KEY_INFO_free(info) }
                let count = try OpenSSL.length("i2d_PKCS8_PRIV_KEY_INFO") { i2d_PKCS8_PRIV_KEY_INFO(info, nil) }
                var der = [UInt8](repeating: 0, count: count)
                _ = try der.withUnsafeMutableBufferPointer { (buffer) throws(CryptoError) -> Int in
                    var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
                    return try OpenSSL.length("i2d_PKCS8_PRIV_KEY_INFO") { i2d_PKCS8_PRIV_KEY_INFO(info, &cursor) }
                }
                return der
            }
        }

        /// ECDSA over SHA-256 of `message`, DER-encoded (X9.62):
        /// Apple's `.ecdsaSignatureMessageX962SHA256`.
        public func signature(for message: [UInt8]) throws(CryptoError) -> [UInt8] {
            let context = try OpenSSL.object("EVP_MD_CTX_new") { EVP_MD_CTX_new() }
            defer { EVP_MD_CTX_free(context) }
            try OpenSSL.check("EVP_DigestSignInit(SHA-256)") { EVP_DigestSignInit(context, nil, EVP_sha256(), nil, handle.pointer) }
            var signature = [UInt8](repeating: 0, count: 80)
            var count = signature.count
            try message.withCBytes { (bytes, length) throws(CryptoError) in
                try OpenSSL.check("EVP_DigestSign") {
                    signature.withUnsafeMutableBufferPointer { EVP_DigestSign(context, $0.baseAddress, &count, bytes, length) }
                }
            }
            return Array(signature.prefix(count))
        }

        /// ECDSA of a SHA-256 digest the caller made, DER-encoded:
        /// Apple's `.ecdsaSignatureDigestX962SHA256`.
        public func signature(forDigest digest: [UInt8]) throws(CryptoError) -> [UInt8] {
            guard digest.count == SHA256.byteCount else { throw CryptoError(.invalidInput, "a SHA-256 digest is 32 bytes, not \(digest.count)") }
            return try P256.withContext(handle) { (context) throws(CryptoError) -> [UInt8] in
                try OpenSSL.check("EVP_PKEY_sign_init") { EVP_PKEY_sign_init(context) }
                try OpenSSL.check("EVP_PKEY_CTX_set_signature_md") { EVP_PKEY_CTX_set_signature_md(context, EVP_sha256()) }
                var signature = [UInt8](repeating: 0, count: 80)
                var count = signature.count
                try OpenSSL.check("EVP_PKEY_sign") {
                    signature.withUnsafeMutableBufferPointer { out in
                        digest.withUnsafeBufferPointer { EVP_PKEY_sign(context, out.baseAddress, &count, $0.baseAddress, $0.count) }
                    }
                }
                return Array(signature.prefix(count))
            }
        }

        /// The ECDH shared secret with `peer`: the x-coordinate of d·Q, 32 bytes,
        /// Apple's `.ecdhKeyExchangeStandard`. `cofactor` asks for cofactor ECDH
        /// (`.ecdhKeyExchangeCofactor`); P-256's cofactor is 1, so the result is
        /// the same, but OpenSSL is told which one is meant.
        /// libcrypto checks the peer's point again before deriving.
        public func sharedSecretFromKeyAgreement(with peer: PublicKey, cofactor: Bool = false) throws(CryptoError) -> [UInt8] {
            try P256.withContext(handle) { (context) throws(CryptoError) -> [UInt8] in
                try OpenSSL.check("EVP_PKEY_derive_init") { EVP_PKEY_derive_init(context) }
                if cofactor {
                    try OpenSSL.check("EVP_PKEY_CTX_set_ecdh_cofactor_mode") { EVP_PKEY_CTX_set_ecdh_cofactor_mode(context, 1) }
                }
                try OpenSSL.check("EVP_PKEY_derive_set_peer", as: .invalidKey) { EVP_PKEY_derive_set_peer(context, peer.handle.pointer) }
                var secret = [UInt8](repeating: 0, count: sharedSecretByteCount)
                var count = secret.count
                try OpenSSL.check("EVP_PKEY_derive") {
                    secret.withUnsafeMutableBufferPointer { EVP_PKEY_derive(context, $0.baseAddress, &count) }
                }
                guard count == sharedSecretByteCount else { throw CryptoError(.library, "ECDH gave \(count) bytes") }
                return secret
            }
        }
    }

    public struct PublicKey: Sendable, Hashable {
        let handle: KeyHandle
        /// 04 ‖ X ‖ Y (65 bytes).
        public let x963Representation: [UInt8]

        /// A key from its uncompressed point. The point must be on P-256 and
        /// not the identity (libcrypto's full public-key check); anything else
        /// is `.invalidKey`. Compressed points are refused, as Apple's
        /// `SecKeyCreateWithData` refuses them for this representation.
        public init(x963Representation bytes: [UInt8]) throws(CryptoError) {
            guard bytes.count == x963ByteCount, bytes[0] == 0x04 else {
                throw CryptoError(.invalidKey, "a P-256 public key is 65 bytes starting with 04, not \(bytes.count) bytes")
            }
            let context = try OpenSSL.object("EVP_PKEY_CTX_new_from_name(EC)") { EVP_PKEY_CTX_new_from_name(nil, cString("EC"), nil) }
            defer { EVP_PKEY_CTX_free(context) }
            try OpenSSL.check("EVP_PKEY_fromdata_init") { EVP_PKEY_fromdata_init(context) }
            var point = bytes
            var key: OpaquePointer?
            try OpenSSL.check("EVP_PKEY_fromdata(P-256 point)", as: .invalidKey) {
                point.withUnsafeMutableBytes { raw in
                    var params = [
                        OSSL_PARAM_construct_utf8_string(cString("group"), UnsafeMutablePointer(mutating: cString("prime256v1")), 0),
                        OSSL_PARAM_construct_octet_string(cString("pub"), raw.baseAddress, raw.count),
                        OSSL_PARAM_construct_end(),
                    ]
                    return EVP_PKEY_fromdata(context, &key, P256.publicKeySelection, &params)
                }
            }
            try self.init(checked: KeyHandle(key!))
        }

        /// A key from SubjectPublicKeyInfo DER (the body of a "PUBLIC KEY" PEM).
        public init(derRepresentation der: [UInt8]) throws(CryptoError) {
            guard !der.isEmpty, der.count <= maximumDERByteCount else { throw CryptoError(.invalidKey, "a public key of \(der.count) bytes") }
            let key = try der.withCBytes { (bytes, count) throws(CryptoError) -> OpaquePointer in
                var cursor: UnsafePointer<UInt8>? = bytes
                let key = try OpenSSL.object("d2i_PUBKEY", as: .invalidKey) { d2i_PUBKEY(nil, &cursor, count) }
                guard cursor == bytes + count else {
                    EVP_PKEY_free(key)
                    throw CryptoError(.invalidKey, "trailing bytes after the public key")
                }
                return key
            }
            try self.init(checked: KeyHandle(key))
        }

        private init(checked handle: KeyHandle) throws(CryptoError) {
            try P256.requireP256(handle)
            try P256.withContext(handle) { (context) throws(CryptoError) in
                try OpenSSL.check("EVP_PKEY_public_check", as: .invalidKey) { EVP_PKEY_public_check(context) }
            }
            self.handle = handle
            x963Representation = try P256.encodedPoint(handle)
        }

        /// SubjectPublicKeyInfo DER.
        public var derRepresentation: [UInt8] {
            get throws(CryptoError) {
                let count = try OpenSSL.length("i2d_PUBKEY") { i2d_PUBKEY(handle.pointer, nil) }
                var der = [UInt8](repeating: 0, count: count)
                _ = try der.withUnsafeMutableBufferPointer { (buffer) throws(CryptoError) -> Int in
                    var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
                    return try OpenSSL.length("i2d_PUBKEY") { i2d_PUBKEY(handle.pointer, &cursor) }
                }
                return der
            }
        }

        /// Whether `signature` (DER) is this key's ECDSA over SHA-256 of `message`.
        /// A malformed signature is simply not valid.
        public func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
            guard !signature.isEmpty, signature.count <= maximumDERByteCount,
                  let context = try? OpenSSL.object("EVP_MD_CTX_new", { EVP_MD_CTX_new() }) else { return false }
            defer { EVP_MD_CTX_free(context) }
            return OpenSSL.verdict {
                guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, handle.pointer) == 1 else { return 0 }
                return signature.withUnsafeBufferPointer { sig in
                    // An empty message still needs a valid pointer.
                    (message.isEmpty ? [0] : message).withUnsafeBufferPointer {
                        EVP_DigestVerify(context, sig.baseAddress, sig.count, $0.baseAddress, message.count)
                    }
                }
            }
        }

        /// Whether `signature` (DER) is this key's ECDSA of a SHA-256 `digest`.
        public func isValidSignature(_ signature: [UInt8], forDigest digest: [UInt8]) -> Bool {
            guard digest.count == SHA256.byteCount, !signature.isEmpty, signature.count <= maximumDERByteCount else { return false }
            return (try? P256.withContext(handle) { (context) throws(CryptoError) -> Bool in
                OpenSSL.verdict {
                    guard EVP_PKEY_verify_init(context) == 1,
                          EVP_PKEY_CTX_set_signature_md(context, EVP_sha256()) == 1 else { return 0 }
                    return signature.withUnsafeBufferPointer { sig in
                        digest.withUnsafeBufferPointer { EVP_PKEY_verify(context, sig.baseAddress, sig.count, $0.baseAddress, $0.count) }
                    }
                }
            }) ?? false
        }

        public static func == (lhs: PublicKey, rhs: PublicKey) -> Bool { lhs.x963Representation == rhs.x963Representation }
        public func hash(into hasher: inout Hasher) { hasher.combine(x963Representation) }
    }

    // MARK: Helpers shared by both halves

    /// EVP_PKEY_PUBLIC_KEY: the domain parameters and the public point.
    static let publicKeySelection = Int32(OSSL_KEYMGMT_SELECT_ALL_PARAMETERS | OSSL_KEYMGMT_SELECT_PUBLIC_KEY)

    /// A fresh EVP_PKEY_CTX for `handle`, freed after `body`.
    static func withContext<R>(_ handle: KeyHandle, _ body: (OpaquePointer) throws(CryptoError) -> R) throws(CryptoError) -> R {
        let context = try OpenSSL.object("EVP_PKEY_CTX_new_from_pkey") { EVP_PKEY_CTX_new_from_pkey(nil, handle.pointer, nil) }
        defer { EVP_PKEY_CTX_free(context) }
        return try body(context)
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
