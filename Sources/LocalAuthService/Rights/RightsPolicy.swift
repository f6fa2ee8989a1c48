import DBusCore
import LocalAuthRights
import LocalAuthShared

// The rules of rights (docs/RIGHTS.md), as pure functions of what the seams
// said: which evaluation a right requires, the binding of a
// `biometryCurrentSet` right to the enrolled set it was saved with, whose
// app and account a call is for, and what CanAuthorizeRight answers.

/// What a right's requirement asks for now.
enum RightEvaluationNeeded: Equatable {
    /// Authorizing it is an evaluation of this policy.
    case evaluate(PolicyValue)
    /// A `biometryCurrentSet` right whose enrolled set changed: it is dead (RightInvalidated).
    case invalidated
}

enum RightsPolicy {
    /// The evaluation `requirement` requires, given the user's enrolled set now.
    /// `enrolledSet` is asked only for a `biometryCurrentSet` right: its
    /// digest hashes every print of the user, which no other right needs.
    static func needed(_ requirement: RightRequirement, enrolledSet: () -> EnrolledSetNow) throws(ServiceError) -> RightEvaluationNeeded {
        switch requirement {
        case .default, .biometryOrPassword: return .evaluate(.deviceOwnerAuthentication)
        case .biometry: return .evaluate(.deviceOwnerAuthenticationWithBiometrics)
        case .biometryCurrentSet(let digest):
            guard try currentSetDigest(enrolledSet()) == digest else { return .invalidated }
            return .evaluate(.deviceOwnerAuthenticationWithBiometrics)
        }
    }

    /// The digest a `biometryCurrentSet` right is bound to: there must be a reader and prints.
    static func currentSetDigest(_ enrolledSet: EnrolledSetNow) throws(ServiceError) -> [UInt8] {
        switch enrolledSet {
        case .noReader: throw ServiceErrors.noReader
        case .empty: throw ServiceErrors.la(.biometryNotEnrolled, "no fingerprints are enrolled for this user")
        case .enrolled(let digest): return digest
        }
    }

    /// The requirement a new right is saved with; `biometryCurrentSet` binds the enrolled set now.
    static func requirement(_ name: RightRequirementName, enrolledSet: () -> EnrolledSetNow) throws(ServiceError) -> RightRequirement {
        switch name {
        case .default: .default
        case .biometry: .biometry
        case .biometryOrPassword: .biometryOrPassword
        case .biometryCurrentSet: .biometryCurrentSet(enrolledSetDigest: try currentSetDigest(enrolledSet()))
        }
    }

    static func requirementName(_ requirement: RightRequirement) -> RightRequirementName {
        switch requirement {
        case .default: .default
        case .biometry: .biometry
        case .biometryCurrentSet: .biometryCurrentSet
        case .biometryOrPassword: .biometryOrPassword
        }
    }

    /// CanAuthorizeRight: policy 1 needs usable biometrics; policy 2
    /// biometrics or else the account's password. `biometrics` is why
    /// biometrics cannot be used (nil: they can).
    static func checkCanAuthorize(_ policy: PolicyValue, biometrics: ServiceError?, hasPassword: () -> Bool) throws(ServiceError) {
        guard let biometrics else { return }
        switch policy {
        case .deviceOwnerAuthenticationWithBiometrics:
            throw biometrics
        case .deviceOwnerAuthentication:
            if !hasPassword() {
                throw ServiceErrors.la(.passcodeNotSet, "the account has no password, and biometrics cannot be used")
            }
        }
    }

    /// Whose rights a uid's are (Rights/RightsAccount.swift): as the print
    /// store does, a uid without an account is its number.
    static func account(of uid: UInt32, name: String?) -> String { name ?? String(uid) }
}
