import LocalAuthCrypto

/// Why a right, its key or its file could not be used: a code to compare and
/// a message for the log. A struct with named codes (as `DBusError` and
/// `CryptoError`), so that codes can be added without breaking a switch.
/// Messages name files and owners but never carry secret or key bytes.
public struct RightsError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(stringLiteral value: String) { self.rawValue = value }
        public var description: String { rawValue }

        // What a caller asked for, past a limit (`RightLimits`).
        public static let invalidName: Code = "invalid-name"
        public static let identifierTooLong: Code = "identifier-too-long"
        public static let appIDTooLong: Code = "app-id-too-long"
        public static let secretTooLarge: Code = "secret-too-large"
        public static let tooManyRights: Code = "too-many-rights"

        // The machine key file of the software backend.
        public static let machineKeyNotAFile: Code = "machine-key-not-a-file"
        public static let machineKeyWrongOwner: Code = "machine-key-wrong-owner"
        public static let machineKeyInsecurePermissions: Code = "machine-key-insecure-permissions"
        public static let machineKeyWrongSize: Code = "machine-key-wrong-size"

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

    public var description: String { "\(code.rawValue): \(message)" }

    /// A libcrypto failure as a rights error; authentication failures keep their meaning.
    static func crypto(_ error: CryptoError, _ what: String, authentication: Code = .authenticationFailed) -> RightsError {
        switch error.code {
        case .authenticationFailure: RightsError(authentication, "\(what): \(error.message)")
        case .invalidKey, .invalidInput: RightsError(.malformed, "\(what): \(error.message)")
        default: RightsError(.crypto, "\(what): \(error.message)")
        }
    }
}
