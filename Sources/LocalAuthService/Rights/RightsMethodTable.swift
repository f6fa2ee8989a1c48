import DBusCore
import LocalAuthShared

// The rows of the method table for rights and secrets (RightsService.swift,
// docs/RIGHTS.md), merged into `LocalAuthService.methods` (MethodTable.swift).
// Save and remove need org.example.LocalAuth.rights.manage, AuthorizeRight
// org.example.LocalAuth.rights.use; using an authorization needs its handle,
// which only the connection that authorized can use.
extension LocalAuthService {
    nonisolated static let rightsMethods: [String: MethodSpec<LocalAuthService>] = [
        LocalAuthRightsBus.Method.saveRight: MethodSpec(
            signature: "ssa{sv}", action: .rightsManage, interactive: true, SaveRightArguments.self,
            // SaveRight alone may carry a secret of up to 64 KiB (docs/RIGHTS.md).
            maximumBodyBytes: RightsServiceLimits.saveRightBodyBytes,
            handler: { service, call throws(ServiceError) in try await service.rights.saveRight(RightsCall(call.request), call.arguments) }),
        LocalAuthRightsBus.Method.removeRight: MethodSpec(
            signature: "sa{sv}", action: .rightsManage, interactive: true, RemoveRightArguments.self,
            handler: { service, call throws(ServiceError) in try await service.rights.removeRight(RightsCall(call.request), call.arguments) }),
        LocalAuthRightsBus.Method.removeAllRights: MethodSpec(
            signature: "a{sv}", action: .rightsManage, interactive: true, RemoveAllRightsArguments.self,
            handler: { service, call throws(ServiceError) in try await service.rights.removeAllRights(RightsCall(call.request), call.arguments) }),
        LocalAuthRightsBus.Method.listRights: MethodSpec(
            signature: "a{sv}", action: nil, interactive: false, ListRightsArguments.self,
            handler: { service, call throws(ServiceError) in try await service.rights.listRights(RightsCall(call.request), call.arguments) }),
        LocalAuthRightsBus.Method.getPublicKey: MethodSpec(
            signature: "sa{sv}", action: nil, interactive: false, GetPublicKeyArguments.self,
            handler: { service, call throws(ServiceError) in try await service.rights.getPublicKey(RightsCall(call.request), call.arguments) }),
        LocalAuthRightsBus.Method.canAuthorizeRight: MethodSpec(
            signature: "sa{sv}", action: nil, interactive: false, CanAuthorizeRightArguments.self,
            handler: { service, call throws(ServiceError) in try await service.rights.canAuthorizeRight(RightsCall(call.request), call.arguments) }),
        LocalAuthRightsBus.Method.authorizeRight: MethodSpec(
            signature: "ssa{sv}", action: .rightsUse, interactive: false, AuthorizeRightArguments.self,
            handler: { service, call throws(ServiceError) in try await service.rights.authorizeRight(RightsCall(call.request), call.arguments) }),
        LocalAuthRightsBus.Method.deauthorize: MethodSpec(
            signature: "s", action: nil, interactive: false, DeauthorizeArguments.self,
            handler: { service, call throws(ServiceError) in try service.rights.deauthorize(RightsCall(call.request), call.arguments) }),
        LocalAuthRightsBus.Method.loadSecret: MethodSpec(
            signature: "s", action: nil, interactive: false, LoadSecretArguments.self,
            handler: { service, call throws(ServiceError) in try service.rights.loadSecret(RightsCall(call.request), call.arguments) }),
        LocalAuthRightsBus.Method.sign: MethodSpec(
            signature: "ssay", action: nil, interactive: false, SignArguments.self,
            handler: { service, call throws(ServiceError) in try await service.rights.sign(RightsCall(call.request), call.arguments) }),
        LocalAuthRightsBus.Method.decrypt: MethodSpec(
            signature: "ssay", action: nil, interactive: false, DecryptArguments.self,
            handler: { service, call throws(ServiceError) in try await service.rights.decrypt(RightsCall(call.request), call.arguments) }),
        LocalAuthRightsBus.Method.exchangeKeys: MethodSpec(
            signature: "ssaya{sv}", action: nil, interactive: false, ExchangeKeysArguments.self,
            handler: { service, call throws(ServiceError) in try await service.rights.exchangeKeys(RightsCall(call.request), call.arguments) }),
    ]
}
