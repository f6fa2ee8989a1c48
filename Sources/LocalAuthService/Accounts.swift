import Glibc

/// Facts about local accounts that policy 2 needs.
enum Accounts {
    /// The user name of `uid`, from the passwd database (NSS).
    static func name(of uid: UInt32) -> String? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>? = nil
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &result) == 0, let result, let name = result.pointee.pw_name else {
            return nil
        }
        return String(cString: name)
    }

    /// The uid of the user called `name`.
    static func uid(of name: String) -> UInt32? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>? = nil
        var buffer = [CChar](repeating: 0, count: 4096)
        guard !name.isEmpty, getpwnam_r(name, &entry, &buffer, buffer.count, &result) == 0, let result else { return nil }
        return result.pointee.pw_uid
    }

    /// Whether the account has a usable password (Apple's "passcode set"): a
    /// shadow entry that is neither empty nor locked (`!`, `*`). The service
    /// runs as root, so it can read /etc/shadow; accounts it cannot see there
    /// (network accounts through NSS) are assumed to have one, and PAM decides.
    static func hasPassword(uid: UInt32) -> Bool {
        guard let name = name(of: uid) else { return false }
        guard let bytes = Posix.readFile("/etc/shadow") else { return true }
        let shadow = String(decoding: bytes, as: UTF8.self)
        for line in shadow.split(separator: "\n") {
            let fields = line.split(separator: ":", omittingEmptySubsequences: false)
            guard fields.count >= 2, fields[0] == name else { continue }
            let hash = fields[1]
            return !hash.isEmpty && !hash.hasPrefix("!") && !hash.hasPrefix("*")
        }
        return true
    }
}
