import Glibc

/// Who asks, read by the agent itself when the service could not: the
/// service's hardened unit hides other users' /proc entries
/// (ProtectProc=invisible), but the agent runs as the caller's own user (it
/// is shown only its own uid's evaluations), so the kernel lets it read the
/// caller's /proc/PID. The pid comes from the service, which had it from the
/// bus. Same rules as the service's: a Flatpak app id, a snap name, else
/// the executable's path; never anything the app chose.
enum Caller {
    static func program(pid: UInt32) -> String? {
        if let info = read("/proc/\(pid)/root/.flatpak-info") {
            var inApplication = false
            for line in info.split(separator: "\n") {
                if line.hasPrefix("[") { inApplication = line == "[Application]" }
                if inApplication, line.hasPrefix("name=") { return "flatpak:" + line.dropFirst(5) }
            }
        }
        if let cgroup = read("/proc/\(pid)/cgroup") {
            for component in cgroup.split(whereSeparator: { $0 == "/" || $0 == "\n" }) where component.hasPrefix("snap.") {
                if let name = component.split(separator: ".").dropFirst().first, !name.isEmpty { return "snap:" + name }
            }
        }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/\(pid)/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func read(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 65_536 {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            bytes += chunk[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
