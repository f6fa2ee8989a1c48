import DBusCore
import LocalAuthShared

/// GetContextPolicy(a{sv} options) → a(sbbb): each context, whether the
/// machine allows the finger there, whether the person does, and the result.
/// The `user` option names another account (org.example.LocalAuth.manage).
struct GetContextPolicyArguments: CallArguments {
    let user: String?
    var namedUser: String? { user }

    init(_ arguments: [DBusValue]) throws(ServiceError) {
        user = try CallArgument.options(arguments[0]).option(LocalAuthBus.PrintOption.user, \.string, "a string (a user name)")
    }
}

/// SetContextPolicy(s context, b allowed, a{sv} options): the person's own
/// choice for one context. The context is one of `AuthContext`'s names, else
/// InvalidArgs before anything happens.
struct SetContextPolicyArguments: CallArguments {
    let context: AuthContext
    let allowed: Bool
    let user: String?
    var namedUser: String? { user }

    init(_ arguments: [DBusValue]) throws(ServiceError) {
        let name = try CallArgument.text(arguments[0], "the context")
        guard let context = AuthContext(rawValue: name) else {
            let known = AuthContext.allCases.map(\.rawValue).joined(separator: ", ")
            throw ServiceErrors.invalidArgs("unknown context \(ServiceErrors.echo(name)) (known: \(known))")
        }
        guard case .boolean(let allowed) = arguments[1] else { throw ServiceErrors.invalidArgs("allowed must be a boolean") }
        self.context = context
        self.allowed = allowed
        user = try CallArgument.options(arguments[2]).option(LocalAuthBus.PrintOption.user, \.string, "a string (a user name)")
    }
}

extension ContextPolicy {
    /// GetContextPolicy (its row: LocalAuth/ContextPolicyMethodTable.swift).
    func getContextPolicy(_ request: Request) -> [DBusValue] {
        let person = personal(of: request.target)
        let rows = AuthContext.allCases.map { context in
            DBusValue.structure([
                .string(context.rawValue), .boolean(machine.allows(context)), .boolean(person.allows(context)),
                .boolean(machine.allows(context) && person.allows(context)),
            ])
        }
        return [.array("(sbbb)", rows)]
    }

    /// SetContextPolicy. polkit's manage lets an administrator read another
    /// account's choices; only that account or root changes them.
    func setContextPolicy(_ request: Request, _ arguments: SetContextPolicyArguments) throws(ServiceError) -> [DBusValue] {
        guard request.target == request.uid || request.uid == 0 else {
            throw ServiceErrors.permissionDenied("only the account itself or root changes its fingerprint policy")
        }
        try set(arguments.context, on: arguments.allowed, for: request.target, by: request.uid)
        return []
    }
}

extension ContextPolicy {
    /// The running service's policy, for its methods.
    static func running() throws(ServiceError) -> ContextPolicy {
        guard let current else { throw ServiceError(.failed, "no fingerprint policy is loaded") }
        return current
    }
}
