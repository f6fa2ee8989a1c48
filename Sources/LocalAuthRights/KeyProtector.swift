import LocalAuthCrypto

/// What a wrapped key is for, bound into the blob with its owner, so that a
/// blob made for one purpose or one right never unwraps as another.
public struct KeyContext: Hashable, Sendable {
    public enum Purpose: UInt8, Sendable {
        /// The per-right AES-256 key that seals a right's secret and private key.
        case rightKey = 1
        /// A P-256 private key itself (a backend that keeps private keys apart from rights).
        case privateKey = 2
        /// A user's login secret K (docs/KEYRING.md): never a right's key.
        case loginSecret = 3
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
/// - `SoftwareKeyProtector`: a 32-byte machine key in a root-only file, AES-256-GCM;
///   private keys are P-256 keys in this process, sealed in the right file.
/// - `TPMKeyProtector` ("tpm2"): the same machine key, sealed to the TPM;
///   private keys are TPM keys that never leave it (docs/TPM.md).
///
/// A right records the name of the backend that made it; `protector(forBackend:)`
/// picks the protector for each right, so one protector may serve several
/// backends (the TPM protector also opens the software rights made before
/// the machine key moved into the TPM).
///
/// Errors: `.unwrapFailed` when a blob does not open (another machine, another
/// context, damage), `.wrongBackend` for a blob of another backend.
public protocol KeyProtector: Sendable {
    /// Stored in every right file; short, stable, ASCII.
    var backendName: String { get }
    func wrap(_ key: [UInt8], context: KeyContext) throws(RightsError) -> [UInt8]
    func unwrap(_ blob: [UInt8], context: KeyContext) throws(RightsError) -> [UInt8]

    /// The protector for rights saved by backend `name`, nil if this one cannot
    /// open them. Default: `self` for its own name.
    func protector(forBackend name: String) -> (any KeyProtector)?
    /// A new private key for a right: its public key, and the bytes the right
    /// file seals (under the per-right key `rightKey`). Default: software P-256, PKCS#8.
    func makePrivateKey(context: KeyContext, rightKey: [UInt8]) throws(RightsError) -> (publicKey: P256.PublicKey, stored: [UInt8])
    /// The private key from the bytes `makePrivateKey` gave (unsealed). Must
    /// not need the TPM: `RightRecord.verify` calls it for every listed right.
    func privateKey(stored: [UInt8], context: KeyContext, rightKey: [UInt8]) throws(RightsError) -> any RightPrivateKey
}
