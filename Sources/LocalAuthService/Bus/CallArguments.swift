import DBusCore
import LocalAuthShared

/// The arguments of one method of a contract, decoded from the
/// call's body once, at arrival, and validated in full (options included)
/// before anything else happens: before the caller is looked up, before
/// polkit is asked, before the call is registered. A handler receives them
/// typed (`Call<Arguments>`) and never reads the body again.
protocol CallArguments: Sendable {
    /// Decodes and validates; a bad argument is a named error (InvalidArgs)
    /// and nothing has happened yet.
    init(_ arguments: [DBusValue]) throws(ServiceError)
    /// The user the call names as whose prints it is about: a user other
    /// than the caller needs the row's `Authorization.anotherUser`
    /// (org.example.LocalAuth's `manage`, fprintd's `setusername`).
    var namedUser: String? { get }
    /// The `request-id` the call carries (EvaluatePolicy, VerifyUser,
    /// AuthorizeRight): a Cancel sent right after the call finds it even
    /// before polkit answered.
    var callRequestID: String? { get }
    /// Another call of the same connection this one ends (Cancel,
    /// EndEvaluation): the router ends it the moment this call arrives, so a
    /// Cancel right behind a call is honoured before that call reaches the
    /// reader, whatever the order its tasks run in.
    var endsCall: EndsCall? { get }
}

/// A call of the same connection, by its request id, and why it ends.
struct EndsCall: Sendable {
    let requestID: String
    let reason: Interruption
}

extension CallArguments {
    var namedUser: String? { nil }
    var callRequestID: String? { nil }
    var endsCall: EndsCall? { nil }
}

/// A method that takes nothing.
struct NoArguments: CallArguments {
    init(_ arguments: [DBusValue]) throws(ServiceError) {}
}

/// The pieces the arguments structs are made of, one way each, so that every
/// method names a malformed argument alike ("options must be a{sv}", "<key>
/// must be a boolean").
enum CallArgument {
    /// An `a{sv}` of options, else InvalidArgs. Keys a method does not know
    /// are the caller's to send: they are ignored (forward compatibility).
    static func options(_ value: DBusValue) throws(ServiceError) -> [String: DBusValue] {
        guard let options = value.stringKeyedDictionary else { throw ServiceErrors.invalidArgs("options must be a{sv}") }
        return options
    }

    /// A string argument; `what` names it in the error ("the identifier").
    static func text(_ value: DBusValue, _ what: String) throws(ServiceError) -> String {
        guard let text = value.string else { throw ServiceErrors.invalidArgs("\(what) must be a string") }
        return text
    }
}

extension [String: DBusValue] {
    /// The option `key`, which a call may leave out: nil when absent, its
    /// value as `read` takes it when present, and InvalidArgs ("<key> must
    /// be <expected>") when `read` refuses it (another type) or `valid` does
    /// (out of range).
    func option<Typed>(
        _ key: String, _ read: (DBusValue) -> Typed?, _ expected: String, where valid: (Typed) -> Bool = { _ in true }
    ) throws(ServiceError) -> Typed? {
        guard let value = self[key] else { return nil }
        guard let typed = read(value), valid(typed) else { throw ServiceErrors.invalidArgs("\(key) must be \(expected)") }
        return typed
    }
}

/// One call on its way to its handler: who calls (`request`) and what it
/// asks, typed.
@ServiceActor
struct Call<Arguments: CallArguments> {
    let request: Request
    let arguments: Arguments

    var uid: UInt32 { request.uid }
    var sender: String { request.sender }
    var caller: CallerRecord { request.caller }
    var record: CallRecord { request.record }
    /// Whose prints: the caller, or the user a `user` option named once `manage` was granted.
    var target: UInt32 { request.target }
}
