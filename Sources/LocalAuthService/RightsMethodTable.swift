import DBusCore
import LocalAuthShared

// The rows of the method table for rights and secrets (Rights.swift,
// docs/RIGHTS.md), merged into `LocalAuthService.methods` (MethodTable.swift).
// Save and remove need org.example.LocalAuth.rights.manage, AuthorizeRight
// org.example.LocalAuth.rights.use; using an authorization needs its handle,
// which only the connection that authorized can use.
extension LocalAuthService {
    nonisolated static let rightsMethods: [String: MethodSpec] = [
        LocalAuthRightsBus.Method.saveRight: MethodSpec(
            signature: "ssa{sv}", action: .rightsManage, interactive: true,
            handler: { service, request throws(ServiceError) in try await service.saveRight(request) }),
        LocalAuthRightsBus.Method.removeRight: MethodSpec(
            signature: "sa{sv}", action: .rightsManage, interactive: true,
            handler: { service, request throws(ServiceError) in try await service.removeRight(request) }),
        LocalAuthRightsBus.Method.removeAllRights: MethodSpec(
            signature: "a{sv}", action: .rightsManage, interactive: true,
            handler: { service, request throws(ServiceError) in try await service.removeAllRights(request) }),
        LocalAuthRightsBus.Method.listRights: MethodSpec(
            signature: "a{sv}", action: nil, interactive: false,
            handler: { service, request throws(ServiceError) in try await service.listRights(request) }),
        LocalAuthRightsBus.Method.getPublicKey: MethodSpec(
            signature: "sa{sv}", action: nil, interactive: false,
            handler: { service, request throws(ServiceError) in try await service.getPublicKey(request) }),
        LocalAuthRightsBus.Method.canAuthorizeRight: MethodSpec(
            signature: "sa{sv}", action: nil, interactive: false,
            handler: { service, request throws(ServiceError) in try await service.canAuthorizeRight(request) }),
        LocalAuthRightsBus.Method.authorizeRight: MethodSpec(
            signature: "ssa{sv}", action: .rightsUse, interactive: false,
            handler: { service, request throws(ServiceError) in try await service.authorizeRight(request) }),
        LocalAuthRightsBus.Method.deauthorize: MethodSpec(
            signature: "s", action: nil, interactive: false,
            handler: { service, request throws(ServiceError) in try service.deauthorize(request) }),
        LocalAuthRightsBus.Method.loadSecret: MethodSpec(
            signature: "s", action: nil, interactive: false,
            handler: { service, request throws(ServiceError) in try service.loadSecret(request) }),
        LocalAuthRightsBus.Method.sign: MethodSpec(
            signature: "ssay", action: nil, interactive: false,
            handler: { service, request throws(ServiceError) in try await service.signWithRight(request) }),
        LocalAuthRightsBus.Method.decrypt: MethodSpec(
            signature: "ssay", action: nil, interactive: false,
            handler: { service, request throws(ServiceError) in try await service.decryptWithRight(request) }),
        LocalAuthRightsBus.Method.exchangeKeys: MethodSpec(
            signature: "ssaya{sv}", action: nil, interactive: false,
            handler: { service, request throws(ServiceError) in try await service.exchangeKeysWithRight(request) }),
    ]
}
