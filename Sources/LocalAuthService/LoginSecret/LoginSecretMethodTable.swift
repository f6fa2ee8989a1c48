import DBusCore
import LocalAuthShared

// The rows of the method table for the login secret (LoginSecrets.swift,
// docs/KEYRING.md), merged into `LocalAuthService.methods` (MethodTable.swift).
// The user's side needs org.example.LocalAuth.keyring; the PAM host's side
// org.example.LocalAuth.login-secret, which no one but root gets, and the
// component refuses any other uid itself.
extension LocalAuthService {
    nonisolated static let loginSecretMethods: [String: MethodSpec] = [
        LocalAuthLoginSecretBus.Method.enable: MethodSpec(
            signature: "a{sv}", action: .keyring, interactive: false, EnableLoginSecretArguments.self,
            handler: { service, call throws(ServiceError) in try await service.loginSecrets.enable(LoginSecretCaller(call.caller), call.arguments) }),
        LocalAuthLoginSecretBus.Method.disable: MethodSpec(
            signature: "aya{sv}", action: .keyring, interactive: false, DisableLoginSecretArguments.self,
            handler: { service, call throws(ServiceError) in try service.loginSecrets.disable(LoginSecretCaller(call.caller), call.arguments) }),
        LocalAuthLoginSecretBus.Method.status: MethodSpec(
            signature: "", action: nil, interactive: false, NoArguments.self,
            handler: { service, call throws(ServiceError) in try service.loginSecrets.status(LoginSecretCaller(call.caller)) }),
        LocalAuthLoginSecretBus.Method.release: MethodSpec(
            signature: "sayaya{sv}", action: .loginSecret, interactive: false, ReleaseLoginSecretArguments.self,
            handler: { service, call throws(ServiceError) in try await service.loginSecrets.release(LoginSecretCaller(call.caller), call.arguments) }),
        LocalAuthLoginSecretBus.Method.getPasswordWrap: MethodSpec(
            signature: "sa{sv}", action: .loginSecret, interactive: false, GetLoginSecretPasswordWrapArguments.self,
            handler: { service, call throws(ServiceError) in
                try await service.loginSecrets.passwordWrap(LoginSecretCaller(call.caller), call.arguments)
            }),
        LocalAuthLoginSecretBus.Method.changePassword: MethodSpec(
            signature: "sa{sv}", action: .loginSecret, interactive: false, ChangeLoginSecretPasswordArguments.self,
            handler: { service, call throws(ServiceError) in
                try await service.loginSecrets.changePassword(LoginSecretCaller(call.caller), call.arguments)
            }),
        LocalAuthLoginSecretBus.Method.reseal: MethodSpec(
            signature: "say", action: .loginSecret, interactive: false, ResealLoginSecretArguments.self,
            handler: { service, call throws(ServiceError) in try await service.loginSecrets.reseal(LoginSecretCaller(call.caller), call.arguments) }),
    ]
}
