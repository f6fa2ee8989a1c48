import LocalAuthCrypto
import LocalAuthSystem

/// Why a right, its key or its file could not be used: a code to compare and
/// a message for the log. A struct with named codes (as `DBusError` and
/// `CryptoError`), so that codes can be added without breaking a switch.
/// Messages name files and owners but never carry secret or key bytes.
public struct RightsError: DomainError {
    public struct Code: ErrorCode {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        // What a caller asked for, past a limit (`RightLimits`).
        public static let invalidName: Code = "invalid-name"
        public static let identifierTooLong: Code = "identifier-too-long"
        public static let appIDTooLong: Code = "app-id-too-long"
        public static let secretTooLarge: Code = "secret-too-large"
        public static let tooManyRights: Code = "too-many-rights"
        /// A new app id past `RightLimits.appsPerUser` for one uid.
        public static let tooManyApps: Code = "too-many-apps"
        /// A save past `RightLimits.bytesPerUser` on disk for one uid.
        public static let tooMuchData: Code = "too-much-data"
        /// The rights of a uid were saved by another account (a deleted one
        /// whose uid was given to a new account): refused, never opened.
        public static let accountChanged: Code = "account-changed"

        // The machine key file of the software backend.
        public static let machineKeyNotAFile: Code = "machine-key-not-a-file"
        public static let machineKeyWrongOwner: Code = "machine-key-wrong-owner"
        public static let machineKeyInsecurePermissions: Code = "machine-key-insecure-permissions"
        public static let machineKeyWrongSize: Code = "machine-key-wrong-size"

        /// The machine key is sealed to a TPM (`keys/machine-key.tpm`); the software backend will not make another.
        public static let machineKeySealed: Code = "machine-key-sealed"

        // The TPM backend (docs/TPM.md).
        /// No TPM answered: not there, not reachable, or gone mid-operation. Nothing was changed.
        public static let tpmUnavailable: Code = "tpm-unavailable"
        /// The TPM refuses a key or the sealed machine key as not its own: the
        /// state directory comes from another machine, or this TPM was cleared
        /// or replaced. Those rights can never be opened again.
        public static let tpmForeignKey: Code = "tpm-foreign-key"
        /// Any other TPM failure (its response code and text in the message).
        public static let tpm: Code = "tpm"
        /// A TPM right's private key cannot be handed out, only used.
        public static let keyNotExportable: Code = "key-not-exportable"

        // Key wrapping.
        /// The blob does not open: another machine key, or a blob made for another right.
        public static let unwrapFailed: Code = "unwrap-failed"
        /// The blob, or the right, was made by another key-protection backend.
        public static let wrongBackend: Code = "wrong-backend"

        // The right file.
        public static let badMagic: Code = "bad-magic"
        public static let unsupportedVersion: Code = "unsupported-version"
        public static let truncated: Code = "truncated"
        public static let oversize: Code = "oversize"
        public static let malformed: Code = "malformed"
        /// A sealed part (secret, private key) does not open with the header it is bound to.
        public static let authenticationFailed: Code = "authentication-failed"
        /// A file whose contents belong to another owner than its place says.
        public static let misplaced: Code = "misplaced"

        // Storage.
        public static let notFound: Code = "not-found"
        public static let io: Code = "io"
        /// libcrypto failed for a reason unrelated to the data (out of memory).
        public static let crypto: Code = "crypto"
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }


    /// A libcrypto failure as a rights error; authentication failures keep their meaning.
    static func crypto(_ error: CryptoError, _ what: String, authentication: Code = .authenticationFailed) -> RightsError {
        switch error.code {
        case .authenticationFailure: RightsError(authentication, "\(what): \(error.message)")
        case .invalidKey, .invalidInput: RightsError(.malformed, "\(what): \(error.message)")
        default: RightsError(.crypto, "\(what): \(error.message)")
        }
    }
}
