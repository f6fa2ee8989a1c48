import DBusCore
import LocalAuthShared

// How a row of org.example.LocalAuth's tables (LocalAuthContract.swift and
// the tables beside it) asks polkit: one action of its own, or `manage`
// instead when the call names another user's prints.

extension Authorization {
    /// org.example.LocalAuth's rule: the row's action, or `manage` for another user's prints.
    static func localAuth(_ action: PolkitAction?, interactive: Bool) -> Authorization {
        Authorization(
            actions: action.map { [$0.rawValue] } ?? [], interactive: interactive,
            anotherUser: .instead(PolkitAction.manage.rawValue))
    }
}

extension MethodSpec {
    /// An org.example.LocalAuth row: its action (nil: none), or `manage` for
    /// another user's prints. `scans`: its answer waits for a finger
    /// (`MethodSpec.scans`).
    init<Arguments: CallArguments>(
        signature: String, action: PolkitAction?, interactive: Bool, scans: Bool = false, _ arguments: Arguments.Type,
        maximumBodyBytes: Int = ServiceLimits.maximumBodyBytes,
        handler: @escaping @ServiceActor @Sendable (Target, Call<Arguments>) async throws(ServiceError) -> [DBusValue]
    ) {
        self.init(
            signature: signature, authorization: .localAuth(action, interactive: interactive), scans: scans, arguments,
            maximumBodyBytes: maximumBodyBytes, handler: handler)
    }

    /// An org.example.LocalAuth row whose method answers nothing: its handler
    /// returns when it is done, and the reply is empty.
    init<Arguments: CallArguments>(
        signature: String, action: PolkitAction?, interactive: Bool, scans: Bool = false, _ arguments: Arguments.Type,
        answersNothing handler: @escaping @ServiceActor @Sendable (Target, Call<Arguments>) async throws(ServiceError) -> Void
    ) {
        self.init(
            signature: signature, action: action, interactive: interactive, scans: scans, arguments,
            handler: { target, call throws(ServiceError) in
                try await handler(target, call)
                return []
            })
    }
}
