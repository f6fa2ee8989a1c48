internal import CTSS2

/// The public templates of the three kinds of TPM object LocalAuth makes.
///
/// - The storage primary key: ECC P-256 under the owner (storage) hierarchy,
///   restricted decrypt, AES-128-CFB for its children (the TCG's usual SRK
///   shape). It is derived from the hierarchy's seed and this fixed template,
///   so TPM2_CreatePrimary gives the same key every time on the same TPM
///   until it is cleared, and nothing persistent (no NV index, no persistent
///   handle) is needed. Another TPM, or this one after TPM2_Clear, gives
///   another key, under which none of our blobs load.
/// - A sealed data object (KEYEDHASH, no scheme): the machine key.
/// - A right's P-256 key: unrestricted, sign and decrypt (ECDSA with the
///   scheme chosen at signing, and TPM2_ECDH_ZGen), the private part made in
///   the TPM (sensitiveDataOrigin) and never exported (fixedTPM, fixedParent).
///
/// All are noDA: their auth values are empty or 32 random bytes, for which
/// the dictionary-attack lockout would only let a bug lock the TPM.
enum TPMTemplates {
    static let commonAttributes: TPMA_OBJECT = TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_USERWITHAUTH | TPMA_OBJECT_NODA

    static var storagePrimary: TPM2B_PUBLIC {
        var template = p256(TPMA_OBJECT_RESTRICTED | TPMA_OBJECT_DECRYPT | TPMA_OBJECT_SENSITIVEDATAORIGIN)
        template.publicArea.parameters.eccDetail.symmetric.algorithm = TPM2_ALG_AES
        template.publicArea.parameters.eccDetail.symmetric.keyBits.aes = 128
        template.publicArea.parameters.eccDetail.symmetric.mode.aes = TPM2_ALG_CFB
        return template
    }

    static var sealedData: TPM2B_PUBLIC {
        var template = object(TPM2_ALG_KEYEDHASH, attributes: 0)
        template.publicArea.parameters.keyedHashDetail.scheme.scheme = TPM2_ALG_NULL
        return template
    }

    static var p256Key: TPM2B_PUBLIC {
        var template = p256(TPMA_OBJECT_SENSITIVEDATAORIGIN | TPMA_OBJECT_SIGN_ENCRYPT | TPMA_OBJECT_DECRYPT)
        template.publicArea.parameters.eccDetail.symmetric.algorithm = TPM2_ALG_NULL
        return template
    }

    /// What all three share: the type, SHA-256 names, `commonAttributes` and
    /// the kind's own `attributes`.
    private static func object(_ type: TPM2_ALG_ID, attributes: TPMA_OBJECT) -> TPM2B_PUBLIC {
        var template = TPM2B_PUBLIC()
        template.publicArea.type = type
        template.publicArea.nameAlg = TPM2_ALG_SHA256
        template.publicArea.objectAttributes = commonAttributes | attributes
        return template
    }

    /// A P-256 key with no signing scheme or KDF fixed in it (each use names
    /// its own); the caller sets its symmetric algorithm.
    private static func p256(_ attributes: TPMA_OBJECT) -> TPM2B_PUBLIC {
        var template = object(TPM2_ALG_ECC, attributes: attributes)
        template.publicArea.parameters.eccDetail.scheme.scheme = TPM2_ALG_NULL
        template.publicArea.parameters.eccDetail.curveID = TPM2_ECC_NIST_P256
        template.publicArea.parameters.eccDetail.kdf.scheme = TPM2_ALG_NULL
        return template
    }
}
