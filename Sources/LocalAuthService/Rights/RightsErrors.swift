import DBusCore
import LocalAuthCrypto
import LocalAuthRights
import LocalAuthShared

// The rights component's failures as the contract's errors
// (dbus/org.example.LocalAuth.xml): by the typed code of the failure
// (RightsError, CryptoError), never by its message. Damage is logged and
// answered StorageFailed; a caller's bad input InvalidArgs; bounds LimitExceeded.
enum RightsErrors {
    /// A RightsError as the contract's error: limits by name, damage as StorageFailed (logged).
    static func rights(_ error: RightsError) -> ServiceError {
        switch error.code {
        case .notFound: return rightNotFound
        case .identifierTooLong, .appIDTooLong, .secretTooLarge, .tooManyRights, .tooManyApps, .tooMuchData:
            return ServiceErrors.limit(error.message)
        case .invalidName: return ServiceErrors.invalidArgs(error.message)
        default:
            Log.error("rights: \(error)")
            return ServiceError(.storageFailed, "the right could not be used (\(error.code))")
        }
    }

    static func crypto(_ error: CryptoError) -> ServiceError {
        switch error.code {
        case .invalidKey, .invalidInput, .unsupportedAlgorithm, .authenticationFailure:
            return ServiceErrors.invalidArgs(error.message)
        default:
            return ServiceError(.failed, "the key operation failed: \(error.code)")
        }
    }

    /// A key operation's failure: bad input from the caller is InvalidArgs;
    /// a TPM that does not answer, or anything else, is logged.
    static func keyOperation(_ error: RightsError) -> ServiceError {
        switch error.code {
        case .authenticationFailed, .malformed: return ServiceErrors.invalidArgs("the key operation failed: \(error.message)")
        default:
            Log.error("rights: key operation: \(error)")
            return ServiceError(.failed, "the key operation failed (\(error.code))")
        }
    }

    /// A TPM failure as the caller's error: unavailable and the rest as `rights` maps them.
    static func tpm(_ error: RightsError) -> ServiceError {
        switch error.code {
        case .authenticationFailed, .malformed: keyOperation(error)
        default: rights(error)
        }
    }

    static var rightNotFound: ServiceError {
        ServiceError(.rightNotFound, "no right has that identifier")
    }

    static func notAuthorized(_ why: String) -> ServiceError {
        ServiceError(.notAuthorized, why)
    }

    static var rightInvalidated: ServiceError {
        ServiceError(
            .rightInvalidated,
            "the enrolled fingerprints changed since this right was saved; it cannot be used again")
    }
}
