internal import LocalAuthInterface
import DBusCore
import LocalAuthShared

/// org.example.LocalAuth's contract (Bus/Contract.swift): one row per method,
/// its argument signature and the polkit action it needs (checked before the
/// handler runs, before any state changes). This table is the only place
/// that pairs its methods with actions.
///
/// Each row names its arguments struct (`CallArguments`), which the router
/// decodes and validates once, at arrival. Methods about prints may name
/// another user (the struct's `namedUser`): for those the action is `manage`
/// instead, whatever the row says (Authorization.swift).
enum LocalAuthContract {
    nonisolated static let interfaceXML = Interfaces.localAuth

    nonisolated static let contract = BusContract<LocalAuthObject>(
        interface: LocalAuthBus.interface, methods: methods, errors: .localAuth, introspection: interfaceXML,
        properties: { object in [LocalAuthBus.Property.biometryType: .uint32(object.biometryType.rawValue)] },
        refusal: { action, decision in
            switch decision {
            case .dismissed: ServiceErrors.permissionDenied("the authentication for \(action) was dismissed")
            case .denied(let why): ServiceErrors.permissionDenied(why)
            case .authorized: ServiceErrors.permissionDenied("\(action) was not granted")
            }
        },
        answers: ApprovalHistory.watch)

    // Rights' and the login secret's rows are in RightsMethodTable.swift and
    // LoginSecretMethodTable.swift, the context policy's in ContextPolicyMethods.swift, merged here.
    nonisolated static let methods: [String: MethodSpec<LocalAuthObject>] = rightsMethods.merging(loginSecretMethods) { rights, _ in rights }
        .merging(contextPolicyMethods) { rights, _ in rights }.merging(
        [
            LocalAuthBus.Method.canEvaluatePolicy: MethodSpec(
                signature: "u", action: nil, interactive: false, CanEvaluatePolicyArguments.self,
                handler: { object, call throws(ServiceError) in
                    ContextPolicy.markApps(call.request, method: LocalAuthBus.Method.canEvaluatePolicy)  // docs/POLICY.md
                    return try await object.evaluator.canEvaluatePolicy(call.request, call.arguments)
                }),
            LocalAuthBus.Method.evaluatePolicy: MethodSpec(
                signature: "usa{sv}", action: .evaluate, interactive: false, scans: true, EvaluatePolicyArguments.self,
                handler: { object, call throws(ServiceError) in
                    ContextPolicy.markApps(call.request, method: LocalAuthBus.Method.evaluatePolicy)  // docs/POLICY.md
                    return try await object.evaluator.evaluatePolicy(call.request, call.arguments)
                }),
            LocalAuthBus.Method.cancel: MethodSpec(
                signature: "s", action: nil, interactive: false, CancelArguments.self,
                handler: { object, call throws(ServiceError) in try object.evaluator.cancel(call.request, call.arguments) }),
            LocalAuthBus.Method.endEvaluation: MethodSpec(
                signature: "ss", action: nil, interactive: false, EndEvaluationArguments.self,
                handler: { object, call throws(ServiceError) in try object.evaluator.endEvaluation(call.request, call.arguments) }),
            LocalAuthBus.Method.resetLockout: MethodSpec(
                signature: "s", action: .manage, interactive: true, ResetLockoutArguments.self,
                handler: { object, call throws(ServiceError) in try object.evaluator.resetLockout(call.request, call.arguments) }),
            LocalAuthBus.Method.verifyUser: MethodSpec(
                signature: "sa{sv}", action: .verifyUser, interactive: false, scans: true, VerifyUserArguments.self,
                handler: { object, call throws(ServiceError) in
                    try ContextPolicy.admitVerifyUser(call.request, user: call.arguments.user, pamService: call.arguments.pamService)  // docs/POLICY.md
                    let uid = try await object.evaluator.verifyUser(call.request, call.arguments)
                    // A match the service saw: a ticket for one login-secret release (LoginSecret/).
                    if let nonce = call.arguments.loginSecretNonce { object.loginSecrets.matchSeen(uid: uid, caller: call.caller, nonce: nonce) }
                    return []
                }),
            LocalAuthBus.Method.getDomainState: MethodSpec(
                signature: "", action: nil, interactive: false, NoArguments.self,
                handler: { object, call throws(ServiceError) in try object.readerChoice.domainState(of: call.caller) }),
            LocalAuthBus.Method.enroll: MethodSpec(
                signature: "s", action: .enroll, interactive: true, scans: true, EnrollArguments.self,
                answersNothing: { object, call throws(ServiceError) in try await object.enroller.enroll(call.arguments, caller: call.caller, record: call.record) }),
            LocalAuthBus.Method.enrollWithOptions: MethodSpec(
                signature: "sa{sv}", action: .enroll, interactive: true, scans: true, EnrollWithOptionsArguments.self,
                answersNothing: { object, call throws(ServiceError) in try await object.enroller.enroll(call.arguments, caller: call.caller, target: call.target, record: call.record) }),
            LocalAuthBus.Method.listEnrolledFingers: MethodSpec(
                signature: "", action: nil, interactive: false, NoArguments.self,
                handler: { object, call throws(ServiceError) in try object.enroller.listEnrolledFingers(uid: call.uid) }),
            LocalAuthBus.Method.listEnrolledPrints: MethodSpec(
                signature: "a{sv}", action: nil, interactive: true, ListEnrolledPrintsArguments.self,
                handler: { object, call throws(ServiceError) in object.enroller.listEnrolledPrints(call.arguments, target: call.target) }),
            LocalAuthBus.Method.deleteEnrolledFinger: MethodSpec(
                signature: "s", action: .enroll, interactive: true, DeleteEnrolledFingerArguments.self,
                answersNothing: { object, call throws(ServiceError) in try await object.enroller.deleteFinger(call.arguments, target: call.target, record: call.record) }),
            LocalAuthBus.Method.deleteEnrolledFingerWithOptions: MethodSpec(
                signature: "sa{sv}", action: .enroll, interactive: true, DeleteEnrolledFingerWithOptionsArguments.self,
                answersNothing: { object, call throws(ServiceError) in try await object.enroller.deleteFinger(call.arguments, target: call.target, record: call.record) }),
            LocalAuthBus.Method.deleteEnrolledFingers: MethodSpec(
                signature: "", action: .enroll, interactive: true, NoArguments.self,
                answersNothing: { object, call throws(ServiceError) in try await object.enroller.deleteAll(target: call.target, record: call.record) }),
            LocalAuthBus.Method.deleteEnrolledFingersWithOptions: MethodSpec(
                signature: "a{sv}", action: .enroll, interactive: true, DeleteEnrolledFingersWithOptionsArguments.self,
                answersNothing: { object, call throws(ServiceError) in try await object.enroller.deleteAll(call.arguments, target: call.target, record: call.record) }),
            LocalAuthBus.Method.listReaderPrints: MethodSpec(
                signature: "a{sv}", action: .manage, interactive: true, ListReaderPrintsArguments.self,
                handler: { object, call throws(ServiceError) in try await object.enroller.listReaderPrints(call.arguments, uid: call.uid, record: call.record)
                }),
            LocalAuthBus.Method.removeOrphanPrints: MethodSpec(
                signature: "a{sv}", action: .manage, interactive: true, RemoveOrphanPrintsArguments.self,
                handler: { object, call throws(ServiceError) in
                    try await object.enroller.removeOrphanPrints(call.arguments, uid: call.uid, record: call.record)
                }),
            LocalAuthPrompt.ServiceMethod.registerPromptAgent: MethodSpec(
                signature: "o", action: nil, interactive: false, RegisterPromptAgentArguments.self,
                answersNothing: { object, call throws(ServiceError) in try await object.promptAgents.register(call.arguments, caller: call.caller, record: call.record) }),
            LocalAuthPrompt.ServiceMethod.unregisterPromptAgent: MethodSpec(
                signature: "o", action: nil, interactive: false, UnregisterPromptAgentArguments.self,
                answersNothing: { object, call throws(ServiceError) in object.promptAgents.unregister(call.arguments, sender: call.sender) }),
            LocalAuthPrompt.ServiceMethod.promptAnswer: MethodSpec(
                signature: "ss", action: nil, interactive: false, PromptAnswerArguments.self,
                answersNothing: { object, call throws(ServiceError) in try object.promptAgents.answer(call.arguments, caller: call.caller) }),
            LocalAuthBus.Method.getEnvironment: MethodSpec(
                signature: "", action: nil, interactive: false, NoArguments.self,
                handler: { object, call throws(ServiceError) in try await object.environment.getEnvironment(caller: call.caller, record: call.record) }),
            LocalAuthBus.Method.subscribeEnvironment: MethodSpec(
                signature: "", action: nil, interactive: false, NoArguments.self,
                handler: { object, call throws(ServiceError) in try await object.environment.subscribe(caller: call.caller, record: call.record) }),
            LocalAuthBus.Method.unsubscribeEnvironment: MethodSpec(
                signature: "", action: nil, interactive: false, NoArguments.self,
                answersNothing: { object, call throws(ServiceError) in object.environment.unsubscribe(call.sender) }),
        ], uniquingKeysWith: { rights, _ in rights })
}

/// org.example.LocalAuth's object (`/org/example/LocalAuth`): the components
/// its methods reach. Its rows get these, never the service.
@ServiceActor
final class LocalAuthObject {
    let evaluator: Evaluator
    let enroller: Enroller
    let rights: RightsService
    let promptAgents: PromptAgents
    let environment: Environment
    let readerChoice: ReaderChoice
    let readers: Readers
    let loginSecrets: LoginSecrets

    init(
        evaluator: Evaluator, enroller: Enroller, rights: RightsService, promptAgents: PromptAgents, environment: Environment,
        readerChoice: ReaderChoice, readers: Readers, loginSecrets: LoginSecrets
    ) {
        self.loginSecrets = loginSecrets
        self.evaluator = evaluator
        self.enroller = enroller
        self.rights = rights
        self.promptAgents = promptAgents
        self.environment = environment
        self.readerChoice = readerChoice
        self.readers = readers
    }

    /// BiometryType, the interface's property.
    var biometryType: BiometryKind { readers.isPresent ? .touchID : .none }
}
