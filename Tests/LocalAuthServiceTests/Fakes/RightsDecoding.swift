import DBusCore
@testable import LocalAuthService

/// The router decodes each call's arguments once, before the handler runs
/// (Bus/CallRouter.swift); the tests hand a `Request` with its body, so
/// these decode it the same way (the same `CallArguments` structs) and call
/// the handler.
struct BodyCall {
    let call: Request
    /// The body the test wrote.
    let arguments: [DBusValue]
}

@ServiceActor
extension RightsService {
    func saveRight(_ body: BodyCall) async throws(ServiceError) -> [DBusValue] {
        try await saveRight(body.call, SaveRightArguments(body.arguments))
    }
    func removeRight(_ body: BodyCall) async throws(ServiceError) -> [DBusValue] {
        try await removeRight(body.call, RemoveRightArguments(body.arguments))
    }
    func removeAllRights(_ body: BodyCall) async throws(ServiceError) -> [DBusValue] {
        try await removeAllRights(body.call, RemoveAllRightsArguments(body.arguments))
    }
    func listRights(_ body: BodyCall) async throws(ServiceError) -> [DBusValue] {
        try await listRights(body.call, ListRightsArguments(body.arguments))
    }
    func getPublicKey(_ body: BodyCall) async throws(ServiceError) -> [DBusValue] {
        try await getPublicKey(body.call, GetPublicKeyArguments(body.arguments))
    }
    func canAuthorizeRight(_ body: BodyCall) async throws(ServiceError) -> [DBusValue] {
        try await canAuthorizeRight(body.call, CanAuthorizeRightArguments(body.arguments))
    }
    func authorizeRight(_ body: BodyCall) async throws(ServiceError) -> [DBusValue] {
        try await authorizeRight(body.call, AuthorizeRightArguments(body.arguments))
    }
    func deauthorize(_ body: BodyCall) throws(ServiceError) -> [DBusValue] {
        try deauthorize(body.call, DeauthorizeArguments(body.arguments))
    }
    func loadSecret(_ body: BodyCall) throws(ServiceError) -> [DBusValue] {
        try loadSecret(body.call, LoadSecretArguments(body.arguments))
    }
    func sign(_ body: BodyCall) async throws(ServiceError) -> [DBusValue] {
        try await sign(body.call, SignArguments(body.arguments))
    }
    func decrypt(_ body: BodyCall) async throws(ServiceError) -> [DBusValue] {
        try await decrypt(body.call, DecryptArguments(body.arguments))
    }
    func exchangeKeys(_ body: BodyCall) async throws(ServiceError) -> [DBusValue] {
        try await exchangeKeys(body.call, ExchangeKeysArguments(body.arguments))
    }
}
