import DBusCore
@testable import LocalAuthService
import LocalAuthShared

// Fakes for the rights component's seams (Rights/RightsSeams.swift): the
// evaluation answers what the test says, the enrolled set is what the test
// sets, the clock moves only when told. The storage and the cryptography
// behind them are the real ones.

/// The evaluation a right requires: yes, or the error the test chose.
@ServiceActor
final class FakeRightsEvaluation: RightsEvaluation {
    /// nil: the person is verified.
    var failure: ServiceError?
    /// Why biometrics cannot be used (CanAuthorizeRight); nil: they can.
    var biometricsRefusal: ServiceError?
    /// Runs during an evaluation, as another call could while the person is at the reader.
    var meanwhile: (@ServiceActor () async -> Void)?
    private(set) var evaluations: [(policy: PolicyValue, reason: String, options: EvaluationOptions)] = []

    func evaluate(
        _ call: Request, policy: PolicyValue, reason: String,
        options: EvaluationOptions
    ) async throws(ServiceError) {
        evaluations.append((policy, reason, options))
        await meanwhile?()
        if let failure { throw failure }
    }

    func checkBiometricsUsable(uid: UInt32) throws(ServiceError) {
        if let biometricsRefusal { throw biometricsRefusal }
    }
}

/// Each uid's enrolled set, as the domain state would hash it.
@ServiceActor
final class FakeEnrolledSets: RightsEnrolledSets {
    var sets: [UInt32: EnrolledSetNow] = [:]
    var standard = EnrolledSetNow.enrolled(digest: Array(repeating: 0xA1, count: 32))

    func enrolledSet(of uid: UInt32) -> EnrolledSetNow { sets[uid] ?? standard }
}

/// Which app each connection is; a host program unless the test says otherwise.
@ServiceActor
final class FakeCallerApps: RightsCallerApps {
    var apps: [String: AppIdentity] = [:]

    func app(of caller: CallerRecord) -> AppIdentity { apps[caller.sender] ?? .host }
}

/// The account database: names by uid, and who has a password.
@ServiceActor
final class FakeAccounts: RightsAccounts {
    var names: [UInt32: String] = [:]
    var withPassword: Set<UInt32> = []

    func accountName(of uid: UInt32) -> String? { names[uid] }
    func hasPassword(uid: UInt32) -> Bool { withPassword.contains(uid) }
}
