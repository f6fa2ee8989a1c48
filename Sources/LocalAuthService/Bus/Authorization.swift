import DBusCore
import Glibc
import LocalAuthShared

// May the caller do this: the polkit check of each method before anything
// happens. Who the caller is comes from its record (Callers/), from the bus,
// never from an argument.
extension CallRouter {
    /// Checks the method's polkit action before anything happens, and says
    /// whose prints the call is about. A `user` option naming someone other
    /// than the caller needs `manage` instead of the method's own action, and
    /// is checked before the name is even looked up (so a refused caller
    /// cannot probe which accounts exist).
    ///
    /// Only polkit's explicit "authorized" is yes. Denied, dismissed (the
    /// agent answered Cancelled: a person's Cancel, or a program that
    /// registered an agent for itself and cancels at once), an error, a
    /// timeout, polkit unreachable, the call ended meanwhile: all are no.
    func authorize(_ call: IncomingCall, _ spec: MethodSpec, _ arguments: any CallArguments, caller: CallerRecord,
                   record: CallRecord) async throws(ServiceError) -> Request {
        let uid = caller.uid
        var action = spec.action
        var otherUser: String?
        if let name = arguments.namedUser, name != Users.name(of: uid) {
            otherUser = name
            action = .manage
        }
        if let action {
            let check = Cancellable()
            record.authorization = check
            let decision = await authorizer.check(action, busName: call.sender, interactive: spec.interactive,
                                                  cancellable: check)
            record.authorization = nil
            try record.checkNotEnded()
            switch decision {
            case .authorized: break
            case .dismissed: throw ServiceErrors.permissionDenied("the authentication for \(action.rawValue) was dismissed")
            case .denied(let why): throw ServiceErrors.permissionDenied(why)
            }
        }
        guard let otherUser else { return Request(call: call, caller: caller, record: record) }
        guard let target = Users.uid(of: otherUser) else {
            throw ServiceErrors.invalidArgs("there is no user named \(ServiceErrors.echo(otherUser))")
        }
        return Request(call: call, caller: caller, target: target, record: record)
    }
}
