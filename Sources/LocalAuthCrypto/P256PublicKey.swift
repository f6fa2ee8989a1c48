internal import COpenSSL

extension P256 {
    /// A P-256 public key, always a validated point. Equal when the points are equal.
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
            let key = try P256.decodeDER(der, "public key", "d2i_PUBKEY", { d2i_PUBKEY(nil, $0, $1) }, free: EVP_PKEY_free)
            try self.init(checked: KeyHandle(key))
        }

        private init(checked handle: KeyHandle) throws(CryptoError) {
            try P256.validate(handle, "EVP_PKEY_public_check") { EVP_PKEY_public_check($0) }
            self.handle = handle
            x963Representation = try P256.encodedPoint(handle)
        }

        /// SubjectPublicKeyInfo DER.
        public var derRepresentation: [UInt8] {
            get throws(CryptoError) {
                try OpenSSL.encode("i2d_PUBKEY") { i2d_PUBKEY(handle.pointer, $0) }
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
}
