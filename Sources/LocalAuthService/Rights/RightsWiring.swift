import DBusCore
import LocalAuthShared

// The rights component's seams (RightsSeams.swift) served by the service's
// components: wiring only, every decision stays in the component. The
// evaluation is the Evaluator's; the enrolled set is the domain state's hash.

/// The seams as the running service serves them.
@ServiceActor
struct ServiceRightsWiring: RightsEvaluation, RightsEnrolledSets, RightsCallerApps, RightsAccounts {
    let evaluator: Evaluator
    let readerChoice: ReaderChoice
    let prints: PrintStore
    let callers: Callers

    var seams: RightsSeams {
        RightsSeams(evaluation: self, enrolledSets: self, callerApps: self, accounts: self, clock: EventLoopClock())
    }

    func evaluate(
        _ request: Request, policy: PolicyValue, reason: String,
        options: EvaluationOptions
    ) async throws(ServiceError) {
        try await evaluator.evaluate(request, policy: policy, reason: reason, options: options)
    }

    func checkBiometricsUsable(uid: UInt32) throws(ServiceError) {
        _ = try evaluator.usablePrints(for: uid)
    }

    func enrolledSet(of uid: UInt32) -> EnrolledSetNow {
        guard let reader = readerChoice.reader(for: uid) else { return .noReader }
        guard !prints.prints(of: uid, for: reader).isEmpty else { return .empty }
        return .enrolled(digest: readerChoice.enrolledSetHash(uid: uid, reader: reader))
    }

    func app(of caller: CallerRecord) -> AppIdentity {
        callers.identity(caller).app
    }

    func accountName(of uid: UInt32) -> String? { Users.name(of: uid) }

    func hasPassword(uid: UInt32) -> Bool { Accounts.hasPassword(uid: uid) }
}
