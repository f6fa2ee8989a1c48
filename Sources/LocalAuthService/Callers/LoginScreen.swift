/// A caller in no session at all (docs/SECURITY.md, "Login before a
/// session"): a login program runs PAM before `pam_open_session`, so logind
/// places it nowhere (`NoSessionForPID`, `NoUserForPID`). Two such shapes
/// are the person at the reader, and nothing else is:
///
/// - **A text console in front**: root, its controlling terminal a virtual
///   console (major 4, minor 1–63: VTs belong to seat0 only), and that VT the
///   one on screen (`/sys/class/tty/tty0/active`). `login` started by
///   `getty@ttyN.service` has this shape; while a getty's VT is in front
///   logind reports no active session on seat0, so no session rule admits it.
/// - **The login screen in front**: root, seat0's active session is a local
///   `greeter`-class session, and the caller runs in the same system service
///   as the process that started that greeter (the parent of the session's
///   leader): gdm's `gdm-session-worker` for the user's login, forked by the
///   gdm daemon in `gdm.service` as the greeter's worker was (lightdm's
///   session children and sddm's helpers alike). Not while that service
///   also serves a remote greeter (gdm's XDMCP, Remote Login): its worker
///   would have the same shape.
///
/// Refused: any other root process in no session, above all sshd's own PAM
/// (in `ssh.service`, no controlling terminal), a serial console (ttyS: it
/// may be a remote line), a VT not in front, any non-root process. Pure,
/// unit-tested (LoginScreenTests); Presence.swift reads the facts.
enum LoginScreen {
    /// What the service read of a root caller that logind places nowhere.
    struct Facts: Equatable, Sendable {
        var uid: UInt32
        /// `tty_nr` of /proc/PID/stat (field 7); 0: no controlling terminal;
        /// nil: unreadable.
        var controllingTTY: UInt32?
        /// /sys/class/tty/tty0/active ("tty3"); nil: no VTs (a container).
        var foregroundVT: String?
        /// The caller's cgroup path (ProcessFacts.cgroupPath).
        var cgroup: String?
        /// seat0's active session, when there is one.
        var activeSession: Session?
        /// The remote greeter sessions (gdm's XDMCP and Remote Login
        /// displays): their workers run in the same service as the local
        /// greeter's, so while one exists no worker of that service can be
        /// told to be the local one.
        var remoteGreeters: [Session] = []
    }

    /// seat0's active session as logind has it.
    struct Session: Equatable, Sendable {
        var sessionClass: String
        var remote: Bool
        var active: Bool
        var state: String
        /// The cgroup path of the parent of the session's leader (the
        /// display manager that started it); nil: unreadable.
        var launcherCgroup: String?
    }

    /// The VT number of a `tty_nr`: major 4, minor 1…63 (minor 0 is
    /// /dev/tty0, "the current VT", and 64… are serial lines ttyS*).
    static func virtualConsole(ttyNr: UInt32) -> Int? {
        let major = (ttyNr >> 8) & 0xfff
        let minor = (ttyNr & 0xff) | ((ttyNr >> 12) & 0xfff00)
        guard major == 4, (1...63).contains(minor) else { return nil }
        return Int(minor)
    }

    /// The verdict: `.local` for the two shapes above (either suffices: a
    /// display manager's worker holding a VT that is not yet in front is
    /// still judged by its greeter); `.inactive` for a console login on a VT
    /// not in front (someone else is at the screen); `.noSeat` for
    /// everything else.
    static func presence(_ facts: Facts) -> Presence {
        guard facts.uid == 0 else { return .noSeat }
        let vt = facts.controllingTTY.flatMap(virtualConsole(ttyNr:))
        if let vt, let front = facts.foregroundVT, front == "tty\(vt)" { return .local }
        if atTheGreeter(facts) { return .local }
        return vt != nil && facts.foregroundVT != nil ? .inactive : .noSeat
    }

    /// seat0's greeter is in front, and the caller runs in the service that started it.
    static func atTheGreeter(_ facts: Facts) -> Bool {
        guard let session = facts.activeSession, session.sessionClass == "greeter",
            Presence.of(
                remote: session.remote, seat: "seat0", active: session.active,
                state: session.state) == .local,
            let launcher = session.launcherCgroup, let cgroup = facts.cgroup,
            isSystemService(launcher), cgroup == launcher
        else { return false }
        // A remote greeter started by the same service (or one whose starter
        // cannot be read): the caller may be its worker. Fails closed, and
        // does not rely on the worker's PAM_RHOST.
        return !facts.remoteGreeters.contains { $0.launcherCgroup == nil || $0.launcherCgroup == launcher }
    }

    /// A system service's own cgroup (`/system.slice/…`), never the root,
    /// init.scope or a user's slice.
    static func isSystemService(_ cgroup: String) -> Bool {
        cgroup.hasPrefix("/system.slice/") && cgroup.count > "/system.slice/".count
    }
}
