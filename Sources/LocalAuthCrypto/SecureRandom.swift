internal import COpenSSL

/// Random bytes from OpenSSL's DRBG (seeded from getrandom), for keys and nonces.
public enum SecureRandom {
    public static func bytes(_ count: Int) throws(CryptoError) -> [UInt8] {
        guard count >= 0, count <= Int(Int32.max) else { throw CryptoError(.invalidInput, "cannot make \(count) random bytes") }
        var bytes = [UInt8](repeating: 0, count: count)
        guard count > 0 else { return bytes }
        try OpenSSL.check("RAND_bytes", as: .randomFailure) {
            bytes.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32(count)) }
        }
        return bytes
    }
}
