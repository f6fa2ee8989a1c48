import DBusCore
import Glibc

/// One bus connection as the service knows it, from its first call until it
/// leaves the bus: what the bus driver said once (GetConnectionCredentials),
/// and what was worked out from it once. Unique names are never reused, so
/// the uid and the process stay true for the record's life; only the pid can
/// outlive its process, which `processIsTheSame` checks before /proc or
/// logind is asked about it.
@ServiceActor
final class CallerRecord {
    let sender: String
    /// The uid the bus read from the socket when the connection was made.
    let uid: UInt32
    let process: Process?
    /// The LSM label the bus read from the socket (AppArmor, SELinux), if any.
    let securityLabel: String?

    /// The caller's process: its pid, and what pins that pid to one process.
    struct Process {
        let pid: UInt32
        /// A pidfd from the bus (`ProcessFD`, dbus-broker and dbus ≥ 1.15.8),
        /// or -1: Debian 12's dbus-daemon 1.14 gives none.
        let pidfd: Int32
        /// The start time of the process the pid named when the record was
        /// made (ProcessFacts.startTime); nil: could not be read.
        let startTime: UInt64?
        /// The executable's file (device, inode of /proc/PID/exe) when the
        /// record was made; nil: could not be read. An execve keeps the pid,
        /// the pidfd and the start time, and changes this.
        var executable: ProcessFacts.FileID? = nil
    }

    /// The process ran another executable since the record was made: every
    /// later call of the connection is refused (Callers.record).
    var execed = false

    /// Worked out once (Callers.identity).
    var identity: CallerIdentity?
    /// Where logind places the process, found once (Callers.place).
    var place: LoginPlace?

    init(sender: String, uid: UInt32, process: Process?, securityLabel: String?) {
        self.sender = sender
        self.uid = uid
        self.process = process
        self.securityLabel = securityLabel
    }

    deinit {
        if let fd = process?.pidfd, fd >= 0 { close(fd) }
    }

    /// The pid, while it still names the process that made the connection:
    /// the pidfd's process if the bus gave one, else the same pid with the
    /// same start time. nil: the process is gone or its pid was reused.
    var livePID: UInt32? {
        guard let process else { return nil }
        if process.pidfd >= 0 {
            // A pidfd's fdinfo names its process's pid, -1 once it exited.
            guard let info = ProcessFacts.text("/proc/self/fdinfo/\(process.pidfd)"),
                  let line = info.split(separator: "\n").first(where: { $0.hasPrefix("Pid:") }),
                  Int64(line.dropFirst(4).trimmingPrefixWhitespace()) == Int64(process.pid) else { return nil }
            return process.pid
        }
        guard let started = process.startTime, ProcessFacts.startTime(pid: process.pid) == started else { return nil }
        return process.pid
    }

    /// Whether the process runs another executable than when the record was
    /// made (compared by device and inode, which a path cannot fake): once
    /// seen, for good. A process gone or unreadable is not judged here
    /// (`livePID` answers for it).
    func executableChanged() -> Bool {
        if execed { return true }
        guard let recorded = process?.executable, let pid = livePID,
              let now = ProcessFacts.executableID(pid: pid), livePID == pid else { return false }
        if now != recorded { execed = true }
        return execed
    }
}

/// Who a caller is, in the one form every consumer uses: the prompt's
/// headline, polkit's dialog, the domain state's key, the rights' app id.
struct CallerIdentity: Equatable, Sendable {
    /// Sandbox or host (AppIdentity.swift).
    let app: AppIdentity
    /// The executable as the kernel names it; nil: unreadable.
    let executable: String?

    /// Who asks, as a person is shown it: the proven sandbox's app id, else
    /// the executable's path. Nothing the app declares.
    var program: String? {
        if case .sandboxed(let id) = app { return id }
        return executable
    }

    /// The short form a person reads first (the sheet's headline, polkit's
    /// "NAME asks you to confirm…"): the sandbox's app id, else the
    /// executable's file name.
    var name: String? {
        program.map { $0.split(separator: "/").last.map(String.init) ?? $0 }
    }

    /// The key of Apple's per-app domain state: the same program gets the
    /// same state, another program another one.
    var stateKey: String { program ?? "" }
}

extension Substring {
    func trimmingPrefixWhitespace() -> Substring { drop(while: { $0 == " " || $0 == "\t" }) }
}
