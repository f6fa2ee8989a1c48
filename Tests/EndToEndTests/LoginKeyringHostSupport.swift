import Foundation
import Glibc
import LocalAuthCrypto
import LocalAuthKeyring
import RigSupport
import XCTest

/// More real accounts with a login secret, for what one account must not do to another's.
struct RigAccount: Sendable {
    static let other = RigAccount(name: "laother", password: "Other-Staple-5")
    static let third = RigAccount(name: "lathird", password: "Third-Ledger-8")

    let name: String
    let password: String

    /// Creates the account once and sets its password; its uid.
    func ensure() throws -> UInt32 {
        if getpwnam(name) == nil {
            let created = try runProgram("/usr/sbin/useradd", ["--create-home", "--shell", "/bin/bash", name])
            guard created.status == 0 || getpwnam(name) != nil else { throw RigError("useradd: \(created.output)") }
        }
        let changed = try runProgram("/bin/sh", ["-c", "echo '\(name):\(password)' | /usr/sbin/chpasswd"])
        guard changed.status == 0 else { throw RigError("chpasswd: \(changed.output)") }
        return getpwnam(name)!.pointee.pw_uid
    }
}

/// The rig has no journal: syslog-listener.py receives what the PAM hosts
/// started by `pamHost` log (pam_syslog), bound over their /dev/log.
final class RigSyslog: @unchecked Sendable {
    let socket: String
    let file: String
    private let child: Child

    init(directory: String) throws {
        let id = UInt32.random(in: 0...UInt32.max)
        socket = directory + "/syslog-\(id).sock"
        file = directory + "/syslog-\(id).log"
        _ = FileManager.default.createFile(atPath: file, contents: nil)
        child = try Child("/usr/bin/python3", [Paths.helper("syslog-listener.py"), socket, file], stdoutPath: "/dev/null", stderrPath: file)
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: socket) {
            guard Date() < deadline, child.isRunning else { throw RigError("syslog-listener.py did not start: \(readText(file))") }
            usleep(10_000)
        }
    }

    var text: String { readText(file) }

    func stop() {
        child.signal(SIGTERM)
        child.wait(timeout: 5)
    }
}

extension RigTestCase {
    /// Turns `uid`'s login secret on with `password` (Argon2id here, as
    /// localauthctl does); K, from the password wrap the service answered.
    func enableLoginSecret(uid: UInt32, password: String) throws -> [UInt8] {
        try rig.polkit("org.example.LocalAuth.keyring", "yes")
        let salt = try SecureRandom.bytes(16)
        let key = try LoginPasswordDerivation.privateKey(password: Array(password.utf8), salt: salt, parameters: .standard)
        let outcome = try runAs(uid, "/usr/bin/gdbus", enableCall(key: key, salt: salt))
        guard outcome.status == 0 else { throw RigError("EnableLoginSecret: \(outcome.output)") }
        return try ECIES.decrypt(Self.bytes(inGdbusOutput: outcome.output), with: key)
    }

    /// gdbus's arguments for EnableLoginSecret with D of `key`, and `extra` options (GVariant text).
    func enableCall(key: P256.PrivateKey, salt: [UInt8], extra: String = "") -> [String] {
        let options =
            "{'password-key': <@ay \(Self.gvariantBytes(key.publicKey.x963Representation))>, "
            + "'salt': <@ay \(Self.gvariantBytes(salt))>\(extra)}"
        return [
            "call", "--system", "--dest", "org.example.LocalAuth", "--object-path", "/org/example/LocalAuth",
            "--method", "org.example.LocalAuth.EnableLoginSecret", options,
        ]
    }

    /// A shell line that runs `command` as a PAM host runs: in a private mount
    /// namespace where the rig's bus is the system bus's socket (libdbus
    /// ignores DBUS_SYSTEM_BUS_ADDRESS when the real and effective uids
    /// differ, as in passwd) and /dev/log is `syslog`'s socket (a fresh /dev
    /// with null, zero, random, urandom and tty of the real one).
    func pamHost(_ command: String, syslog: RigSyslog) -> [String] {
        let bus = String(rig.address.dropFirst("unix:path=".count))
        let saved = rig.directory + "/dev-\(UInt32.random(in: 0...UInt32.max))"
        let script = """
            set -e
            mkdir -p /run/dbus && mount -t tmpfs tmpfs /run/dbus && touch /run/dbus/system_bus_socket
            mount --bind '\(bus)' /run/dbus/system_bus_socket
            mkdir -p '\(saved)' && mount --rbind /dev '\(saved)' && mount -t tmpfs -o mode=0755 tmpfs /dev
            for node in null zero full random urandom tty; do touch /dev/$node; mount --bind '\(saved)'/$node /dev/$node; done
            ln -s /proc/self/fd /dev/fd && touch /dev/log && mount --bind '\(syslog.socket)' /dev/log
            umount -l '\(saved)'
            set +e
            \(command)
            """
        return ["--mount", "--propagation", "private", "/bin/sh", "-c", script]
    }

    /// The pamtester line of passwd as `uid` runs it: its real uid, effective uid 0 (setuid), the old password asked.
    func passwdLine(_ service: String, uid: UInt32, user: String, old: String, new: String) -> String {
        "printf '%s\\n%s\\n%s\\n' '\(old)' '\(new)' '\(new)' | setpriv --ruid=\(uid) /usr/bin/pamtester -v \(service) \(user) chauthtok"
    }

    /// A password login of `user` (pam_unix, then the keyring line): what
    /// pam_gnome_keyring's line got, how long it took, pamtester's output.
    func timedPasswordLogin(_ user: String, _ password: String, syslog: RigSyslog) throws -> (authtok: String, seconds: Double, output: String) {
        let asKeyring = rig.directory + "/keyring-\(user)-\(UInt32.random(in: 0...UInt32.max))"
        let stack = try keyringPamService(["auth requisite pam_unix.so", "auth optional MODULE keyring-authtok", try keyringCapture(asKeyring)])
        let start = Date()
        let outcome = try runProgram(
            "/usr/bin/unshare", pamHost("printf '%s\\n' '\(password)' | /usr/bin/pamtester -v \(stack) \(user) authenticate", syslog: syslog),
            timeout: 90)
        return (keyringCaptured(asKeyring), Date().timeIntervalSince(start), outcome.output)
    }

    /// The pamtester process of real uid `uid` that holds a flock (the
    /// module's Argon2id locks, whatever their files), from /proc/locks.
    static func pamtesterHoldingAFlock(realUID uid: UInt32) -> pid_t? {
        for line in readText("/proc/locks").split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count > 4, fields[1] == "FLOCK", let pid = pid_t(fields[4]), pid > 0 else { continue }
            guard readText("/proc/\(pid)/comm").hasPrefix("pamtester") else { continue }
            let status = readText("/proc/\(pid)/status")
            guard let uids = status.split(separator: "\n").first(where: { $0.hasPrefix("Uid:") })?.split(whereSeparator: { $0 == "\t" || $0 == " " }),
                uids.count > 1, UInt32(uids[1]) == uid
            else { continue }
            return pid
        }
        return nil
    }

    static func processState(_ pid: pid_t) -> Character? {
        let stat = readText("/proc/\(pid)/stat")
        guard let close = stat.lastIndex(of: ")") else { return nil }
        return stat[stat.index(close, offsetBy: 2)...].first
    }
}
