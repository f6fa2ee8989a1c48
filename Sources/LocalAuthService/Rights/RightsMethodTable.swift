import DBusCore
import LocalAuthShared

// The rows of the method table for rights and secrets (RightsService.swift,
// docs/RIGHTS.md), merged into `LocalAuthService.methods` (MethodTable.swift).
// Save and remove need org.example.LocalAuth.rights.manage, AuthorizeRight
// org.example.LocalAuth.rights.use; using an authorization needs its handle,
// which only the connection that authorized can use.
extension LocalAuthService {
    nonisolated static let rightsMethods: [String: MethodSpec] = [
        LocalAuthRightsBus.Method.saveRight: MethodSpec(
            signature: "ssa{sv}", action: .rightsManage, interactive: true,
            handler: { service, request throws(ServiceError) in try await service.rights.saveRight(RightsCall(request)) }),
        LocalAuthRightsBus.Method.removeRight: MethodSpec(
            signature: "sa{sv}", action: .rightsManage, interactive: true,
            handler: { service, request throws(ServiceError) in try await service.rights.removeRight(RightsCall(request)) }),
        LocalAuthRightsBus.Method.removeAllRights: MethodSpec(
            signature: "a{sv}", action: .rightsManage, interactive: true,
            handler: { service, request throws(ServiceError) in try await service.rights.removeAllRights(RightsCall(request)) }),
        LocalAuthRightsBus.Method.listRights: MethodSpec(
            signature: "a{sv}", action: nil, interactive: false,
            handler: { service, request throws(ServiceError) in try await service.rights.listRights(RightsCall(request)) }),
        LocalAuthRightsBus.Method.getPublicKey: MethodSpec(
            signature: "sa{sv}", action: nil, interactive: false,
            handler: { service, request throws(ServiceError) in try await service.rights.getPublicKey(RightsCall(request)) }),
        LocalAuthRightsBus.Method.canAuthorizeRight: MethodSpec(
            signature: "sa{sv}", action: nil, interactive: false,
            handler: { service, request throws(ServiceError) in try await service.rights.canAuthorizeRight(RightsCall(request)) }),
        LocalAuthRightsBus.Method.authorizeRight: MethodSpec(
            signature: "ssa{sv}", action: .rightsUse, interactive: false,
            handler: { service, request throws(ServiceError) in try await service.rights.authorizeRight(RightsCall(request)) }),
        LocalAuthRightsBus.Method.deauthorize: MethodSpec(
            signature: "s", action: nil, interactive: false,
            handler: { service, request throws(ServiceError) in try service.rights.deauthorize(RightsCall(request)) }),
        LocalAuthRightsBus.Method.loadSecret: MethodSpec(
            signature: "s", action: nil, interactive: false,
            handler: { service, request throws(ServiceError) in try service.rights.loadSecret(RightsCall(request)) }),
        LocalAuthRightsBus.Method.sign: MethodSpec(
            signature: "ssay", action: nil, interactive: false,
            handler: { service, request throws(ServiceError) in try await service.rights.sign(RightsCall(request)) }),
        LocalAuthRightsBus.Method.decrypt: MethodSpec(
            signature: "ssay", action: nil, interactive: false,
            handler: { service, request throws(ServiceError) in try await service.rights.decrypt(RightsCall(request)) }),
        LocalAuthRightsBus.Method.exchangeKeys: MethodSpec(
            signature: "ssaya{sv}", action: nil, interactive: false,
            handler: { service, request throws(ServiceError) in try await service.rights.exchangeKeys(RightsCall(request)) }),
    ]
}
