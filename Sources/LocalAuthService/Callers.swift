import DBusCore
import Glibc
import LocalAuthShared

// Who is calling, and may they: the caller's uid and program from the bus
// (never from an argument), and the polkit check of each method before
// anything happens.
extension LocalAuthService {
    /// The caller's uid, from the bus (never from an argument).
    func callerUID(_ record: CallRecord) async throws(DBusError) -> UInt32 {
        if let uid = record.caller?.uid { return uid }
        let reply = try await bus.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                       interface: "org.freedesktop.DBus", member: "GetConnectionUnixUser",
                                       arguments: [.string(record.sender)])
        guard let uid = reply.first?.uint32 else { throw DBusError(.failed, "the bus did not say who the caller is") }
        record.caller?.uid = uid
        return uid
    }

    /// The executable behind a bus caller, as the kernel names it (the bus
    /// gives its pid; /proc gives the file): what a prompt shows as the
    /// program that asks, since an app cannot choose it. nil if unknown.
    func callerProgram(_ sender: String) async -> String? {
        guard let reply = try? await bus.call(destination: BusConnection.busDriver, path: "/org/freedesktop/DBus",
                                              interface: BusConnection.busDriver, member: "GetConnectionUnixProcessID",
                                              arguments: [.string(sender)]),
              let pid = reply.first?.uint32 else { return nil }
        guard let path = Posix.readLink("/proc/\(pid)/exe") else { return nil }
        return String(path.split(separator: "/").last ?? Substring(path))
    }

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
    func authorize(_ call: IncomingCall, _ spec: MethodSpec, uid: UInt32,
                   record: CallRecord) async throws(DBusError) -> Request {
        var action = spec.action
        var otherUser: String?
        if let index = spec.userOptions, let name = try Self.printOptions(record.arguments[index]).user,
           name != Users.name(of: uid) {
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
        guard let otherUser else { return Request(call: call, uid: uid, record: record) }
        guard let target = Users.uid(of: otherUser) else {
            throw ServiceErrors.invalidArgs("there is no user named \(ServiceErrors.echo(otherUser))")
        }
        return Request(call: call, uid: uid, target: target, record: record)
    }
}
