import DBusCore
import LocalAuthShared

// The rights component's seams (RightsSeams.swift) served by what the
// service has today: wiring only, every decision stays in the component.
// The evaluation is `LocalAuthService.evaluate` until the evaluator
// component takes it; the enrolled set is the domain state's hash.

extension RightsCall {
    /// A rights method call as the component sees it.
    init(_ request: Request) {
        self.init(sender: request.sender, uid: request.uid, caller: request.caller, record: request.record, request: request)
    }
}

/// The seams as the running service serves them.
@ServiceActor
final class ServiceRightsWiring: RightsEvaluation, RightsEnrolledSets, RightsCallerApps, RightsAccounts {
    /// The service outlives the component that alone holds this adapter
    /// (unowned(unsafe): a checked `unowned` load takes the side table's slow
    /// retain and release on every call; see ServiceEvaluatorWiring).
    private unowned(unsafe) let service: LocalAuthService

    init(_ service: LocalAuthService) { self.service = service }

    var seams: RightsSeams {
        RightsSeams(evaluation: self, enrolledSets: self, callerApps: self, accounts: self, clock: EventLoopClock())
    }

    func evaluate(
        _ call: RightsCall, policy: PolicyValue, reason: String,
        options: EvaluationOptions
    ) async throws(ServiceError) {
        guard let request = call.request else { throw ServiceError(.failed, "a rights call without its bus request") }
        try await service.evaluator.evaluate(request, policy: policy, reason: reason, options: options)
    }

    func checkBiometricsUsable(uid: UInt32) throws(ServiceError) {
        _ = try service.evaluator.usablePrints(for: uid)
    }

    func enrolledSet(of uid: UInt32) -> EnrolledSetNow {
        guard let reader = service.readerChoice.reader(for: uid) else { return .noReader }
        guard !service.prints.prints(of: uid, for: reader).isEmpty else { return .empty }
        return .enrolled(digest: service.readerChoice.enrolledSetHash(uid: uid, reader: reader))
    }

    func app(of caller: CallerRecord) -> AppIdentity {
        service.callers.identity(caller).app
    }

    func accountName(of uid: UInt32) -> String? { Users.name(of: uid) }

    func hasPassword(uid: UInt32) -> Bool { Accounts.hasPassword(uid: uid) }
}
