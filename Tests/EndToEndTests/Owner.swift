import RigSupport
import Foundation
import Glibc

/// A real local account with a known password, for the password path of
/// policy 2 (polkit's auth_self through PAM) and for callers that are not root
/// (polkit always authorizes root).
enum TestAccount {
    static let name = "laowner"
    static let password = "Correct-Horse-9"

    /// Creates the account once (idempotent) and returns its uid.
    static func ensure() throws -> UInt32 {
        if getpwnam(name) == nil {
            let created = try runProgram("/usr/sbin/useradd", ["--create-home", "--shell", "/bin/bash", name])
            guard created.status == 0 || getpwnam(name) != nil else { throw RigError("useradd: \(created.output)") }
        }
        let changed = try runProgram("/bin/sh", ["-c", "echo '\(name):\(password)' | /usr/sbin/chpasswd"])
        guard changed.status == 0 else { throw RigError("chpasswd: \(changed.output)") }
        return getpwnam(name)!.pointee.pw_uid
    }
}

extension RigTestCase {
    /// Runs localauthctl as the test account, with polkit's text agent
    /// registered for it on a pseudo-terminal, answering `password`
    /// ("-": the prompt is never answered).
    ///
    /// polkit's PAM helper is setuid and ignores DBUS_SYSTEM_BUS_ADDRESS, so
    /// the command runs in a private mount namespace where the rig's bus
    /// socket is bound over /run/dbus/system_bus_socket; nothing outside sees it.
    func localauthctlAsOwner(_ arguments: [String], password: String = "-", timeout: Double = 60) throws -> Outcome {
        let uid = try TestAccount.ensure()
        let socket = String(rig.address.dropFirst("unix:path=".count))
        // The test account must be able to run the tool.
        let tool = rig.directory + "/localauthctl"
        if !FileManager.default.fileExists(atPath: tool) {
            try FileManager.default.copyItem(atPath: Paths.localauthctl, toPath: tool)
            chmod(tool, 0o755)
        }
        let quoted = arguments.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        let script = """
            mkdir -p /run/dbus && mount -t tmpfs tmpfs /run/dbus && touch /run/dbus/system_bus_socket \
            && mount --bind '\(socket)' /run/dbus/system_bus_socket \
            && exec setpriv --reuid=\(uid) --regid=\(uid) --clear-groups env HOME=/home/\(TestAccount.name) \
            DBUS_SYSTEM_BUS_ADDRESS='\(rig.address)' /usr/bin/python3 '\(Paths.helper("with-polkit-agent.py"))' \
            '\(password)' '\(tool)' \(quoted)
            """
        return try runProgram("/usr/bin/unshare", ["--mount", "--propagation", "private", "/bin/sh", "-c", script],
                              timeout: timeout)
    }

    /// Enrolls `finger` for the test account with localauthctl, feeding scans of `id`.
    func enrollOwner(_ finger: String = "right-index-finger", as id: String) throws {
        try rig.polkit("org.example.LocalAuth.enroll", "yes")
        let outcome = try feedingEnrollScans(of: id) { try localauthctlAsOwner(["enroll", finger]) }
        guard outcome.status == 0 else { throw RigError("owner enroll failed: \(outcome.output)") }
    }

    /// Runs `enroll` (a blocking enrollment) while the virtual sensor gets
    /// one scan of `id` each time the service asks for the next stage.
    func feedingEnrollScans<T>(of id: String, _ enroll: () throws -> T) rethrows -> T {
        let feeder = present(id, times: 5)
        defer { feeder.cancel() }
        return try enroll()
    }
}
