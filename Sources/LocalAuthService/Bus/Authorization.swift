import DBusCore
import Glibc
import LocalAuthShared

// May the caller do this: the polkit check of each row before anything
// happens, for every contract. Who the caller is comes from its record
// (Callers/), from the bus, never from an argument.
extension CallRouter {
    /// Checks the row's polkit actions before anything happens, and says
    /// whose prints the call is about. A call naming someone other than the
    /// caller (`CallArguments.namedUser`) needs the contract's action for
    /// that (`manage` instead of the row's; fprintd's `setusername` before
    /// it), checked before the name is even looked up, so a refused caller
    /// cannot probe which accounts exist.
    ///
    /// Only polkit's explicit "authorized" is yes. Denied, dismissed (the
    /// agent answered Cancelled: a person's Cancel, or a program that
    /// registered an agent for itself and cancels at once), an error, a
    /// timeout, polkit unreachable, the call ended meanwhile: all are no.
    func authorize<Target>(_ routed: Routed<Target>, caller: CallerRecord) async throws(ServiceError) -> Request {
        let (record, rule) = (routed.record, routed.spec.authorization)
        var actions = rule.actions
        var otherUser: String?
        if let name = routed.arguments.namedUser, name != Users.name(of: caller.uid) {
            otherUser = name
            switch rule.anotherUser {
            case .instead(let action): actions = [action]
            case .also(let action): try await require([action], routed, interactive: rule.interactive)
            }
        }
        try await require(actions, routed, interactive: rule.interactive)
        guard let otherUser else { return Request(caller: caller, record: record) }
        guard let target = Users.uid(of: otherUser) else {
            throw ServiceError(.noSuchUser, "there is no user named \(ServiceErrors.echo(otherUser))")
        }
        return Request(caller: caller, target: target, record: record)
    }

    /// Any one of `actions` authorized (none: nothing to ask).
    private func require<Target>(_ actions: [String], _ routed: Routed<Target>, interactive: Bool) async throws(ServiceError) {
        guard !actions.isEmpty else { return }
        let record = routed.record
        var decision = Authorizer.Decision.denied("")
        for action in actions {
            let check = Cancellable()
            // SIGTERM or the caller leaving cancels the check (CallRecord.swift).
            record.authorization = check
            decision = await authorizer.check(actionID: action, busName: routed.call.sender, interactive: interactive,
                                              cancellable: check)
            record.authorization = nil
            try record.checkNotEnded()
            if decision == .authorized { return }
        }
        throw routed.contract.refusal(actions[actions.count - 1], decision)
    }
}
