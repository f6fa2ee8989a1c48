import DBusCore
import LocalAuthShared

/// One row per method of org.example.LocalAuth: its argument signature and
/// the polkit action it needs (checked before the handler runs, before any
/// state changes). This table is the only place that pairs methods with actions.
///
/// Methods about prints may name another user (`userOptions`): for those the
/// action is `manage` instead, whatever the row says (see `authorize`).
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

    /// A row whose handler still reads the raw body (`Request.arguments`);
    /// `userOptions` is the index of an `a{sv}` whose `user` option may name
    /// another user.
    init(signature: String, action: PolkitAction?, interactive: Bool, userOptions: Int? = nil,
         handler: @escaping @ServiceActor (LocalAuthService, Request) async throws(ServiceError) -> [DBusValue]) {
        self.signature = signature
        self.action = action
        self.interactive = interactive
        decode = { values throws(ServiceError) in try RawArguments(values, userOptions: userOptions) }
        self.handler = { service, request, _ throws(ServiceError) in try await handler(service, request) }
    }
}

/// The body of a call whose row is not typed yet: only the `user` option is read.
struct RawArguments: CallArguments {
    let namedUser: String?
    init(_ arguments: [DBusValue]) throws(ServiceError) { namedUser = nil }
    init(_ arguments: [DBusValue], userOptions: Int?) throws(ServiceError) {
        namedUser = try userOptions.flatMap { index throws(ServiceError) in
            try LocalAuthService.printOptions(arguments[index]).user
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
    var arguments: [DBusValue] { record.arguments }
}

extension LocalAuthService {
    // Rights' rows are in RightsMethodTable.swift, merged here.
    nonisolated static let methods: [String: MethodSpec] = rightsMethods.merging([
        LocalAuthBus.Method.canEvaluatePolicy: MethodSpec(
            signature: "u", action: nil, interactive: false, handler: { service, request throws(ServiceError) in try await service.evaluator.canEvaluatePolicy(request) }),
        LocalAuthBus.Method.evaluatePolicy: MethodSpec(
            signature: "usa{sv}", action: .evaluate, interactive: false, handler: { service, request throws(ServiceError) in try await service.evaluator.evaluatePolicy(request) }),
        LocalAuthBus.Method.cancel: MethodSpec(
            signature: "s", action: nil, interactive: false, handler: { service, request throws(ServiceError) in try service.evaluator.cancel(request) }),
        LocalAuthBus.Method.endEvaluation: MethodSpec(
            signature: "ss", action: nil, interactive: false, handler: { service, request throws(ServiceError) in try service.evaluator.endEvaluation(request) }),
        LocalAuthBus.Method.resetLockout: MethodSpec(
            signature: "s", action: .manage, interactive: true, handler: { service, request throws(ServiceError) in try service.evaluator.resetLockout(request) }),
        LocalAuthBus.Method.getDomainState: MethodSpec(
            signature: "", action: nil, interactive: false, handler: { service, request throws(ServiceError) in try service.readerChoice.domainState(of: request.caller) }),
        LocalAuthBus.Method.enroll: MethodSpec(
            signature: "s", action: .enroll, interactive: true, handler: { service, request throws(ServiceError) in try await service.enroller.enroll(EnrollArguments(request.arguments), caller: request.caller, record: request.record); return [] }),
        LocalAuthBus.Method.listEnrolledFingers: MethodSpec(
            signature: "", action: nil, interactive: false, handler: { service, request throws(ServiceError) in try service.enroller.listEnrolledFingers(uid: request.uid) }),
        LocalAuthBus.Method.deleteEnrolledFinger: MethodSpec(
            signature: "s", action: .enroll, interactive: true, handler: { service, request throws(ServiceError) in try await service.enroller.deleteFinger(DeleteEnrolledFingerArguments(request.arguments), target: request.target, record: request.record); return [] }),
        LocalAuthBus.Method.deleteEnrolledFingers: MethodSpec(
            signature: "", action: .enroll, interactive: true, handler: { service, request throws(ServiceError) in try await service.enroller.deleteAll(target: request.target, record: request.record); return [] }),
        LocalAuthBus.Method.enrollWithOptions: MethodSpec(
            signature: "sa{sv}", action: .enroll, interactive: true, userOptions: 1,
            handler: { service, request throws(ServiceError) in try await service.enroller.enroll(EnrollWithOptionsArguments(request.arguments), caller: request.caller, target: request.target, record: request.record); return [] }),
        LocalAuthBus.Method.listReaderPrints: MethodSpec(
            signature: "a{sv}", action: .manage, interactive: true,
            handler: { service, request throws(ServiceError) in try await service.enroller.listReaderPrints(ListReaderPrintsArguments(request.arguments), uid: request.uid, record: request.record) }),
        LocalAuthBus.Method.removeOrphanPrints: MethodSpec(
            signature: "a{sv}", action: .manage, interactive: true,
            handler: { service, request throws(ServiceError) in try await service.enroller.removeOrphanPrints(RemoveOrphanPrintsArguments(request.arguments), uid: request.uid, record: request.record) }),
        LocalAuthBus.Method.listEnrolledPrints: MethodSpec(
            signature: "a{sv}", action: nil, interactive: true, userOptions: 0,
            handler: { service, request throws(ServiceError) in service.enroller.listEnrolledPrints(try ListEnrolledPrintsArguments(request.arguments), target: request.target) }),
        LocalAuthBus.Method.deleteEnrolledFingerWithOptions: MethodSpec(
            signature: "sa{sv}", action: .enroll, interactive: true, userOptions: 1,
            handler: { service, request throws(ServiceError) in try await service.enroller.deleteFinger(DeleteEnrolledFingerWithOptionsArguments(request.arguments), target: request.target, record: request.record); return [] }),
        LocalAuthBus.Method.deleteEnrolledFingersWithOptions: MethodSpec(
            signature: "a{sv}", action: .enroll, interactive: true, userOptions: 0,
            handler: { service, request throws(ServiceError) in try await service.enroller.deleteAll(DeleteEnrolledFingersWithOptionsArguments(request.arguments), target: request.target, record: request.record); return [] }),
        // The system sheet's agents (Prompt/): no polkit action; an
        // agent acts only for its own uid and session.
        LocalAuthPrompt.ServiceMethod.registerPromptAgent: MethodSpec(
            signature: "o", action: nil, interactive: false,
            handler: { service, request throws(ServiceError) in try await service.promptAgents.register(RegisterPromptAgentArguments(request.arguments), caller: request.caller, record: request.record); return [] }),
        LocalAuthPrompt.ServiceMethod.unregisterPromptAgent: MethodSpec(
            signature: "o", action: nil, interactive: false,
            handler: { service, request throws(ServiceError) in service.promptAgents.unregister(try UnregisterPromptAgentArguments(request.arguments), sender: request.sender); return [] }),
        LocalAuthPrompt.ServiceMethod.promptAnswer: MethodSpec(
            signature: "ss", action: nil, interactive: false,
            handler: { service, request throws(ServiceError) in try service.promptAgents.answer(PromptAnswerArguments(request.arguments), caller: request.caller); return [] }),
        LocalAuthBus.Method.verifyUser: MethodSpec(
            signature: "sa{sv}", action: .verifyUser, interactive: false,
            handler: { service, request throws(ServiceError) in try await service.evaluator.verifyUser(request) }),
        LocalAuthBus.Method.getEnvironment: MethodSpec(
            signature: "", action: nil, interactive: false, handler: { service, request throws(ServiceError) in try await service.environment.getEnvironment(caller: request.caller, record: request.record) }),
        LocalAuthBus.Method.subscribeEnvironment: MethodSpec(
            signature: "", action: nil, interactive: false, handler: { service, request throws(ServiceError) in try await service.environment.subscribe(caller: request.caller, record: request.record) }),
        LocalAuthBus.Method.unsubscribeEnvironment: MethodSpec(
            signature: "", action: nil, interactive: false, handler: { service, request throws(ServiceError) in service.environment.unsubscribe(request.sender); return [] }),
    ], uniquingKeysWith: { rights, _ in rights })
}
