import DBusCore

/// Where logind places a caller's process, found once per connection.
enum LoginPlace: Equatable, Sendable {
    /// In this session's scope.
    case session(ObjectPath)
    /// In no session, but this user's (an app's `app-*.scope` or a unit of
    /// `systemd --user`): judged by the user's display session, as polkit does.
    case user(ObjectPath)
    /// In no session and no user's slice (a system service, a cron job), or
    /// the process is gone.
    case nowhere
    /// No logind on this bus.
    case noLogind
}

/// A caller's login session, as prompt agents are matched to callers.
enum LoginSession: Equatable, CustomStringConvertible {
    /// logind's session object path: the caller's own, or its user's display session.
    case session(String)
    /// logind runs, and the process has no session (a daemon, cron): no sheet.
    case none
    /// No logind on this bus: the uid alone decides.
    case noLogind

    var description: String {
        switch self {
        case .session(let path): path
        case .none: "no session"
        case .noLogind: "no logind"
        }
    }
}

/// Presence as real logind has it (docs/SECURITY.md, "At the reader"):
/// `GetSessionByPID`; when that is `NoSessionForPID` (apps in `app-*.scope`
/// under user@UID.service), `GetUserByPID` and the user's `Display`. The
/// session judged must be local, on a seat, and the active one (`Active`,
/// `State` "active"). Where the process sits is found once per connection;
/// the session's properties are read at every question, since the active
/// session changes with every user switch and logind signals `State` not.
extension Callers {
    static let noSessionForPID = "org.freedesktop.login1.NoSessionForPID"
    static let userProperties = "org.freedesktop.login1.User"
    static let seatProperties = "org.freedesktop.login1.Seat"
    static let seat0: ObjectPath = "/org/freedesktop/login1/seat/seat0"

    /// Can this caller be the person at the reader, now?
    func presence(_ record: CallerRecord) async -> Presence {
        let (presence, _) = await judge(record)
        if presence != .local, presence != .unknown {
            Log.info("caller \(record.sender) (uid \(record.uid)) is not at the reader: \(presence)")
        }
        return presence
    }

    /// The session that stands for this caller: its own, or its user's
    /// display session (the session a prompt agent in a user unit serves).
    func session(_ record: CallerRecord) async -> LoginSession {
        switch await place(record) {
        case .noLogind: return logind.seen ? .none : .noLogind
        case .nowhere: return .none
        case .session(let path): return .session(path.rawValue)
        case .user(let user):
            guard let display = await displaySession(of: user) else { return .none }
            return .session(display.rawValue)
        }
    }

    /// The answer without waiting, when there is one: no logind to ask.
    /// Every call checks presence; without logind a preflight pays nothing.
    func knownPresence(_ record: CallerRecord) -> Presence? {
        logind.isPresent ? nil : logind.presenceWithoutLogind()
    }

    private func judge(_ record: CallerRecord) async -> (Presence, ObjectPath?) {
        guard logind.isPresent else { return (logind.presenceWithoutLogind(), nil) }
        let sessionPath: ObjectPath
        switch await place(record) {
        case .noLogind: return (logind.presenceWithoutLogind(), nil)
        case .nowhere: return (await sessionless(record), nil)
        case .session(let path): sessionPath = path
        case .user(let user):
            guard let display = await displaySession(of: user) else { return (.noSeat, nil) }
            sessionPath = display
        }
        guard let values = await properties(sessionPath, Logind.session) else { return (.noSeat, sessionPath) }
        var seat = ""
        if case .structure(let fields)? = values["Seat"], let id = fields.first?.string { seat = id }
        // Missing properties fail closed: remote, inactive.
        let presence = Presence.of(remote: values["Remote"]?.bool ?? true, seat: seat,
                                                 active: values["Active"]?.bool ?? false,
                                                 state: values["State"]?.string ?? "")
        return (presence, sessionPath)
    }

    /// Where the process sits, found once (the pid is checked to still name
    /// the caller's process first: a reused pid would be someone else's session).
    func place(_ record: CallerRecord) async -> LoginPlace {
        if let known = record.place { return known }
        guard logind.isPresent else { return .noLogind }
        guard let pid = record.livePID else { return .nowhere }
        let place: LoginPlace
        do {
            let reply = try await bus.call(destination: Logind.name, path: Logind.path, interface: Logind.manager,
                                           member: "GetSessionByPID", arguments: [.uint32(pid)], timeout: 5)
            guard case .objectPath(let session)? = reply.first else { return .nowhere }
            place = .session(session)
        } catch where error.name.rawValue == Self.noSessionForPID {
            place = await userPlace(pid)
        } catch where error.name == .serviceUnknown || error.name == .nameHasNoOwner {
            return .noLogind
        } catch {
            return .nowhere
        }
        // The pid still named the caller's process when logind placed it.
        guard record.livePID == pid else { return .nowhere }
        record.place = place
        return place
    }

    /// A caller logind places in no session and no user's slice: at the
    /// reader only as a login program at the console or the login screen in
    /// front (LoginScreen.swift, docs/SECURITY.md "Login before a session").
    /// Read at every call: the VT in front and seat0's active session change.
    private func sessionless(_ record: CallerRecord) async -> Presence {
        guard record.uid == 0, let pid = record.livePID else { return .noSeat }
        var facts = LoginScreen.Facts(uid: record.uid, controllingTTY: ProcessFacts.controllingTTY(pid: pid),
                                      foregroundVT: ProcessFacts.foregroundVT(), cgroup: ProcessFacts.cgroupPath(pid: pid))
        let vt = facts.controllingTTY.flatMap(LoginScreen.virtualConsole(ttyNr:))
        let inFront = vt.map { "tty\($0)" == facts.foregroundVT } ?? false
        if !inFront {
            facts.activeSession = await seat0ActiveSession()
            if facts.activeSession?.sessionClass == "greeter" { facts.remoteGreeters = await remoteGreeters() }
        }
        // Read, then checked again: the pid named the caller's process throughout.
        guard record.livePID == pid else { return .noSeat }
        let presence = LoginScreen.presence(facts)
        if presence == .local {
            let shape = inFront ? "its console tty\(vt ?? 0) is in front"
                : "seat0's greeter is in front and it runs in the greeter's service \(facts.cgroup ?? "")"
            Log.info("caller \(record.sender) (uid 0) is in no session; at the reader: \(shape)")
        }
        return presence
    }

    /// seat0's active session (nil: none, e.g. a getty's VT is in front),
    /// with the cgroup of the process that started it (its leader's parent).
    private func seat0ActiveSession() async -> LoginScreen.Session? {
        guard let seat = await properties(Self.seat0, Self.seatProperties),
              case .structure(let fields)? = seat["ActiveSession"], fields.count == 2,
              case .objectPath(let path) = fields[1], path.rawValue != "/",
              let values = await properties(path, Logind.session) else { return nil }
        return Self.loginScreenSession(values)
    }

    /// Every remote greeter-class session (no seat, `Remote`), with who
    /// started it. ListSessions failing counts as one whose starter is
    /// unknown (fails closed). Asked only of a root caller in no session
    /// while a greeter is in front: gdm's worker, at a login.
    private func remoteGreeters() async -> [LoginScreen.Session] {
        let unknown = [LoginScreen.Session(sessionClass: "greeter", remote: true, active: false, state: "",
                                           launcherCgroup: nil)]
        guard let reply = try? await bus.call(destination: Logind.name, path: Logind.path, interface: Logind.manager,
                                              member: "ListSessions", arguments: [], timeout: 5),
              case .array(_, let rows)? = reply.first else { return unknown }
        var greeters: [LoginScreen.Session] = []
        for case .structure(let fields) in rows where fields.count == 5 {
            // (id, uid, user, seat, path): a session on a seat is not remote.
            guard fields[3].string?.isEmpty ?? true, case .objectPath(let path) = fields[4] else { continue }
            guard let values = await properties(path, Logind.session) else { return unknown }
            let session = Self.loginScreenSession(values)
            if session.sessionClass == "greeter", session.remote { greeters.append(session) }
        }
        return greeters
    }

    /// A session's properties as the login rules read them.
    private static func loginScreenSession(_ values: [String: DBusValue]) -> LoginScreen.Session {
        let launcher = values["Leader"]?.uint32.flatMap { $0 > 1 ? ProcessFacts.parentPID(pid: $0) : nil }
            .flatMap { $0 > 1 ? ProcessFacts.cgroupPath(pid: $0) : nil }
        // Missing properties fail closed: remote, inactive.
        return LoginScreen.Session(sessionClass: values["Class"]?.string ?? "", remote: values["Remote"]?.bool ?? true,
                                   active: values["Active"]?.bool ?? false, state: values["State"]?.string ?? "",
                                   launcherCgroup: launcher)
    }

    private func userPlace(_ pid: UInt32) async -> LoginPlace {
        guard let reply = try? await bus.call(destination: Logind.name, path: Logind.path, interface: Logind.manager,
                                              member: "GetUserByPID", arguments: [.uint32(pid)], timeout: 5),
              case .objectPath(let user)? = reply.first else { return .nowhere }
        return .user(user)
    }

    /// The user's `Display`: "the graphical session, if any, else a text
    /// one" (logind); nil when it has none ("/").
    private func displaySession(of user: ObjectPath) async -> ObjectPath? {
        guard let values = await properties(user, Self.userProperties),
              case .structure(let fields)? = values["Display"], fields.count == 2,
              case .objectPath(let path) = fields[1], path.rawValue != "/" else { return nil }
        return path
    }

    private func properties(_ path: ObjectPath, _ interface: String) async -> [String: DBusValue]? {
        guard let reply = try? await bus.call(destination: Logind.name, path: path, interface: Logind.properties,
                                              member: "GetAll", arguments: [.string(interface)], timeout: 5)
        else { return nil }
        return reply.first?.stringKeyedDictionary
    }
}

extension Presence {
    /// Why biometrics are not offered to such a caller; nil: they may be.
    static func refusal(_ presence: Presence) -> ServiceError? {
        let why: String
        switch presence {
        case .local, .unknown: return nil
        case .remote: why = "the caller's session is remote: nobody there can touch the fingerprint reader"
        case .noSeat: why = "the caller has no session on a seat: nobody there can touch the fingerprint reader"
        case .inactive: why = "the caller's session is not the active one on its seat: someone else is at the reader"
        case .logindAway: why = "logind, which says who is at the reader, has left the bus (restarting?): nobody is until it is back"
        }
        return ServiceError(.notAtTheReader, why)
    }
}
