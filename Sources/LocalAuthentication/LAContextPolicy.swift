import DBusCore
import LocalAuthShared

/// Where the fingerprint is enough (a Linux addition; docs/POLICY.md): the
/// machine's policy, the calling account's own tightening of it, and the
/// result, per context (login, lock-screen, terminal, admin, apps,
/// app-secrets). An account can turn the finger off in a context; turning
/// it on again only undoes its own choice, never the machine's.
public enum LAContextPolicy {
    /// One context as GetContextPolicy answers it.
    public struct Context: Sendable, Hashable {
        public let name: String
        /// The administrator's /etc/localauth/policy.conf allows the finger here.
        public let machine: Bool
        /// The account's own choice allows it.
        public let account: Bool
        /// Both: the finger is asked for here.
        public var allowed: Bool { machine && account }
    }

    /// The contexts of the calling account, or of `user` (an administrator's question).
    public static func contexts(user: String? = nil) async throws -> [Context] {
        let reply = try await call(LocalAuthBus.Method.getContextPolicy, [options(user: user)])
        guard case .array(_, let rows)? = reply.first else { return [] }
        return rows.compactMap { row in
            guard case .structure(let fields) = row, fields.count >= 3, let name = fields[0].string,
                case .boolean(let machine) = fields[1], case .boolean(let account) = fields[2]
            else { return nil }
            return Context(name: name, machine: machine, account: account)
        }
    }

    /// The account's own choice for `context` (polkit's
    /// org.example.LocalAuth.context-policy; another `user`: root only).
    public static func set(_ context: String, allowed: Bool, user: String? = nil) async throws {
        _ = try await call(LocalAuthBus.Method.setContextPolicy, [.string(context), .boolean(allowed), options(user: user)])
    }

    private static func options(user: String?) -> DBusValue {
        .dictionary(user.map { [LocalAuthBus.PrintOption.user: .string($0)] } ?? [:])
    }

    private static func call(_ member: String, _ arguments: [DBusValue]) async throws -> [DBusValue] {
        do {
            return try await ServiceClient.shared.call(member, arguments)
        } catch {
            if LocalAuthErrorCode(dbusName: error.name.rawValue) != nil { throw LAError(error) }
            throw LAFingerprints.ServiceError(name: error.name.rawValue, message: error.message)
        }
    }
}
