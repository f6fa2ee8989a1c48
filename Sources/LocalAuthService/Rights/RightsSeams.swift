import DBusCore
import LocalAuthShared

// What the rights component needs from the rest of the service, as small
// protocols it declares itself (its seams). The service serves them through
// RightsWiring.swift; the unit tests (RightsAuthorizationTests) through fakes.
// Everything decided about rights is in this folder, never behind a seam.

/// The evaluation a right requires (AuthorizeRight, CanAuthorizeRight).
@ServiceActor
protocol RightsEvaluation {
    /// Returns once the person is verified with `policy`, or throws why not.
    func evaluate(
        _ request: Request, policy: PolicyValue, reason: String,
        options: EvaluationOptions) async throws(ServiceError)
    /// Throws why `uid` cannot use biometrics now (no reader, lockout, no prints…).
    func checkBiometricsUsable(uid: UInt32) throws(ServiceError)
}

/// A user's enrolled set on the reader that serves them, as the domain state sees it.
enum EnrolledSetNow: Equatable {
    /// No reader serves the user.
    case noReader
    /// The reader serves the user, who has no prints on it.
    case empty
    /// The digest of the enrolled set (the domain state's `enrolledSetHash`).
    case enrolled(digest: [UInt8])
}

/// The current enrolled set of a uid (a `biometryCurrentSet` right is bound to it).
@ServiceActor
protocol RightsEnrolledSets {
    func enrolledSet(of uid: UInt32) -> EnrolledSetNow
}

/// Which app a caller is (Callers/AppIdentity.swift): a proven sandbox, a host program, or refused.
@ServiceActor
protocol RightsCallerApps {
    func app(of caller: CallerRecord) -> AppIdentity
}

/// The account database.
@ServiceActor
protocol RightsAccounts {
    /// The account name of `uid` now; nil if it has none.
    func accountName(of uid: UInt32) -> String?
    /// Whether the account has a password (the fallback of policy 2).
    func hasPassword(uid: UInt32) -> Bool
}

/// The seams together, as the component is made with them.
@ServiceActor
struct RightsSeams {
    let evaluation: any RightsEvaluation
    let enrolledSets: any RightsEnrolledSets
    let callerApps: any RightsCallerApps
    let accounts: any RightsAccounts
    let clock: any ServiceClock
}
