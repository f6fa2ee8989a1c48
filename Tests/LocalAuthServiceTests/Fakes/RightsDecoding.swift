import DBusCore
@testable import LocalAuthService

/// The router decodes each call's arguments once, before the handler runs
/// (Bus/CallRouter.swift); the tests hand a `RightsCall` whose record holds
/// the body, so these decode it the same way (the same `CallArguments`
/// structs) and call the handler.
@ServiceActor
extension RightsCall {
    /// The body the test put in the call's record.
    var arguments: [DBusValue] { record.arguments }
}

@ServiceActor
extension RightsService {
    func saveRight(_ call: RightsCall) async throws(ServiceError) -> [DBusValue] {
        try await saveRight(call, SaveRightArguments(call.arguments))
    }
    func removeRight(_ call: RightsCall) async throws(ServiceError) -> [DBusValue] {
        try await removeRight(call, RemoveRightArguments(call.arguments))
    }
    func removeAllRights(_ call: RightsCall) async throws(ServiceError) -> [DBusValue] {
        try await removeAllRights(call, RemoveAllRightsArguments(call.arguments))
    }
    func listRights(_ call: RightsCall) async throws(ServiceError) -> [DBusValue] {
        try await listRights(call, ListRightsArguments(call.arguments))
    }
    func getPublicKey(_ call: RightsCall) async throws(ServiceError) -> [DBusValue] {
        try await getPublicKey(call, GetPublicKeyArguments(call.arguments))
    }
    func canAuthorizeRight(_ call: RightsCall) async throws(ServiceError) -> [DBusValue] {
        try await canAuthorizeRight(call, CanAuthorizeRightArguments(call.arguments))
    }
    func authorizeRight(_ call: RightsCall) async throws(ServiceError) -> [DBusValue] {
        try await authorizeRight(call, AuthorizeRightArguments(call.arguments))
    }
    func deauthorize(_ call: RightsCall) throws(ServiceError) -> [DBusValue] {
        try deauthorize(call, DeauthorizeArguments(call.arguments))
    }
    func loadSecret(_ call: RightsCall) throws(ServiceError) -> [DBusValue] {
        try loadSecret(call, LoadSecretArguments(call.arguments))
    }
    func sign(_ call: RightsCall) async throws(ServiceError) -> [DBusValue] {
        try await sign(call, SignArguments(call.arguments))
    }
    func decrypt(_ call: RightsCall) async throws(ServiceError) -> [DBusValue] {
        try await decrypt(call, DecryptArguments(call.arguments))
    }
    func exchangeKeys(_ call: RightsCall) async throws(ServiceError) -> [DBusValue] {
        try await exchangeKeys(call, ExchangeKeysArguments(call.arguments))
    }
}
