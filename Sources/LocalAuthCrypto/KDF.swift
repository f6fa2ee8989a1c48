internal import COpenSSL

/// Key derivation functions (EVP_KDF), SHA-256 only.
public enum KDF {
    /// ANSI X9.63 KDF with SHA-256 (OpenSSL's "X963KDF"): blocks
    /// SHA-256(Z ‖ counter₃₂ ‖ sharedInfo) for counter = 1, 2, …, cut to length.
    /// The KDF of Apple's ECIES and of `SecKeyAlgorithm.ecdhKeyExchange…X963SHA256`.
    public static func x963SHA256(sharedSecret: [UInt8], sharedInfo: [UInt8], outputByteCount: Int) throws(CryptoError) -> [UInt8] {
        try derive("X963KDF", outputByteCount: outputByteCount, octets: [("key", sharedSecret), ("info", sharedInfo)])
    }

    /// HKDF-SHA256 (RFC 5869), extract then expand.
    public static func hkdfSHA256(inputKeyMaterial: [UInt8], salt: [UInt8], info: [UInt8], outputByteCount: Int) throws(CryptoError) -> [UInt8] {
        try derive("HKDF", outputByteCount: outputByteCount,
                   octets: [("key", inputKeyMaterial), ("salt", salt), ("info", info)])
    }

    /// Runs one of libcrypto's KDFs with digest SHA-256 and the given
    /// octet-string parameters (OSSL_KDF_PARAM_KEY, _SALT, _INFO spelled as
    /// static strings, whose pointers live forever as OSSL_PARAM needs).
    /// Empty ones are left out: OpenSSL treats an absent one as empty.
    private static func derive(_ name: StaticString, outputByteCount: Int,
                               octets: [(StaticString, [UInt8])]) throws(CryptoError) -> [UInt8] {
        guard outputByteCount > 0, outputByteCount <= 1 << 16 else { throw CryptoError(.invalidInput, "cannot derive \(outputByteCount) bytes") }
        let kdf = try OpenSSL.object("EVP_KDF_fetch(\(name))", as: .unsupportedAlgorithm) { EVP_KDF_fetch(nil, cString(name), nil) }
        defer { EVP_KDF_free(kdf) }
        let context = try OpenSSL.object("EVP_KDF_CTX_new(\(name))") { EVP_KDF_CTX_new(kdf) }
        defer { EVP_KDF_CTX_free(context) }

        // OSSL_PARAM holds raw pointers, so the parameter bytes live in one
        // buffer that outlives the derive call, and are cleared after it.
        let present = octets.filter { !$0.1.isEmpty }
        var storage = present.flatMap { $0.1 }
        defer { for index in storage.indices { storage[index] = 0 } }
        var output = [UInt8](repeating: 0, count: outputByteCount)

        try OpenSSL.check("EVP_KDF_derive(\(name))") {
            storage.withUnsafeMutableBytes { raw in
                var params: [OSSL_PARAM] = []
                var offset = 0
                for (key, value) in present {
                    params.append(OSSL_PARAM_construct_octet_string(cString(key), raw.baseAddress! + offset, value.count))
                    offset += value.count
                }
                // OpenSSL only reads a parameter it is given; the cast to mutable is its API's.
                params.append(OSSL_PARAM_construct_utf8_string(cString("digest"), UnsafeMutablePointer(mutating: cString("SHA256")), 0))
                params.append(OSSL_PARAM_construct_end())
                return output.withUnsafeMutableBufferPointer { out in
                    EVP_KDF_derive(context, out.baseAddress, outputByteCount, &params)
                }
            }
        }
        return output
    }
}

/// A string literal as a C string, valid for the life of the program.
func cString(_ literal: StaticString) -> UnsafePointer<CChar> {
    UnsafeRawPointer(literal.utf8Start).assumingMemoryBound(to: CChar.self)
}
