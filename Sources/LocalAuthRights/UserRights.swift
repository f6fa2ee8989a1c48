import Glibc

/// What one user's rights take on disk, and whose account they belong to:
/// the per-user bounds (`RightLimits.rightsPerUser`, `.appsPerUser`,
/// `.bytesPerUser`) and the account binding (docs/RIGHTS.md, "Whose rights").
public struct UserRightsUsage: Sendable, Equatable {
    public var rights = 0
    public var bytes = 0
    /// App directories holding at least one right.
    public var apps = 0
}

extension RightStorage {
    /// The file that names the account a uid's rights were saved by:
    /// `<state>/rights/<uid>/account` (0600), the account name and a newline.
    static let accountFileName = "account"

    func userDirectory(uid: UInt32) -> String { "\(directory)/\(uid)" }

    /// Counts the right files of `uid` and their sizes (one directory listing
    /// per app and one stat per file: about a millisecond for 1,024 rights).
    public func usage(uid: UInt32) throws(RightsError) -> UserRightsUsage {
        var usage = UserRightsUsage()
        let user = userDirectory(uid: uid)
        for app in try Files.list(user) ?? [] where app != Self.accountFileName {
            var rightsHere = 0
            for name in try Files.list(user + "/" + app) ?? [] where name.hasSuffix(Self.suffix) {
                var info = stat()
                guard lstat(user + "/" + app + "/" + name, &info) == 0 else { continue }
                rightsHere += 1
                usage.bytes += Int(info.st_size)
            }
            usage.rights += rightsHere
            if rightsHere > 0 { usage.apps += 1 }
        }
        return usage
    }

    /// Refuses a save that would take `uid` past a per-user bound: `newBytes`
    /// for a file that replaces `oldBytes` (0 for a new right) in an app that
    /// already has rights or not.
    func checkUserBounds(uid: UInt32, newBytes: Int, oldBytes: Int?, appHasRights: Bool) throws(RightsError) {
        let usage = try usage(uid: uid)
        if oldBytes == nil {
            guard usage.rights < RightLimits.rightsPerUser else {
                throw RightsError(.tooManyRights, "uid \(uid) has \(usage.rights) rights; at most \(RightLimits.rightsPerUser) over all apps")
            }
            guard appHasRights || usage.apps < RightLimits.appsPerUser else {
                throw RightsError(.tooManyApps, "uid \(uid) has rights in \(usage.apps) apps; at most \(RightLimits.appsPerUser)")
            }
        }
        let after = usage.bytes - (oldBytes ?? 0) + newBytes
        guard after <= RightLimits.bytesPerUser else {
            throw RightsError(.tooMuchData, "the rights of uid \(uid) would take \(after) bytes; at most \(RightLimits.bytesPerUser)")
        }
    }

    // MARK: The account binding

    /// The account name the rights of `uid` were saved by; nil if none is recorded.
    public func boundAccount(uid: UInt32) throws(RightsError) -> String? {
        let path = userDirectory(uid: uid) + "/" + Self.accountFileName
        switch try Files.read(path, limit: 1024) {
        case .missing: return nil
        case .tooLarge(let size): throw RightsError(.oversize, "\(path) is \(size) bytes")
        case .bytes(let bytes):
            var text = bytes
            if text.last == UInt8(ascii: "\n") { text.removeLast() }
            guard let name = String(validating: text, as: UTF8.self), !name.isEmpty else {
                throw RightsError(.malformed, "\(path) does not hold an account name")
            }
            return name
        }
    }

    /// Checks that the rights of `uid` belong to `account` (the name the
    /// account database gives the uid now). Another name is
    /// `.accountChanged`: the uid was given to a new account, which must not
    /// open the old account's secrets. Nothing recorded yet: `account` is
    /// recorded when it saves (`saving`) or already has rights (those saved
    /// before this binding existed are taken to be the current account's).
    public func checkAccount(uid: UInt32, account: String, saving: Bool = true) throws(RightsError) {
        if let bound = try boundAccount(uid: uid) {
            guard bound == account else {
                throw RightsError(.accountChanged, "the rights of uid \(uid) were saved by the account "
                                  + "\(RightOwner.loggable(bound)), and uid \(uid) is now \(RightOwner.loggable(account))")
            }
            return
        }
        if !saving, try usage(uid: uid).rights == 0 { return }
        let user = userDirectory(uid: uid)
        try Files.makeDirectories(user, below: stateDirectoryPath)
        _ = try Files.createExclusively(Array((account + "\n").utf8), at: user + "/" + Self.accountFileName)
        // Another writer first (there is none: the service is the only one) would have written the same name.
        guard try boundAccount(uid: uid) == account else {
            throw RightsError(.accountChanged, "the rights of uid \(uid) belong to another account")
        }
    }
}
