/// What a wrapped key is for, bound into the blob with its owner, so that a
/// blob made for one purpose or one right never unwraps as another.
public struct KeyContext: Hashable, Sendable {
    public enum Purpose: UInt8, Sendable {
        /// The per-right AES-256 key that seals a right's secret and private key.
        case rightKey = 1
        /// A P-256 private key itself (a backend that keeps private keys apart from rights).
        case privateKey = 2
    }

    public let owner: RightOwner
    public let purpose: Purpose

    public init(owner: RightOwner, purpose: Purpose) {
        self.owner = owner
        self.purpose = purpose
    }

    /// The context as associated data: a label and version, the purpose, the owner.
    var associatedData: [UInt8] {
        Array("org.example.LocalAuth key wrap 1".utf8) + [0, purpose.rawValue] + owner.encoded
    }
}

/// Protects the keys of rights at rest: `wrap` turns key bytes into a blob
/// that only this machine (its machine key, later its TPM) can turn back, and
/// only for the same context.
///
/// Conformers:
/// - `SoftwareKeyProtector`: a 32-byte machine key in a root-only file, AES-256-GCM.
/// - `TPMKeyProtector` (the TPM issue, tpm2-tss): would create a storage
///   primary key under the TPM's owner hierarchy and seal each key as a TPM
///   object (TPM2_Create with the key as sensitive data, its authPolicy tied
///   to the context by a policy digest over the associated data), storing
///   TPM2B_PUBLIC ‖ TPM2B_PRIVATE as the blob; `unwrap` loads and unseals it
///   (TPM2_Load, TPM2_Unseal). A copied disk then opens nowhere else, even
///   with the machine's files. Its `backendName` is "tpm2"; rights record
///   the name, so a right is never handed to the wrong backend.
///
/// Errors: `.unwrapFailed` when a blob does not open (another machine, another
/// context, damage), `.wrongBackend` for a blob of another backend.
public protocol KeyProtector: Sendable {
    /// Stored in every right file; short, stable, ASCII.
    var backendName: String { get }
    func wrap(_ key: [UInt8], context: KeyContext) throws(RightsError) -> [UInt8]
    func unwrap(_ blob: [UInt8], context: KeyContext) throws(RightsError) -> [UInt8]
}
