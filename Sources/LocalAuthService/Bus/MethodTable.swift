import DBusCore
import LocalAuthShared

/// One row per method of org.example.LocalAuth: its argument signature and
/// the polkit action it needs (checked before the handler runs, before any
/// state changes). This table is the only place that pairs methods with actions.
///
/// Each row names its arguments struct (`CallArguments`), which the router
/// decodes and validates once, at arrival. Methods about prints may name
/// another user (the struct's `namedUser`): for those the action is `manage`
/// instead, whatever the row says (Authorization.swift).
struct MethodSpec {
    let signature: String
    /// The action for the caller's own prints (nil: none needed).
    let action: PolkitAction?
    /// Whether polkit may ask the person (a password) for this action.
    let interactive: Bool
    /// Decodes and validates the arguments in full, at arrival (Bus/CallArguments.swift).
    let decode: @Sendable ([DBusValue]) throws(ServiceError) -> any CallArguments
    /// Runs the call once the caller is known and polkit said yes.
    let handler: @ServiceActor (LocalAuthService, Request, any CallArguments) async throws(ServiceError) -> [DBusValue]

    /// A row whose handler takes its arguments typed.
    init<Arguments: CallArguments>(
        signature: String, action: PolkitAction?, interactive: Bool, _ arguments: Arguments.Type,
        handler: @escaping @ServiceActor (LocalAuthService, Call<Arguments>) async throws(ServiceError) -> [DBusValue]
    ) {
        self.signature = signature
        self.action = action
        self.interactive = interactive
        decode = { values throws(ServiceError) in try Arguments(values) }
        self.handler = { service, request, decoded throws(ServiceError) in
            // `decoded` was made by this row's own `decode`: always `Arguments`.
            try await handler(service, Call(request: request, arguments: decoded as! Arguments))
        }
    }
}

/// A method call with its caller resolved.
struct Request {
    let call: IncomingCall
    /// The caller's uid, from the bus.
    let uid: UInt32
    /// The caller's connection: its credentials, app identity and presence (Callers/).
    let caller: CallerRecord
    /// Whose prints the call is about: the caller, or the user a `user`
    /// option named once `manage` was granted.
    let target: UInt32
    /// The call's registration (Requests.swift): what ends it, and whether it has ended.
    let record: CallRecord

    init(call: IncomingCall, caller: CallerRecord, target: UInt32? = nil, record: CallRecord) {
        self.call = call
        self.caller = caller
        self.uid = caller.uid
        self.target = target ?? uid
        self.record = record
    }
    var sender: String { call.sender }
}

extension LocalAuthService {
    // Rights' rows are in RightsMethodTable.swift, merged here.
    nonisolated static let methods: [String: MethodSpec] = rightsMethods.merging(loginSecretMethods, uniquingKeysWith: { rights, _ in rights }).merging(
        [
            LocalAuthBus.Method.canEvaluatePolicy: MethodSpec(
                signature: "u", action: nil, interactive: false, CanEvaluatePolicyArguments.self,
                handler: { service, call throws(ServiceError) in try await service.evaluator.canEvaluatePolicy(call.request, call.arguments) }),
            LocalAuthBus.Method.evaluatePolicy: MethodSpec(
                signature: "usa{sv}", action: .evaluate, interactive: false, EvaluatePolicyArguments.self,
                handler: { service, call throws(ServiceError) in try await service.evaluator.evaluatePolicy(call.request, call.arguments) }),
            LocalAuthBus.Method.cancel: MethodSpec(
                signature: "s", action: nil, interactive: false, CancelArguments.self,
                handler: { service, call throws(ServiceError) in try service.evaluator.cancel(call.request, call.arguments) }),
            LocalAuthBus.Method.endEvaluation: MethodSpec(
                signature: "ss", action: nil, interactive: false, EndEvaluationArguments.self,
                handler: { service, call throws(ServiceError) in try service.evaluator.endEvaluation(call.request, call.arguments) }),
            LocalAuthBus.Method.resetLockout: MethodSpec(
                signature: "s", action: .manage, interactive: true, ResetLockoutArguments.self,
                handler: { service, call throws(ServiceError) in try service.evaluator.resetLockout(call.request, call.arguments) }),
            LocalAuthBus.Method.verifyUser: MethodSpec(
                signature: "sa{sv}", action: .verifyUser, interactive: false, VerifyUserArguments.self,
                handler: { service, call throws(ServiceError) in
                    let uid = try await service.evaluator.verify(call.arguments, for: Evaluator.Caller(call.request))
                    // A match the service saw: a ticket for one login-secret release (LoginSecret/).
                    if let nonce = call.arguments.loginSecretNonce { service.loginSecrets.matchSeen(uid: uid, caller: LoginSecretCaller(call.caller), nonce: nonce) }
                    return []
                }),
            LocalAuthBus.Method.getDomainState: MethodSpec(
                signature: "", action: nil, interactive: false, NoArguments.self,
                handler: { service, call throws(ServiceError) in try service.readerChoice.domainState(of: call.caller) }),
            LocalAuthBus.Method.enroll: MethodSpec(
                signature: "s", action: .enroll, interactive: true, EnrollArguments.self,
                handler: { service, call throws(ServiceError) in
                    try await service.enroller.enroll(call.arguments, caller: call.caller, record: call.record)
                    return []
                }),
            LocalAuthBus.Method.enrollWithOptions: MethodSpec(
                signature: "sa{sv}", action: .enroll, interactive: true, EnrollWithOptionsArguments.self,
                handler: { service, call throws(ServiceError) in
                    try await service.enroller.enroll(call.arguments, caller: call.caller, target: call.target, record: call.record)
                    return []
                }),
            LocalAuthBus.Method.listEnrolledFingers: MethodSpec(
                signature: "", action: nil, interactive: false, NoArguments.self,
                handler: { service, call throws(ServiceError) in try service.enroller.listEnrolledFingers(uid: call.uid) }),
            LocalAuthBus.Method.listEnrolledPrints: MethodSpec(
                signature: "a{sv}", action: nil, interactive: true, ListEnrolledPrintsArguments.self,
                handler: { service, call throws(ServiceError) in service.enroller.listEnrolledPrints(call.arguments, target: call.target) }),
            LocalAuthBus.Method.deleteEnrolledFinger: MethodSpec(
                signature: "s", action: .enroll, interactive: true, DeleteEnrolledFingerArguments.self,
                handler: { service, call throws(ServiceError) in
                    try await service.enroller.deleteFinger(call.arguments, target: call.target, record: call.record)
                    return []
                }),
            LocalAuthBus.Method.deleteEnrolledFingerWithOptions: MethodSpec(
                signature: "sa{sv}", action: .enroll, interactive: true, DeleteEnrolledFingerWithOptionsArguments.self,
                handler: { service, call throws(ServiceError) in
                    try await service.enroller.deleteFinger(call.arguments, target: call.target, record: call.record)
                    return []
                }),
            LocalAuthBus.Method.deleteEnrolledFingers: MethodSpec(
                signature: "", action: .enroll, interactive: true, NoArguments.self,
                handler: { service, call throws(ServiceError) in
                    try await service.enroller.deleteAll(target: call.target, record: call.record)
                    return []
                }),
            LocalAuthBus.Method.deleteEnrolledFingersWithOptions: MethodSpec(
                signature: "a{sv}", action: .enroll, interactive: true, DeleteEnrolledFingersWithOptionsArguments.self,
                handler: { service, call throws(ServiceError) in
                    try await service.enroller.deleteAll(call.arguments, target: call.target, record: call.record)
                    return []
                }),
            LocalAuthBus.Method.listReaderPrints: MethodSpec(
                signature: "a{sv}", action: .manage, interactive: true, ListReaderPrintsArguments.self,
                handler: { service, call throws(ServiceError) in try await service.enroller.listReaderPrints(call.arguments, uid: call.uid, record: call.record)
                }),
            LocalAuthBus.Method.removeOrphanPrints: MethodSpec(
                signature: "a{sv}", action: .manage, interactive: true, RemoveOrphanPrintsArguments.self,
                handler: { service, call throws(ServiceError) in
                    try await service.enroller.removeOrphanPrints(call.arguments, uid: call.uid, record: call.record)
                }),
            LocalAuthPrompt.ServiceMethod.registerPromptAgent: MethodSpec(
                signature: "o", action: nil, interactive: false, RegisterPromptAgentArguments.self,
                handler: { service, call throws(ServiceError) in
                    try await service.promptAgents.register(call.arguments, caller: call.caller, record: call.record)
                    return []
                }),
            LocalAuthPrompt.ServiceMethod.unregisterPromptAgent: MethodSpec(
                signature: "o", action: nil, interactive: false, UnregisterPromptAgentArguments.self,
                handler: { service, call throws(ServiceError) in
                    service.promptAgents.unregister(call.arguments, sender: call.sender)
                    return []
                }),
            LocalAuthPrompt.ServiceMethod.promptAnswer: MethodSpec(
                signature: "ss", action: nil, interactive: false, PromptAnswerArguments.self,
                handler: { service, call throws(ServiceError) in
                    try service.promptAgents.answer(call.arguments, caller: call.caller)
                    return []
                }),
            LocalAuthBus.Method.getEnvironment: MethodSpec(
                signature: "", action: nil, interactive: false, NoArguments.self,
                handler: { service, call throws(ServiceError) in try await service.environment.getEnvironment(caller: call.caller, record: call.record) }),
            LocalAuthBus.Method.subscribeEnvironment: MethodSpec(
                signature: "", action: nil, interactive: false, NoArguments.self,
                handler: { service, call throws(ServiceError) in try await service.environment.subscribe(caller: call.caller, record: call.record) }),
            LocalAuthBus.Method.unsubscribeEnvironment: MethodSpec(
                signature: "", action: nil, interactive: false, NoArguments.self,
                handler: { service, call throws(ServiceError) in
                    service.environment.unsubscribe(call.sender)
                    return []
                }),
        ], uniquingKeysWith: { rights, _ in rights })
}
