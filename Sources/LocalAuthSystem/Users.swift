import Glibc
import Synchronization

/// The account database (NSS, through getpwuid_r / getpwnam_r): user names
/// for fprintd's store, which is keyed by name, and for `user` options, which
/// name another user, and to check that a print still belongs to the account
/// of its uid (PrintStore: a reused uid inherits nothing).
package enum Users {
    /// Names already looked up. Every preflight needs the caller's name (for
    /// fprintd's store), and NSS reads and parses /etc/passwd each time; the
    /// names are kept while /etc/passwd is unchanged, and a minute at most
    /// (for accounts from other NSS sources).
    private static let names = Mutex<(version: FileVersion?, since: ContinuousClock.Instant, byUID: [UInt32: String])>(
        (nil, .now, [:]))

    /// The name of `uid`, or nil when the account database has no such user.
    package static func name(of uid: UInt32) -> String? {
        let version = FileVersion("/etc/passwd")
        let hit = names.withLock { cache -> String? in
            guard let version, cache.version == version, ContinuousClock.now - cache.since < .seconds(60) else {
                cache = (version, .now, [:])
                return nil
            }
            return cache.byUID[uid]
        }
        if let hit { return hit }
        let found = lookup { entry, buffer, size, result in getpwuid_r(uid_t(uid), entry, buffer, size, result) }?.name
        if let found { names.withLock { $0.byUID[uid] = found } }
        return found
    }

    /// The uid of `name`, or nil when there is no such user.
    package static func uid(of name: String) -> UInt32? {
        guard !name.isEmpty, !name.contains("/"), name.utf8.count <= 256 else { return nil }
        return lookup { entry, buffer, size, result in getpwnam_r(name, entry, buffer, size, result) }.map { UInt32($0.uid) }
    }

    private static func lookup(
        _ call: (
            UnsafeMutablePointer<passwd>, UnsafeMutablePointer<CChar>, Int,
            UnsafeMutablePointer<UnsafeMutablePointer<passwd>?>
        ) -> Int32
    ) -> (name: String, uid: uid_t)? {
        var size = 1024
        while size <= 1 << 20 {
            var entry = passwd()
            var result: UnsafeMutablePointer<passwd>? = nil
            let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: size)
            defer { buffer.deallocate() }
            let status = call(&entry, buffer, size, &result)
            if status == ERANGE {
                size *= 4
                continue
            }
            guard status == 0, let found = result, let name = found.pointee.pw_name else { return nil }
            return (String(cString: name), found.pointee.pw_uid)
        }
        return nil
    }
}
