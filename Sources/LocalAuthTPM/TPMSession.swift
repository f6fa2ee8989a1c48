internal import CTSS2

/// The ESAPI commands LocalAuth uses, one method each, every call through
/// `TSS.call`. Out-parameters ESAPI allocates are freed with `Esys_Free`;
/// optional ones we do not need are passed as NULL.
extension Session {
    /// TPM2_CreatePrimary under the owner hierarchy (empty owner auth) with
    /// `TPMTemplates.storagePrimary`.
    func createPrimary() throws(TPMError) -> ESYS_TR {
        var sensitive = TPM2B_SENSITIVE_CREATE()
        var template = TPMTemplates.storagePrimary
        var outsideInfo = TPM2B_DATA()
        var pcrs = TPML_PCR_SELECTION()
        var handle = ESYS_TR(ESYS_TR_NONE)
        try TSS.call("Esys_CreatePrimary") {
            Esys_CreatePrimary(context, ESYS_TR(ESYS_TR_RH_OWNER), ESYS_TR(ESYS_TR_PASSWORD), ESYS_TR(ESYS_TR_NONE), ESYS_TR(ESYS_TR_NONE),
                               &sensitive, &template, &outsideInfo, &pcrs, &handle, nil, nil, nil, nil)
        }
        return handle
    }

    /// TPM2_Create under the primary: a new object from `template`, with
    /// `data` as its sealed contents (sealed data objects) and `authValue`.
    func create(_ template: TPM2B_PUBLIC, data: [UInt8] = [], authValue: [UInt8] = []) throws(TPMError) -> TPMObjectBlob {
        var sensitive = TPM2B_SENSITIVE_CREATE()
        sensitive.sensitive.data.size = try TPMBytes.write(data, into: &sensitive.sensitive.data.buffer)
        sensitive.sensitive.userAuth.size = try TPMBytes.write(authValue, into: &sensitive.sensitive.userAuth.buffer)
        // Clear our copy of the secret whatever happens (ESAPI keeps none).
        defer { sensitive = TPM2B_SENSITIVE_CREATE() }
        var template = template
        var outsideInfo = TPM2B_DATA()
        var pcrs = TPML_PCR_SELECTION()
        var outPrivate: UnsafeMutablePointer<TPM2B_PRIVATE>?
        var outPublic: UnsafeMutablePointer<TPM2B_PUBLIC>?
        defer {
            Esys_Free(outPrivate)
            Esys_Free(outPublic)
        }
        try TSS.call("Esys_Create") {
            Esys_Create(context, primary, ESYS_TR(ESYS_TR_PASSWORD), ESYS_TR(ESYS_TR_NONE), ESYS_TR(ESYS_TR_NONE),
                        &sensitive, &template, &outsideInfo, &pcrs, &outPrivate, &outPublic, nil, nil, nil)
        }
        return try TPMObjectBlob(public: outPublic!.pointee, private: outPrivate!.pointee)
    }

    /// TPM2_Load under the primary; the caller flushes the handle. A blob of
    /// another TPM (or of this one before it was cleared) fails here, with
    /// `.foreignObject`.
    func load(_ blob: TPMObjectBlob, authValue: [UInt8] = []) throws(TPMError) -> ESYS_TR {
        var (publicArea, privateArea) = try TPMObjectBlob.parts(of: blob.bytes)
        var handle = ESYS_TR(ESYS_TR_NONE)
        try TSS.call("Esys_Load") {
            Esys_Load(context, primary, ESYS_TR(ESYS_TR_PASSWORD), ESYS_TR(ESYS_TR_NONE), ESYS_TR(ESYS_TR_NONE),
                      &privateArea, &publicArea, &handle)
        }
        if !authValue.isEmpty {
            var auth = TPM2B_AUTH()
            do {
                auth.size = try TPMBytes.write(authValue, into: &auth.buffer)
                try TSS.call("Esys_TR_SetAuth") { Esys_TR_SetAuth(context, handle, &auth) }
            } catch {
                flush(handle)
                throw error
            }
        }
        return handle
    }

    /// Loads `blob`, runs `body` with its handle, and flushes it.
    func withObject<R>(_ blob: TPMObjectBlob, authValue: [UInt8] = [], _ body: (ESYS_TR) throws(TPMError) -> R) throws(TPMError) -> R {
        let handle = try load(blob, authValue: authValue)
        defer { flush(handle) }
        return try body(handle)
    }

    /// TPM2_Unseal.
    func unseal(_ handle: ESYS_TR) throws(TPMError) -> [UInt8] {
        var data: UnsafeMutablePointer<TPM2B_SENSITIVE_DATA>?
        defer { Esys_Free(data) }
        try TSS.call("Esys_Unseal") {
            Esys_Unseal(context, handle, ESYS_TR(ESYS_TR_PASSWORD), ESYS_TR(ESYS_TR_NONE), ESYS_TR(ESYS_TR_NONE), &data)
        }
        return TPMBytes.read(data!.pointee.buffer, count: data!.pointee.size)
    }

    /// TPM2_Sign, ECDSA with SHA-256 over a 32-byte digest; (r, s), each 32 bytes.
    func signECDSA(_ handle: ESYS_TR, digest: [UInt8]) throws(TPMError) -> (r: [UInt8], s: [UInt8]) {
        var input = TPM2B_DIGEST()
        input.size = try TPMBytes.write(digest, into: &input.buffer)
        var scheme = TPMT_SIG_SCHEME()
        scheme.scheme = TPM2_ALG_ECDSA
        scheme.details.ecdsa.hashAlg = TPM2_ALG_SHA256
        // An unrestricted key signs any digest: the "null ticket" says no
        // proof that the TPM hashed the message is needed.
        var ticket = TPMT_TK_HASHCHECK()
        ticket.tag = TPM2_ST_HASHCHECK
        ticket.hierarchy = TPM2_RH_NULL
        var signature: UnsafeMutablePointer<TPMT_SIGNATURE>?
        defer { Esys_Free(signature) }
        try TSS.call("Esys_Sign") {
            Esys_Sign(context, handle, ESYS_TR(ESYS_TR_PASSWORD), ESYS_TR(ESYS_TR_NONE), ESYS_TR(ESYS_TR_NONE),
                      &input, &scheme, &ticket, &signature)
        }
        let ecdsa = signature!.pointee.signature.ecdsa
        return (try TPMBytes.padded(TPMBytes.read(ecdsa.signatureR.buffer, count: ecdsa.signatureR.size)),
                try TPMBytes.padded(TPMBytes.read(ecdsa.signatureS.buffer, count: ecdsa.signatureS.size)))
    }

    /// TPM2_ECDH_ZGen: the x-coordinate of d·peer, 32 bytes (d in the TPM).
    func ecdhZGen(_ handle: ESYS_TR, peerX: [UInt8], peerY: [UInt8]) throws(TPMError) -> [UInt8] {
        var point = TPM2B_ECC_POINT()
        point.point.x.size = try TPMBytes.write(peerX, into: &point.point.x.buffer)
        point.point.y.size = try TPMBytes.write(peerY, into: &point.point.y.buffer)
        var output: UnsafeMutablePointer<TPM2B_ECC_POINT>?
        defer { Esys_Free(output) }
        try TSS.call("Esys_ECDH_ZGen") {
            Esys_ECDH_ZGen(context, handle, ESYS_TR(ESYS_TR_PASSWORD), ESYS_TR(ESYS_TR_NONE), ESYS_TR(ESYS_TR_NONE), &point, &output)
        }
        return try TPMBytes.padded(TPMBytes.read(output!.pointee.point.x.buffer, count: output!.pointee.point.x.size))
    }
}
