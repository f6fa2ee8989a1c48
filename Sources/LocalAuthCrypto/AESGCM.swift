internal import COpenSSL

/// AES-GCM (EVP_CIPHER): AES-256 for everything at rest, AES-128 inside ECIES.
///
/// The key's size picks the cipher: 32 bytes AES-256-GCM, 16 bytes
/// AES-128-GCM. Nonces are 12 random bytes (the size GCM is designed for)
/// unless given; tags are always the full 16 bytes.
public enum AESGCM {
    public static let nonceByteCount = 12
    public static let tagByteCount = 16

    /// What `seal` makes: nonce, ciphertext (as long as the plaintext) and tag.
    public struct SealedBox: Hashable, Sendable {
        public let nonce: [UInt8]
        public let ciphertext: [UInt8]
        public let tag: [UInt8]

        public init(nonce: [UInt8], ciphertext: [UInt8], tag: [UInt8]) throws(CryptoError) {
            guard nonce.count == AESGCM.nonceByteCount else { throw CryptoError(.invalidInput, "an AES-GCM nonce is \(AESGCM.nonceByteCount) bytes, not \(nonce.count)") }
            guard tag.count == AESGCM.tagByteCount else { throw CryptoError(.invalidInput, "an AES-GCM tag is \(AESGCM.tagByteCount) bytes, not \(tag.count)") }
            self.nonce = nonce
            self.ciphertext = ciphertext
            self.tag = tag
        }

        /// nonce ‖ ciphertext ‖ tag, as CryptoKit's `combined`.
        public var combined: [UInt8] { nonce + ciphertext + tag }

        public init(combined: [UInt8]) throws(CryptoError) {
            guard combined.count >= AESGCM.nonceByteCount + AESGCM.tagByteCount else {
                throw CryptoError(.invalidInput, "a sealed box is at least \(AESGCM.nonceByteCount + AESGCM.tagByteCount) bytes, not \(combined.count)")
            }
            try self.init(nonce: Array(combined.prefix(AESGCM.nonceByteCount)),
                          ciphertext: Array(combined.dropFirst(AESGCM.nonceByteCount).dropLast(AESGCM.tagByteCount)),
                          tag: Array(combined.suffix(AESGCM.tagByteCount)))
        }
    }

    public static func seal(_ plaintext: [UInt8], key: [UInt8], nonce: [UInt8]? = nil,
                            associatedData: [UInt8] = []) throws(CryptoError) -> SealedBox {
        let nonce = if let nonce { nonce } else { try SecureRandom.bytes(nonceByteCount) }
        guard nonce.count == nonceByteCount else { throw CryptoError(.invalidInput, "an AES-GCM nonce is \(nonceByteCount) bytes, not \(nonce.count)") }
        let (ciphertext, tag) = try encrypt(plaintext, key: key, iv: nonce, associatedData: associatedData)
        return try SealedBox(nonce: nonce, ciphertext: ciphertext, tag: tag)
    }

    public static func open(_ box: SealedBox, key: [UInt8], associatedData: [UInt8] = []) throws(CryptoError) -> [UInt8] {
        try decrypt(box.ciphertext, tag: box.tag, key: key, iv: box.nonce, associatedData: associatedData)
    }

    // MARK: The EVP calls, for any IV length (ECIES uses 16-byte IVs).

    static func encrypt(_ plaintext: [UInt8], key: [UInt8], iv: [UInt8],
                        associatedData: [UInt8]) throws(CryptoError) -> (ciphertext: [UInt8], tag: [UInt8]) {
        let context = try Context(encrypt: true, key: key, iv: iv)
        try context.update(associatedData: associatedData)
        let ciphertext = try context.update(plaintext)
        try context.finish()
        var tag = [UInt8](repeating: 0, count: tagByteCount)
        try OpenSSL.check("EVP_CIPHER_CTX_ctrl(GET_TAG)") {
            tag.withUnsafeMutableBytes { EVP_CIPHER_CTX_ctrl(context.pointer, EVP_CTRL_AEAD_GET_TAG, Int32(tagByteCount), $0.baseAddress) }
        }
        return (ciphertext, tag)
    }

    static func decrypt(_ ciphertext: [UInt8], tag: [UInt8], key: [UInt8], iv: [UInt8],
                        associatedData: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard tag.count == tagByteCount else { throw CryptoError(.invalidInput, "an AES-GCM tag is \(tagByteCount) bytes, not \(tag.count)") }
        let context = try Context(encrypt: false, key: key, iv: iv)
        try context.update(associatedData: associatedData)
        let plaintext = try context.update(ciphertext)
        var expected = tag
        try OpenSSL.check("EVP_CIPHER_CTX_ctrl(SET_TAG)") {
            expected.withUnsafeMutableBytes { EVP_CIPHER_CTX_ctrl(context.pointer, EVP_CTRL_AEAD_SET_TAG, Int32(tagByteCount), $0.baseAddress) }
        }
        // The tag is checked here; on a mismatch the plaintext is discarded unread.
        try context.finish(as: .authenticationFailure)
        return plaintext
    }

    /// One EVP_CIPHER_CTX, freed with its owner.
    private final class Context {
        let pointer: OpaquePointer
        let encrypting: Bool

        init(encrypt: Bool, key: [UInt8], iv: [UInt8]) throws(CryptoError) {
            let cipher: OpaquePointer?
            switch key.count {
            case 32: cipher = EVP_aes_256_gcm()
            case 16: cipher = EVP_aes_128_gcm()
            default: throw CryptoError(.invalidKey, "an AES-GCM key is 16 or 32 bytes, not \(key.count)")
            }
            guard !iv.isEmpty, iv.count <= 64 else { throw CryptoError(.invalidInput, "an AES-GCM IV of \(iv.count) bytes") }
            pointer = try OpenSSL.object("EVP_CIPHER_CTX_new") { EVP_CIPHER_CTX_new() }
            encrypting = encrypt
            let initialize = encrypt ? EVP_EncryptInit_ex : EVP_DecryptInit_ex
            try OpenSSL.check("EVP_CipherInit_ex(AES-GCM)") { initialize(pointer, cipher, nil, nil, nil) }
            try OpenSSL.check("EVP_CIPHER_CTX_ctrl(SET_IVLEN)") {
                EVP_CIPHER_CTX_ctrl(pointer, EVP_CTRL_AEAD_SET_IVLEN, Int32(iv.count), nil)
            }
            try key.withCBytes { (keyBytes, _) throws(CryptoError) in
                try iv.withCBytes { (ivBytes, _) throws(CryptoError) in
                    try OpenSSL.check("EVP_CipherInit_ex(key, IV)") { initialize(pointer, nil, nil, keyBytes, ivBytes) }
                }
            }
        }

        deinit { EVP_CIPHER_CTX_free(pointer) }

        func update(associatedData: [UInt8]) throws(CryptoError) {
            guard !associatedData.isEmpty else { return }
            guard associatedData.count <= Int(Int32.max) else { throw CryptoError(.invalidInput, "associated data too large") }
            var ignored: Int32 = 0
            try associatedData.withCBytes { (bytes, count) throws(CryptoError) in
                try OpenSSL.check("EVP_CipherUpdate(associated data)") {
                    encrypting ? EVP_EncryptUpdate(pointer, nil, &ignored, bytes, Int32(count))
                               : EVP_DecryptUpdate(pointer, nil, &ignored, bytes, Int32(count))
                }
            }
        }

        func update(_ input: [UInt8]) throws(CryptoError) -> [UInt8] {
            guard !input.isEmpty else { return [] }
            guard input.count <= Int(Int32.max) - 64 else { throw CryptoError(.invalidInput, "input too large") }
            var output = [UInt8](repeating: 0, count: input.count)
            var written: Int32 = 0
            try input.withCBytes { (bytes, count) throws(CryptoError) in
                try OpenSSL.check("EVP_CipherUpdate") {
                    output.withUnsafeMutableBufferPointer { out in
                        encrypting ? EVP_EncryptUpdate(pointer, out.baseAddress, &written, bytes, Int32(count))
                                   : EVP_DecryptUpdate(pointer, out.baseAddress, &written, bytes, Int32(count))
                    }
                }
            }
            // GCM is a stream mode: every byte comes out of the update.
            guard Int(written) == input.count else { throw CryptoError(.library, "AES-GCM returned \(written) of \(input.count) bytes") }
            return output
        }

        func finish(as code: CryptoError.Code = .library) throws(CryptoError) {
            var tail = [UInt8](repeating: 0, count: 32)
            var written: Int32 = 0
            try OpenSSL.check(encrypting ? "EVP_EncryptFinal_ex" : "AES-GCM tag check (EVP_DecryptFinal_ex)", as: code) {
                tail.withUnsafeMutableBufferPointer {
                    encrypting ? EVP_EncryptFinal_ex(pointer, $0.baseAddress, &written)
                               : EVP_DecryptFinal_ex(pointer, $0.baseAddress, &written)
                }
            }
        }
    }
}
