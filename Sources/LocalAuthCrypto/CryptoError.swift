import LocalAuthSystem

/// A cryptographic operation that failed: a code to compare and a message for people.
///
/// A struct rather than an enum (as `DBusError`) so that codes can be added
/// without breaking anyone who switches on them; compare `code` with the
/// named constants in `CryptoError.Code`. Messages from OpenSSL's error queue
/// are appended to `message`; they never contain key material.
public struct CryptoError: DomainError {
    public struct Code: ErrorCode {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// libcrypto failed for a reason not named below (out of memory, a missing algorithm).
        public static let library: Code = "library"
        /// An AES-GCM tag did not match: wrong key, wrong associated data, or damaged bytes.
        public static let authenticationFailure: Code = "authentication-failure"
        /// Key bytes that are not a valid key of the expected kind (not P-256, not on the curve, wrong size).
        public static let invalidKey: Code = "invalid-key"
        /// An input of the wrong size or shape (a nonce, a sealed box, a ciphertext too short).
        public static let invalidInput: Code = "invalid-input"
        /// An algorithm this build does not implement, or one used for the wrong operation.
        public static let unsupportedAlgorithm: Code = "unsupported-algorithm"
        /// The random generator could not deliver.
        public static let randomFailure: Code = "random-failure"
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

}
