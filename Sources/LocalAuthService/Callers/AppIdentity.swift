import DBusCore
import LocalAuthShared

/// Which app a caller is (docs/RIGHTS.md, "Whose rights"; docs/SECURITY.md,
/// "Who is asking"): a sandboxed app's id comes from its sandbox, which the
/// app cannot change; any other caller names itself (the `app-id` option),
/// which is a namespace between programs of one user, not a wall.
///
/// What proves a sandbox (a name alone never does: any host program can run
/// in a systemd scope it names itself, `app-flatpak-<ID>-1.scope`):
/// - Flatpak: the `[Application] name=` of the /.flatpak-info in the root of
///   the process, a root of its own (bwrap's, not the host's /); when
///   the cgroup names a Flatpak id too, the two must agree.
/// - snap: the AppArmor label `snap.NAME.*` the bus read from the socket
///   when the process connected (GetConnectionCredentials'
///   LinuxSecurityLabel); the kernel sets it, the process cannot.
/// A cgroup that names a sandbox without that proof is `.unprovenSandbox`,
/// refused with UnprovenSandbox. Same-uid host code can still enter the real
/// sandbox (`flatpak run --command=…`, `snap run --shell`) or build a mount
/// namespace of its own: the id is a wall between sandboxes and against
/// other uids, not against the same user's host programs (docs/SECURITY.md).
///
/// Sandbox ids live in their own namespace ("flatpak:ID", "snap:NAME") and a
/// caller outside a sandbox may not name an id with ":", so neither side can
/// claim the other's rights. The parsers and `decide` are pure and
/// unit-tested (RightsRulesTests); ProcessFacts reads /proc.
enum AppIdentity: Equatable, Sendable {
    /// A Flatpak or snap app, proven by its sandbox: "flatpak:org.example.Vault", "snap:vault".
    case sandboxed(String)
    /// Not in a sandbox the service knows: the app id is the caller's option.
    case host
    /// The cgroup names this sandbox id, and nothing the sandbox sets up proves it: refused.
    case unprovenSandbox(String)
    /// In a sandbox whose app id the service cannot read: refused.
    case unknownSandbox
    /// The service cannot see the caller's process: refused (fails closed).
    case unreadable

    /// What the service read of the process (nil: could not be read).
    struct Evidence: Sendable {
        var cgroup: String?
        /// /.flatpak-info in the process's root, read only when that root is
        /// not the host's.
        var flatpakInfo: String?
        var mountinfo: String?
        var ownRoot: Bool?
        /// The LSM label the bus read from the connection's socket.
        var securityLabel: String?
    }

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

    /// A snap's AppArmor label, "snap.NAME.APP (enforce)" or "snap.NAME.hook.HOOK": NAME.
    static func snapName(securityLabel: String) -> String? {
        let label = securityLabel.split(separator: " ").first ?? ""
        let parts = label.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count >= 3, parts[0] == "snap", !parts[1].isEmpty else { return nil }
        return String(parts[1])
    }

    /// The decision from what the service read.
    static func decide(_ evidence: Evidence) -> AppIdentity {
        guard let cgroup = evidence.cgroup else { return .unreadable }
        let claimed = sandboxID(cgroup: cgroup)
        if evidence.ownRoot == true, let info = evidence.flatpakInfo {
            guard let id = flatpakAppID(info: info).map({ "flatpak:" + $0 }) else { return .unknownSandbox }
            // Flatpak's scope names the same app; another name is a forgery of one of the two.
            if let claimed, claimed != id { return .unprovenSandbox(claimed) }
            return .sandboxed(id)
        }
        if let label = evidence.securityLabel, let name = snapName(securityLabel: label) {
            return .sandboxed("snap:" + name)
        }
        if let claimed { return .unprovenSandbox(claimed) }
        if let mountinfo = evidence.mountinfo, mountsFlatpakInfo(mountinfo: mountinfo) { return .unknownSandbox }
        return .host
    }

    /// The app id a call is for: the sandbox's, or the caller's `app-id`
    /// option (required outside a sandbox; no ":" there, at most 256 bytes).
    static func appID(_ identity: AppIdentity, declared: String?) throws(ServiceError) -> String {
        switch identity {
        case .sandboxed(let id): return id
        case .unreadable:
            throw ServiceErrors.permissionDenied("the service cannot see the calling process, so it cannot tell whose app it is")
        case .unknownSandbox:
            throw ServiceErrors.permissionDenied("the caller runs in a sandbox whose app id the service cannot read")
        case .unprovenSandbox(let id):
            throw ServiceError(.unprovenSandbox,
                                      "the caller's cgroup names the sandbox \(id), but its sandbox does not prove it")
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
