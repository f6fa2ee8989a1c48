import Glibc

/// What /proc says of a caller's process, read by the service itself. Under
/// the shipped unit (CapabilityBoundingSet=CAP_SYS_PTRACE, ProtectProc=default)
/// /proc/PID/stat and cgroup are readable for every process; exe and root of
/// another uid's process need CAP_SYS_PTRACE (the kernel's ptrace read
/// check), which is why the unit grants it (docs/SECURITY.md).
enum ProcessFacts {
    /// The process's start time in clock ticks after boot (field 22 of
    /// /proc/PID/stat). With the pid it names one process: a pid reused by a
    /// new process has a later start time.
    static func startTime(pid: UInt32) -> UInt64? {
        guard let bytes = Posix.readFile("/proc/\(pid)/stat") else { return nil }
        return statNumber(bytes, field: 22).flatMap(UInt64.init(exactly:))
    }

    static func startTime(stat: String) -> UInt64? {
        statNumber(Array(stat.utf8), field: 22).flatMap(UInt64.init(exactly:))
    }

    /// Field `field` (numbered as proc(5) numbers them: 3 is the state) of
    /// /proc/PID/stat, a number. The command name (field 2) is in parentheses
    /// and may itself contain spaces and ")", so the last ")" ends it. Read as
    /// bytes, not Characters: every call checks its caller's process with it
    /// (CallerRecord.livePID), and the String parse cost a preflight 420,000
    /// instructions (BENCHMARKS.md, "callgrind-paths").
    static func statNumber(_ stat: [UInt8], field: Int) -> Int64? {
        guard field >= 3, let close = stat.lastIndex(of: UInt8(ascii: ")")) else { return nil }
        var current = 2
        var index = close + 1
        while index < stat.count {
            // Each field starts after one space.
            guard stat[index] == UInt8(ascii: " ") else { return nil }
            index += 1
            current += 1
            let start = index
            while index < stat.count, stat[index] != UInt8(ascii: " "), stat[index] != UInt8(ascii: "\n") { index += 1 }
            if current == field { return Int64(String(decoding: stat[start..<index], as: UTF8.self)) }
            if index < stat.count, stat[index] == UInt8(ascii: "\n") { return nil }
        }
        return nil
    }

    /// Fields 3 on of /proc/PID/stat (after the command name).
    static func statFields(pid: UInt32) -> [Substring]? {
        guard let bytes = Posix.readFile("/proc/\(pid)/stat") else { return nil }
        return statFields(stat: String(decoding: bytes, as: UTF8.self))
    }

    static func statFields(stat: String) -> [Substring]? {
        guard let close = stat.lastIndex(of: ")") else { return nil }
        return stat[stat.index(after: close)...].split(separator: " ")
    }

    /// The parent's pid (field 4 of /proc/PID/stat).
    static func parentPID(pid: UInt32) -> UInt32? {
        guard let bytes = Posix.readFile("/proc/\(pid)/stat") else { return nil }
        return statNumber(bytes, field: 4).flatMap(UInt32.init(exactly:))
    }

    /// The controlling terminal's device number (`tty_nr`, field 7 of
    /// /proc/PID/stat): 0 for none.
    static func controllingTTY(pid: UInt32) -> UInt32? {
        guard let fields = statFields(pid: pid) else { return nil }
        return controllingTTY(fields: fields)
    }

    static func controllingTTY(fields: [Substring]) -> UInt32? {
        guard fields.count > 4, let value = Int64(fields[4]) else { return nil }
        return UInt32(truncatingIfNeeded: value)
    }

    /// The virtual console on screen: "tty3" (/sys/class/tty/tty0/active);
    /// nil where there are no VTs (a container, a machine without a console).
    static func foregroundVT() -> String? {
        guard let text = text("/sys/class/tty/tty0/active") else { return nil }
        let name = text.trimmed
        return name.isEmpty ? nil : String(name)
    }

    /// The process's cgroup path as logind reads it: systemd's own hierarchy
    /// (`name=systemd`) where there is one, else the unified one (`0::`).
    static func cgroupPath(pid: UInt32) -> String? {
        text("/proc/\(pid)/cgroup").flatMap(cgroupPath(cgroup:))
    }

    static func cgroupPath(cgroup: String) -> String? {
        let lines = cgroup.split(separator: "\n")
        for line in lines {
            let parts = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            if parts.count == 3, parts[1] == "name=systemd" { return String(parts[2]) }
        }
        for line in lines where line.hasPrefix("0::") { return String(line.dropFirst(3)) }
        return nil
    }

    /// A file as the kernel knows it: same device and inode, same file.
    struct FileID: Equatable, Sendable {
        let device: UInt64
        let inode: UInt64
    }

    /// The file the process executes (stat of /proc/PID/exe, which follows
    /// the kernel's link even to a deleted or replaced file). nil: gone, or
    /// not readable (no CAP_SYS_PTRACE for another uid's process).
    static func executableID(pid: UInt32) -> FileID? {
        var info = stat()
        guard stat("/proc/\(pid)/exe", &info) == 0 else { return nil }
        return FileID(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    /// The executable's path as the kernel names it (not argv[0], which the
    /// process chooses). nil: gone, or not readable (no CAP_SYS_PTRACE).
    static func executable(pid: UInt32) -> String? {
        guard var path = Posix.readLink("/proc/\(pid)/exe") else { return nil }
        if path.hasSuffix(" (deleted)") { path.removeLast(" (deleted)".count) }
        return path
    }

    /// Whether the process's root directory is not the host's (bwrap's
    /// tmpfs root, a chroot): only then can a /.flatpak-info in it be the
    /// sandbox's; at the host's / only root could have put one. The service's
    /// own / is the host's (its unit's ProtectSystem= and PrivateMounts= remount
    /// it read-only, the same directory). nil: cannot tell.
    static func hasOwnRoot(pid: UInt32) -> Bool? {
        var theirs = stat()
        var host = stat()
        guard stat("/proc/\(pid)/root/", &theirs) == 0, stat("/", &host) == 0 else { return nil }
        return theirs.st_dev != host.st_dev || theirs.st_ino != host.st_ino
    }

    static func text(_ path: String) -> String? {
        Posix.readFile(path).map { String(decoding: $0, as: UTF8.self) }
    }

    /// What tells a sandbox from a host program, read once per connection.
    static func sandboxEvidence(pid: UInt32, securityLabel: String?) -> AppIdentity.Evidence {
        let ownRoot = hasOwnRoot(pid: pid)
        // A /.flatpak-info counts only in a root of the process's own: at the
        // host's / it would be a file only root could have put there.
        let info = ownRoot == true ? text("/proc/\(pid)/root/.flatpak-info") : nil
        return AppIdentity.Evidence(cgroup: text("/proc/\(pid)/cgroup"), flatpakInfo: info,
                                    mountinfo: text("/proc/\(pid)/mountinfo"), ownRoot: ownRoot,
                                    securityLabel: securityLabel)
    }
}
