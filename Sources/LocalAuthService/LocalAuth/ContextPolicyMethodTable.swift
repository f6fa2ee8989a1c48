import DBusCore
import LocalAuthShared

// The rows of the context policy (ContextPolicy/, docs/POLICY.md), merged
// into `LocalAuthContract.methods` (LocalAuth/LocalAuthContract.swift). Reading
// one's own needs no action (another account's: manage); changing one's own
// needs org.example.LocalAuth.context-policy (auth_self_keep: interactive).
extension LocalAuthContract {
    nonisolated static let contextPolicyMethods: [String: MethodSpec<LocalAuthObject>] = [
        LocalAuthBus.Method.getContextPolicy: MethodSpec(
            signature: "a{sv}", action: nil, interactive: true, GetContextPolicyArguments.self,
            handler: { _, call throws(ServiceError) in try ContextPolicy.running().getContextPolicy(call.request) }),
        LocalAuthBus.Method.setContextPolicy: MethodSpec(
            signature: "sba{sv}", action: .contextPolicy, interactive: true, SetContextPolicyArguments.self,
            handler: { _, call throws(ServiceError) in try ContextPolicy.running().setContextPolicy(call.request, call.arguments) }),
    ]
}
