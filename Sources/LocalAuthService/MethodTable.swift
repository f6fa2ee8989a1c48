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
    /// The index of an `a{sv}` argument whose `user` option may name another
    /// user; that needs org.example.LocalAuth.manage.
    var userOptions: Int? = nil
    let handler: @ServiceActor (LocalAuthService, Request) async throws(DBusError) -> [DBusValue]
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
            signature: "u", action: nil, interactive: false, handler: { service, request throws(DBusError) in try await service.canEvaluatePolicy(request) }),
        LocalAuthBus.Method.evaluatePolicy: MethodSpec(
            signature: "usa{sv}", action: .evaluate, interactive: false, handler: { service, request throws(DBusError) in try await service.evaluatePolicy(request) }),
        LocalAuthBus.Method.cancel: MethodSpec(
            signature: "s", action: nil, interactive: false, handler: { service, request throws(DBusError) in try service.cancel(request) }),
        LocalAuthBus.Method.endEvaluation: MethodSpec(
            signature: "ss", action: nil, interactive: false, handler: { service, request throws(DBusError) in try service.endEvaluation(request) }),
        LocalAuthBus.Method.resetLockout: MethodSpec(
            signature: "s", action: .manage, interactive: true, handler: { service, request throws(DBusError) in try service.resetLockout(request) }),
        LocalAuthBus.Method.getDomainState: MethodSpec(
            signature: "", action: nil, interactive: false, handler: { service, request throws(DBusError) in try service.readerChoice.domainState(of: request.caller) }),
        LocalAuthBus.Method.enroll: MethodSpec(
            signature: "s", action: .enroll, interactive: true, handler: { service, request throws(DBusError) in try await service.enroller.enroll(EnrollArguments(request.arguments), caller: request.caller, record: request.record); return [] }),
        LocalAuthBus.Method.listEnrolledFingers: MethodSpec(
            signature: "", action: nil, interactive: false, handler: { service, request throws(DBusError) in try service.enroller.listEnrolledFingers(uid: request.uid) }),
        LocalAuthBus.Method.deleteEnrolledFinger: MethodSpec(
            signature: "s", action: .enroll, interactive: true, handler: { service, request throws(DBusError) in try await service.enroller.deleteFinger(DeleteEnrolledFingerArguments(request.arguments), target: request.target, record: request.record); return [] }),
        LocalAuthBus.Method.deleteEnrolledFingers: MethodSpec(
            signature: "", action: .enroll, interactive: true, handler: { service, request throws(DBusError) in try await service.enroller.deleteAll(target: request.target, record: request.record); return [] }),
        LocalAuthBus.Method.enrollWithOptions: MethodSpec(
            signature: "sa{sv}", action: .enroll, interactive: true, userOptions: 1,
            handler: { service, request throws(DBusError) in try await service.enroller.enroll(EnrollWithOptionsArguments(request.arguments), caller: request.caller, target: request.target, record: request.record); return [] }),
        LocalAuthBus.Method.listReaderPrints: MethodSpec(
            signature: "a{sv}", action: .manage, interactive: true,
            handler: { service, request throws(DBusError) in try await service.enroller.listReaderPrints(ListReaderPrintsArguments(request.arguments), uid: request.uid, record: request.record) }),
        LocalAuthBus.Method.removeOrphanPrints: MethodSpec(
            signature: "a{sv}", action: .manage, interactive: true,
            handler: { service, request throws(DBusError) in try await service.enroller.removeOrphanPrints(RemoveOrphanPrintsArguments(request.arguments), uid: request.uid, record: request.record) }),
        LocalAuthBus.Method.listEnrolledPrints: MethodSpec(
            signature: "a{sv}", action: nil, interactive: true, userOptions: 0,
            handler: { service, request throws(DBusError) in service.enroller.listEnrolledPrints(try ListEnrolledPrintsArguments(request.arguments), target: request.target) }),
        LocalAuthBus.Method.deleteEnrolledFingerWithOptions: MethodSpec(
            signature: "sa{sv}", action: .enroll, interactive: true, userOptions: 1,
            handler: { service, request throws(DBusError) in try await service.enroller.deleteFinger(DeleteEnrolledFingerWithOptionsArguments(request.arguments), target: request.target, record: request.record); return [] }),
        LocalAuthBus.Method.deleteEnrolledFingersWithOptions: MethodSpec(
            signature: "a{sv}", action: .enroll, interactive: true, userOptions: 0,
            handler: { service, request throws(DBusError) in try await service.enroller.deleteAll(DeleteEnrolledFingersWithOptionsArguments(request.arguments), target: request.target, record: request.record); return [] }),
        // The system sheet's agents (Prompt/): no polkit action; an
        // agent acts only for its own uid and session.
        LocalAuthPrompt.ServiceMethod.registerPromptAgent: MethodSpec(
            signature: "o", action: nil, interactive: false,
            handler: { service, request throws(DBusError) in try await service.promptAgents.register(RegisterPromptAgentArguments(request.arguments), caller: request.caller, record: request.record); return [] }),
        LocalAuthPrompt.ServiceMethod.unregisterPromptAgent: MethodSpec(
            signature: "o", action: nil, interactive: false,
            handler: { service, request throws(DBusError) in service.promptAgents.unregister(try UnregisterPromptAgentArguments(request.arguments), sender: request.sender); return [] }),
        LocalAuthPrompt.ServiceMethod.promptAnswer: MethodSpec(
            signature: "ss", action: nil, interactive: false,
            handler: { service, request throws(DBusError) in try service.promptAgents.answer(PromptAnswerArguments(request.arguments), caller: request.caller); return [] }),
        LocalAuthBus.Method.verifyUser: MethodSpec(
            signature: "sa{sv}", action: .verifyUser, interactive: false,
            handler: { service, request throws(DBusError) in try await service.verifyUser(request) }),
        LocalAuthBus.Method.getEnvironment: MethodSpec(
            signature: "", action: nil, interactive: false, handler: { service, request throws(DBusError) in try await service.environment.getEnvironment(caller: request.caller, record: request.record) }),
        LocalAuthBus.Method.subscribeEnvironment: MethodSpec(
            signature: "", action: nil, interactive: false, handler: { service, request throws(DBusError) in try await service.environment.subscribe(caller: request.caller, record: request.record) }),
        LocalAuthBus.Method.unsubscribeEnvironment: MethodSpec(
            signature: "", action: nil, interactive: false, handler: { service, request throws(DBusError) in service.environment.unsubscribe(request.sender); return [] }),
    ], uniquingKeysWith: { rights, _ in rights })
}
