/// What must happen before a right's secret or private key is used: Apple's
/// `LAAuthenticationRequirement`.
public enum RightRequirement: Hashable, Sendable {
    /// `.default`: the owner, by fingerprint or the account password.
    case `default`
    /// `.biometry`: any enrolled fingerprint.
    case biometry
    /// `.biometryCurrentSet`: a fingerprint of the set enrolled when the right
    /// was saved. The digest identifies that set (the service computes it from
    /// the enrolled prints); adding or removing a finger changes it and makes
    /// the right unusable, as on Apple's platforms.
    case biometryCurrentSet(enrolledSetDigest: [UInt8])
    /// `.biometry(fallback: .devicePasscode)`: a fingerprint, or the account password.
    case biometryOrPassword

    public static let enrolledSetDigestByteCount = 32

    var kind: UInt8 {
        switch self {
        case .default: 0
        case .biometry: 1
        case .biometryCurrentSet: 2
        case .biometryOrPassword: 3
        }
    }

    /// The kind byte, and the digest for `.biometryCurrentSet`.
    var encoded: [UInt8] {
        if case .biometryCurrentSet(let digest) = self { return [kind] + digest }
        return [kind]
    }

    static func decode(_ bytes: [UInt8]) throws(RightsError) -> RightRequirement {
        switch (bytes.first, bytes.count) {
        case (0, 1): return .default
        case (1, 1): return .biometry
        case (2, 1 + enrolledSetDigestByteCount): return .biometryCurrentSet(enrolledSetDigest: Array(bytes.dropFirst()))
        case (3, 1): return .biometryOrPassword
        default: throw RightsError(.malformed, "unknown requirement (\(bytes.count) bytes, kind \(bytes.first.map(String.init) ?? "none"))")
        }
    }
}
