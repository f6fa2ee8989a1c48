import DBusCore
import LocalAuthShared

/// What an EvaluatePolicy call will do, decided from what is known before
/// anything waits: pure logic, unit-tested without the rig
/// (Tests/LocalAuthServiceTests/EvaluationPlanTests.swift).
enum EvaluationPlan: Equatable {
    /// A recent fingerprint match stands in for a new scan: true at once.
    case reuse
    /// The call fails at once with this error.
    case fail(ServiceError)
    /// Wait for the person: the fingerprint (if usable), the password (policy 2).
    case run(fingerprint: Bool, password: Bool)

    /// The last fingerprint match of a user, and the enrolled set it matched.
    struct LastMatch {
        let time: ContinuousClock.Instant
        let enrolledSet: [[UInt8]]
    }

    /// - Parameters:
    ///   - biometrics: why the fingerprint cannot be used now (no reader, no
    ///     prints, locked out, cooling down), or nil when it can.
    ///   - enrolledSet: the user's usable prints now (`Verifier.enrolledSet`).
    ///   - hasPassword: whether the account has a password; it matters only
    ///     when the fingerprint cannot be used (the caller may skip the lookup).
    static func decide(policy: PolicyValue, biometrics: ServiceError?, enrolledSet: [[UInt8]], hasPassword: Bool,
                       interactionNotAllowed: Bool, reuseDuration: Double, lastMatch: LastMatch?,
                       now: ContinuousClock.Instant) -> EvaluationPlan {
        // Both policies accept a fingerprint, so a recent fingerprint match
        // may stand in for a new scan; never a password (policy 1 must mean
        // a finger), never once biometrics cannot be used (no reader, no
        // prints, locked out), never after the enrolled set changed.
        if reuseDuration > 0, biometrics == nil, let lastMatch,
           now - lastMatch.time <= .seconds(reuseDuration), lastMatch.enrolledSet == enrolledSet {
            return .reuse
        }
        switch policy {
        case .deviceOwnerAuthenticationWithBiometrics:
            if let biometrics { return .fail(biometrics) }
        case .deviceOwnerAuthentication:
            if biometrics != nil, !hasPassword {
                return .fail(ServiceErrors.la(.passcodeNotSet, "the account has no password, and biometrics cannot be used"))
            }
        }
        if interactionNotAllowed {
            return .fail(ServiceErrors.la(.notInteractive, "authentication needs the user but interaction is not allowed"))
        }
        return .run(fingerprint: biometrics == nil, password: policy == .deviceOwnerAuthentication)
    }
}
