import DBusCore
import LocalAuthShared

/// One row per method of org.example.LocalAuth: its argument signature and
/// the polkit action it needs (checked before the handler runs, before any
/// state changes). This table is the only place that pairs methods with actions.
struct MethodSpec {
    let signature: String
    let action: PolkitAction?
    /// Whether polkit may ask the person (a password) for this action.
    let interactive: Bool
    let handler: @ServiceActor (LocalAuthService, Request) async throws(DBusError) -> [DBusValue]
}

/// A method call with its caller resolved.
struct Request {
    let call: IncomingCall
    let uid: UInt32
    var sender: String { call.sender }
    var arguments: [DBusValue] { call.arguments }
}

extension LocalAuthService {
    static let methods: [String: MethodSpec] = [
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
            signature: "", action: nil, interactive: false, handler: { service, request throws(DBusError) in try service.domainState(request) }),
        LocalAuthBus.Method.enroll: MethodSpec(
            signature: "s", action: .enroll, interactive: true, handler: { service, request throws(DBusError) in try await service.enroll(request) }),
        LocalAuthBus.Method.listEnrolledFingers: MethodSpec(
            signature: "", action: nil, interactive: false, handler: { service, request throws(DBusError) in try service.listEnrolledFingers(request) }),
        LocalAuthBus.Method.deleteEnrolledFinger: MethodSpec(
            signature: "s", action: .enroll, interactive: true, handler: { service, request throws(DBusError) in try service.deleteEnrolledFinger(request) }),
        LocalAuthBus.Method.deleteEnrolledFingers: MethodSpec(
            signature: "", action: .enroll, interactive: true, handler: { service, request throws(DBusError) in try service.deleteEnrolledFingers(request) }),
    ]
}
