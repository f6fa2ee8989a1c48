internal import COpenSSL

/// SHA-256 (EVP_Digest): for file names made from identifiers and for digests to sign.
public enum SHA256 {
    public static let byteCount = 32

    public static func hash(_ data: [UInt8]) throws(CryptoError) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var size: UInt32 = 0
        try data.withCBytes { (input, count) throws(CryptoError) in
            try OpenSSL.check("EVP_Digest(SHA-256)") {
                digest.withUnsafeMutableBufferPointer { EVP_Digest(input, count, $0.baseAddress, &size, EVP_sha256(), nil) }
            }
        }
        return Array(digest.prefix(Int(size)))
    }
}
