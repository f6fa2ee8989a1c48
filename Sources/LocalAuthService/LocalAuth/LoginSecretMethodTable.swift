import DBusCore
import LocalAuthShared

// The rows of the method table for the login secret (LoginSecrets.swift,
// docs/KEYRING.md), merged into `LocalAuthContract.methods` (LocalAuth/LocalAuthContract.swift).
// The user's side needs org.example.LocalAuth.keyring (auth_self: polkit asks
// the person, so the rows are interactive); the PAM host's side
// org.example.LocalAuth.login-secret, which no one but root gets, and the
// component refuses any other uid itself.
extension LocalAuthContract {
    nonisolated static let loginSecretMethods: [String: MethodSpec<LocalAuthObject>] = [
        LocalAuthLoginSecretBus.Method.enable: MethodSpec(
            signature: "a{sv}", action: .keyring, interactive: true, EnableLoginSecretArguments.self,
            handler: { object, call throws(ServiceError) in try await object.loginSecrets.enable(call.request, call.arguments) }),
        LocalAuthLoginSecretBus.Method.disable: MethodSpec(
            signature: "aya{sv}", action: .keyring, interactive: true, DisableLoginSecretArguments.self,
            handler: { object, call throws(ServiceError) in try object.loginSecrets.disable(call.request, call.arguments) }),
        LocalAuthLoginSecretBus.Method.status: MethodSpec(
            signature: "", action: nil, interactive: false, NoArguments.self,
            handler: { object, call throws(ServiceError) in try object.loginSecrets.status(call.request) }),
        LocalAuthLoginSecretBus.Method.release: MethodSpec(
            signature: "sayaya{sv}", action: .loginSecret, interactive: false, ReleaseLoginSecretArguments.self,
            handler: { object, call throws(ServiceError) in try await object.loginSecrets.release(call.request, call.arguments) }),
        LocalAuthLoginSecretBus.Method.getPasswordWrap: MethodSpec(
            signature: "sa{sv}", action: .loginSecret, interactive: false, GetLoginSecretPasswordWrapArguments.self,
            handler: { object, call throws(ServiceError) in
                try await object.loginSecrets.passwordWrap(call.request, call.arguments)
            }),
        LocalAuthLoginSecretBus.Method.changePassword: MethodSpec(
            signature: "sa{sv}", action: .loginSecret, interactive: false, ChangeLoginSecretPasswordArguments.self,
            handler: { object, call throws(ServiceError) in
                try await object.loginSecrets.changePassword(call.request, call.arguments)
            }),
        LocalAuthLoginSecretBus.Method.reseal: MethodSpec(
            signature: "say", action: .loginSecret, interactive: false, ResealLoginSecretArguments.self,
            handler: { object, call throws(ServiceError) in try await object.loginSecrets.reseal(call.request, call.arguments) }),
    ]
}
