internal import COpenSSL

extension P256 {
    /// A P-256 private key. The scalar stays inside libcrypto (freed and cleared
    /// with the key); it leaves only as PKCS#8, for sealing at rest.
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
            let info = try P256.decodeDER(
                der, "PKCS#8 key", "d2i_PKCS8_PRIV_KEY_INFO", { d2i_PKCS8_PRIV_KEY_INFO(nil, $0, $1) }, free: PKCS8_PRIV_KEY_INFO_free)
            defer { PKCS8_PRIV_KEY_INFO_free(info) }
            let key = try OpenSSL.object("EVP_PKCS82PKEY", as: .invalidKey) { EVP_PKCS82PKEY(info) }
            try self.init(checked: KeyHandle(key))
        }

        private init(checked handle: KeyHandle) throws(CryptoError) {
            try P256.validate(handle, "EVP_PKEY_check") { EVP_PKEY_check($0) }
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
                return try OpenSSL.encode("i2d_PKCS8_PRIV_KEY_INFO") { i2d_PKCS8_PRIV_KEY_INFO(info, $0) }
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
}
