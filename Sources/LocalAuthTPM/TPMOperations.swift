import LocalAuthCrypto

/// What LocalAuth asks of a TPM, each a whole operation (connect, primary,
/// load, use, flush; see `TPMDevice`). Key and secret bytes are only passed
/// through; auth values are the caller's (a right derives one per key).
extension TPMDevice {
    /// Seals up to 128 bytes (the machine key) to this TPM.
    public func seal(_ secret: [UInt8]) throws(TPMError) -> TPMObjectBlob {
        try withPrimary { (session) throws(TPMError) in try session.create(TPMTemplates.sealedData, data: secret) }
    }

    /// The bytes `seal` sealed; `.foreignObject` on another or a cleared TPM.
    public func unseal(_ blob: TPMObjectBlob) throws(TPMError) -> [UInt8] {
        try withPrimary { (session) throws(TPMError) in
            try session.withObject(blob) { (handle) throws(TPMError) in try session.unseal(handle) }
        }
    }

    /// A new P-256 key made in the TPM; its private part never leaves it.
    /// `authValue` (at most 32 bytes) is then needed for every use.
    public func createP256Key(authValue: [UInt8]) throws(TPMError) -> (blob: TPMObjectBlob, publicKey: P256.PublicKey) {
        let blob = try withPrimary { (session) throws(TPMError) in try session.create(TPMTemplates.p256Key, authValue: authValue) }
        return (blob, try blob.p256PublicKey())
    }

    /// ECDSA P-256 over SHA-256 of `message`, in the TPM; X9.62 DER, like
    /// `P256.PrivateKey.signature(for:)` (Apple's `.ecdsaSignatureMessageX962SHA256`).
    public func signature(for message: [UInt8], key: TPMObjectBlob, authValue: [UInt8]) throws(TPMError) -> [UInt8] {
        let digest: [UInt8]
        do { digest = try SHA256.hash(message) } catch { throw Self.cryptoFailure("SHA-256", error) }
        return try signature(forDigest: digest, key: key, authValue: authValue)
    }

    /// ECDSA P-256 of a SHA-256 digest, in the TPM; DER (`.ecdsaSignatureDigestX962SHA256`).
    public func signature(forDigest digest: [UInt8], key: TPMObjectBlob, authValue: [UInt8]) throws(TPMError) -> [UInt8] {
        let (r, s) = try withPrimary { (session) throws(TPMError) in
            try session.withObject(key, authValue: authValue) { (handle) throws(TPMError) in try session.signECDSA(handle, digest: digest) }
        }
        do { return try ECDSASignature.der(r: r, s: s) } catch { throw Self.cryptoFailure("ECDSA_SIG", error) }
    }

    /// The ECDH shared secret with `peer` (TPM2_ECDH_ZGen): the x-coordinate
    /// of d·Q, 32 bytes, as `P256.PrivateKey.sharedSecretFromKeyAgreement`.
    public func sharedSecret(with peer: P256.PublicKey, key: TPMObjectBlob, authValue: [UInt8]) throws(TPMError) -> [UInt8] {
        let point = peer.x963Representation
        return try withPrimary { (session) throws(TPMError) in
            try session.withObject(key, authValue: authValue) { (handle) throws(TPMError) in
                try session.ecdhZGen(handle, peerX: Array(point[1...32]), peerY: Array(point[33...64]))
            }
        }
    }

    /// A libcrypto failure around a TPM operation (out of memory, in practice),
    /// as a TPMError of kind `.other` with the crypto code in the text, so
    /// these functions throw one type.
    static func cryptoFailure(_ what: String, _ error: CryptoError) -> TPMError {
        TPMError(responseCode: TSS.esysLayer | 1, call: what, text: "\(error.code): \(error.message)")
    }
}
