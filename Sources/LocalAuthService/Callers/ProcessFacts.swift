import Glibc

/// What /proc says of a caller's process, read by the service itself. Under
/// the shipped unit (CapabilityBoundingSet=CAP_SYS_PTRACE, ProtectProc=default)
/// /proc/PID/stat and cgroup are readable for every process; exe, root and
/// ns/mnt of another uid's process need CAP_SYS_PTRACE (the kernel's ptrace
/// read check), which is why the unit grants it (docs/SECURITY.md).
enum ProcessFacts {
    /// The process's start time in clock ticks after boot (field 22 of
    /// /proc/PID/stat). With the pid it names one process: a pid reused by a
    /// new process has a later start time.
    static func startTime(pid: UInt32) -> UInt64? {
        guard let bytes = Posix.readFile("/proc/\(pid)/stat") else { return nil }
        return startTime(stat: String(decoding: bytes, as: UTF8.self))
    }

    /// The parser: fields after the command name, which is in parentheses and
    /// may itself contain spaces and ")", so the last ")" ends it.
    static func startTime(stat: String) -> UInt64? {
        guard let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // fields[0] is field 3 (state); field 22 is fields[19].
        guard fields.count > 19 else { return nil }
        return UInt64(fields[19])
    }

    /// The executable's path as the kernel names it (not argv[0], which the
    /// process chooses). nil: gone, or not readable (no CAP_SYS_PTRACE).
    static func executable(pid: UInt32) -> String? {
        guard var path = Posix.readLink("/proc/\(pid)/exe") else { return nil }
        if path.hasSuffix(" (deleted)") { path.removeLast(" (deleted)".count) }
        return path
    }

    /// Whether the process runs in a mount namespace of its own (not the one
    /// of pid 1, the host's): only then can a /.flatpak-info in its root be
    /// the sandbox's. nil: cannot tell.
    static func hasOwnMountNamespace(pid: UInt32) -> Bool? {
        guard let mine = Posix.readLink("/proc/\(pid)/ns/mnt"), let host = Posix.readLink("/proc/1/ns/mnt") else { return nil }
        return mine != host
    }

    static func text(_ path: String) -> String? {
        Posix.readFile(path).map { String(decoding: $0, as: UTF8.self) }
    }

    /// What tells a sandbox from a host program, read once per connection.
    static func sandboxEvidence(pid: UInt32, securityLabel: String?) -> AppIdentity.Evidence {
        let ownMounts = hasOwnMountNamespace(pid: pid)
        // A /.flatpak-info counts only in a root of the process's own: in the
        // host's mount namespace it would be a file at the host's /.
        let info = ownMounts == true ? text("/proc/\(pid)/root/.flatpak-info") : nil
        return AppIdentity.Evidence(cgroup: text("/proc/\(pid)/cgroup"), flatpakInfo: info,
                                    mountinfo: text("/proc/\(pid)/mountinfo"), ownMountNamespace: ownMounts,
                                    securityLabel: securityLabel)
    }
}
