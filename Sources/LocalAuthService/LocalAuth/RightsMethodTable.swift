import DBusCore
import LocalAuthShared

// The rows of the method table for rights and secrets (RightsService.swift,
// docs/RIGHTS.md), merged into `LocalAuthContract.methods` (LocalAuth/LocalAuthContract.swift).
// Save and remove need org.example.LocalAuth.rights.manage, AuthorizeRight
// org.example.LocalAuth.rights.use; using an authorization needs its handle,
// which only the connection that authorized can use.
extension LocalAuthContract {
    nonisolated static let rightsMethods: [String: MethodSpec<LocalAuthObject>] = [
        LocalAuthRightsBus.Method.saveRight: MethodSpec(
            signature: "ssa{sv}", action: .rightsManage, interactive: true, SaveRightArguments.self,
            // SaveRight alone may carry a secret of up to 64 KiB (docs/RIGHTS.md).
            maximumBodyBytes: RightsServiceLimits.saveRightBodyBytes,
            handler: { object, call throws(ServiceError) in try await object.rights.saveRight(call.request, call.arguments) }),
        LocalAuthRightsBus.Method.removeRight: MethodSpec(
            signature: "sa{sv}", action: .rightsManage, interactive: true, RemoveRightArguments.self,
            handler: { object, call throws(ServiceError) in try await object.rights.removeRight(call.request, call.arguments) }),
        LocalAuthRightsBus.Method.removeAllRights: MethodSpec(
            signature: "a{sv}", action: .rightsManage, interactive: true, RemoveAllRightsArguments.self,
            handler: { object, call throws(ServiceError) in try await object.rights.removeAllRights(call.request, call.arguments) }),
        LocalAuthRightsBus.Method.listRights: MethodSpec(
            signature: "a{sv}", action: nil, interactive: false, ListRightsArguments.self,
            handler: { object, call throws(ServiceError) in try await object.rights.listRights(call.request, call.arguments) }),
        LocalAuthRightsBus.Method.getPublicKey: MethodSpec(
            signature: "sa{sv}", action: nil, interactive: false, GetPublicKeyArguments.self,
            handler: { object, call throws(ServiceError) in try await object.rights.getPublicKey(call.request, call.arguments) }),
        LocalAuthRightsBus.Method.canAuthorizeRight: MethodSpec(
            signature: "sa{sv}", action: nil, interactive: false, CanAuthorizeRightArguments.self,
            handler: { object, call throws(ServiceError) in try await object.rights.canAuthorizeRight(call.request, call.arguments) }),
        LocalAuthRightsBus.Method.authorizeRight: MethodSpec(
            signature: "ssa{sv}", action: .rightsUse, interactive: false, scans: true, AuthorizeRightArguments.self,
            handler: { object, call throws(ServiceError) in
                ContextPolicy.markAppSecrets(call.request)  // docs/POLICY.md
                return try await object.rights.authorizeRight(call.request, call.arguments)
            }),
        LocalAuthRightsBus.Method.deauthorize: MethodSpec(
            signature: "s", action: nil, interactive: false, DeauthorizeArguments.self,
            handler: { object, call throws(ServiceError) in try object.rights.deauthorize(call.request, call.arguments) }),
        LocalAuthRightsBus.Method.loadSecret: MethodSpec(
            signature: "s", action: nil, interactive: false, LoadSecretArguments.self,
            handler: { object, call throws(ServiceError) in try object.rights.loadSecret(call.request, call.arguments) }),
        LocalAuthRightsBus.Method.sign: MethodSpec(
            signature: "ssay", action: nil, interactive: false, SignArguments.self,
            handler: { object, call throws(ServiceError) in try await object.rights.sign(call.request, call.arguments) }),
        LocalAuthRightsBus.Method.decrypt: MethodSpec(
            signature: "ssay", action: nil, interactive: false, DecryptArguments.self,
            handler: { object, call throws(ServiceError) in try await object.rights.decrypt(call.request, call.arguments) }),
        LocalAuthRightsBus.Method.exchangeKeys: MethodSpec(
            signature: "ssaya{sv}", action: nil, interactive: false, ExchangeKeysArguments.self,
            handler: { object, call throws(ServiceError) in try await object.rights.exchangeKeys(call.request, call.arguments) }),
    ]
}
