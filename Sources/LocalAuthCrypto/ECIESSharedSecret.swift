/// ECIES decryption in two steps, for a private key that is not in this
/// process (a TPM key): the caller reads the ephemeral public key, computes
/// the ECDH shared secret Z with it wherever the private key lives
/// (TPM2_ECDH_ZGen), and hands Z back. Steps 3–6 (the X9.63 KDF over the
/// ephemeral point, the AES-128-GCM key and IV, the tag) are the same code as
/// `ECIES.decrypt(_:with:)`, so both paths open the same ciphertexts.
extension ECIES {
    /// The validated ephemeral public key at the start of `ciphertext`.
    public static func ephemeralPublicKey(of ciphertext: [UInt8]) throws(CryptoError) -> P256.PublicKey {
        guard ciphertext.count >= overheadByteCount else {
            throw CryptoError(.invalidInput, "an ECIES ciphertext is at least \(overheadByteCount) bytes, not \(ciphertext.count)")
        }
        return try P256.PublicKey(x963Representation: Array(ciphertext.prefix(P256.x963ByteCount)))
    }

    /// Decrypts `ciphertext` given Z, the x-coordinate of d·E for the
    /// recipient's private key d and the ephemeral key E of `ephemeralPublicKey(of:)`.
    public static func decrypt(_ ciphertext: [UInt8], sharedSecret: [UInt8]) throws(CryptoError) -> [UInt8] {
        let ephemeral = try ephemeralPublicKey(of: ciphertext)
        guard sharedSecret.count == P256.sharedSecretByteCount else {
            throw CryptoError(.invalidInput, "an ECDH shared secret is \(P256.sharedSecretByteCount) bytes, not \(sharedSecret.count)")
        }
        let derived = try KDF.x963SHA256(sharedSecret: sharedSecret, sharedInfo: ephemeral.x963Representation,
                                         outputByteCount: aesKeyByteCount + ivByteCount)
        let body = ciphertext.dropFirst(P256.x963ByteCount)
        return try AESGCM.decrypt(Array(body.dropLast(AESGCM.tagByteCount)), tag: Array(body.suffix(AESGCM.tagByteCount)),
                                  key: Array(derived.prefix(aesKeyByteCount)), iv: Array(derived.suffix(ivByteCount)),
                                  associatedData: [])
    }
}
