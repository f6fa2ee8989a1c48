import Glibc

/// Facts about local accounts that policy 2 needs.
package enum Accounts {
    /// Whether the account has a usable password (Apple's "passcode set"): a
    /// shadow entry that is neither empty nor locked (`!`, `*`). The service
    /// runs as root, so it can read /etc/shadow; accounts it cannot see there
    /// (network accounts through NSS) are assumed to have one, and PAM decides.
    package static func hasPassword(uid: UInt32) -> Bool {
        guard let name = Users.name(of: uid) else { return false }
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
