import DBusCore
import LocalAuthShared

/// Whose app a rights call is for (docs/RIGHTS.md, "Whose rights"): a
/// sandboxed caller's app id comes from its sandbox, which the app cannot
/// change; any other caller names itself (the `app-id` option), which is a
/// namespace between programs of one user, not a wall.
///
/// Sandbox ids live in their own namespace ("flatpak:ID", "snap:NAME") and a
/// caller outside a sandbox may not name an id with ":", so neither side can
/// claim the other's rights. Pure parsers here are unit-tested
/// (AppIdentityTests); `detect` only reads /proc.
enum AppIdentity: Equatable, Sendable {
    /// A Flatpak or snap app: "flatpak:org.example.Vault", "snap:vault".
    case sandboxed(String)
    /// Not in a sandbox the service knows: the app id is the caller's option.
    case host
    /// In a sandbox whose app id the service cannot read: refused.
    case unknownSandbox
    /// The service cannot see the caller's process: refused (fails closed).
    case unreadable

    /// /proc/PID/root/.flatpak-info's `[Application]` `name=`.
    static func flatpakAppID(info: String) -> String? {
        var inApplication = false
        for raw in info.split(separator: "\n") {
            let line = raw.trimmed
            if line.hasPrefix("[") { inApplication = line == "[Application]"; continue }
            if inApplication, line.hasPrefix("name=") {
                let name = line.dropFirst(5).trimmed
                return name.isEmpty ? nil : name
            }
        }
        return nil
    }

    /// The sandbox named by /proc/PID/cgroup: Flatpak's systemd scope
    /// `app-flatpak-<ID>-<N>.scope`, or a snap's `snap.<NAME>.<APP>…`.
    static func sandboxID(cgroup: String) -> String? {
        for component in cgroup.split(whereSeparator: { $0 == "/" || $0 == "\n" || $0 == ":" }) {
            if component.hasPrefix("app-flatpak-"), component.hasSuffix(".scope") {
                // app-flatpak-org.example.Vault-12345.scope: the id is up to the last "-".
                let middle = component.dropFirst("app-flatpak-".count).dropLast(".scope".count)
                guard let dash = middle.lastIndex(of: "-") else { continue }
                let id = middle[..<dash]
                if !id.isEmpty { return "flatpak:" + id }
            }
            if component.hasPrefix("snap.") {
                let parts = component.split(separator: ".", omittingEmptySubsequences: false)
                if parts.count >= 3, !parts[1].isEmpty { return "snap:" + parts[1] }
            }
        }
        return nil
    }

    /// Whether /proc/PID/mountinfo shows Flatpak's /.flatpak-info mount:
    /// readable even where the process's root is not.
    static func mountsFlatpakInfo(mountinfo: String) -> Bool {
        mountinfo.split(separator: "\n").contains { line in
            let fields = line.split(separator: " ")
            return fields.count > 4 && fields[4] == "/.flatpak-info"
        }
    }

    /// The decision from what /proc said (nil: could not be read).
    static func decide(cgroup: String?, flatpakInfo: String?, mountinfo: String?) -> AppIdentity {
        guard let cgroup else { return .unreadable }
        if let info = flatpakInfo {
            return flatpakAppID(info: info).map { .sandboxed("flatpak:" + $0) } ?? .unknownSandbox
        }
        if let id = sandboxID(cgroup: cgroup) { return .sandboxed(id) }
        if let mountinfo, mountsFlatpakInfo(mountinfo: mountinfo) { return .unknownSandbox }
        return .host
    }

    /// Reads the caller's /proc entries.
    static func detect(pid: UInt32) -> AppIdentity {
        func text(_ path: String) -> String? { Posix.readFile(path).map { String(decoding: $0, as: UTF8.self) } }
        return decide(cgroup: text("/proc/\(pid)/cgroup"), flatpakInfo: text("/proc/\(pid)/root/.flatpak-info"),
                      mountinfo: text("/proc/\(pid)/mountinfo"))
    }

    /// The app id a call is for: the sandbox's, or the caller's `app-id`
    /// option (required outside a sandbox; no ":" there, at most 256 bytes).
    static func appID(_ identity: AppIdentity, declared: String?) throws(DBusError) -> String {
        switch identity {
        case .sandboxed(let id): return id
        case .unreadable:
            throw ServiceErrors.permissionDenied("the service cannot see the calling process, so it cannot tell whose app it is")
        case .unknownSandbox:
            throw ServiceErrors.permissionDenied("the caller runs in a sandbox whose app id the service cannot read")
        case .host:
            guard let declared, !declared.isEmpty else {
                throw ServiceErrors.invalidArgs("the app-id option is required outside a sandbox")
            }
            guard !declared.contains(":") else {
                throw ServiceErrors.invalidArgs("an app id outside a sandbox may not contain \":\" (sandboxed apps' ids do)")
            }
            return declared
        }
    }
}
