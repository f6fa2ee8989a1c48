import LocalAuthCrypto
import LocalAuthShared
import LocalAuthSystem

/// The rights of every user and app under the state directory:
///
///     <state>/rights/<uid>/<app>/<identifier>.right      (directories 0700, files 0600)
///
/// where <app> and <identifier> are the hex SHA-256 of the app id and the
/// identifier (each prefixed with its role), so that no caller-chosen string
/// ever becomes a path component ("..", "/", NUL, length are all moot) and
/// names reveal nothing. Each file says whose it is; a file whose contents
/// belong elsewhere is `.misplaced`.
///
/// Every right handed out has been verified with the key protector (see
/// `RightRecord.verify`), so its public key and requirement can be trusted.
/// Writes are atomic (a crash or kill -9 leaves the old right or the new one).
public struct RightStorage: Sendable {
    public let directory: String
    public let protector: any KeyProtector

    /// `stateDirectory` must exist; the rights directory is made when first needed.
    public init(stateDirectory: String, protector: any KeyProtector) {
        self.stateDirectory = stateDirectory
        directory = stateDirectory + "/rights"
        self.protector = protector
    }

    private let stateDirectory: String
    var stateDirectoryPath: String { stateDirectory }
    static let suffix = ".right"

    /// Saves `record`, replacing the right of the same owner if there is one.
    /// A new right past `RightLimits.rightsPerApp` for its app is `.tooManyRights`;
    /// past a per-user bound, `.tooManyRights`, `.tooManyApps` or `.tooMuchData`.
    public func save(_ record: RightRecord) throws(RightsError) {
        let owner = record.owner
        guard protector.protector(forBackend: record.backendName) != nil else {
            throw RightsError(.wrongBackend, "\(owner) was made with key backend \(record.backendName); this storage uses \(protector.backendName)")
        }
        let folder = try appDirectory(uid: owner.uid, appID: owner.appID)
        let path = try self.path(of: owner)
        let bytes = record.encode()
        let count = try Files.list(folder)?.filter { $0.hasSuffix(Self.suffix) }.count ?? 0
        var oldBytes: Int?
        switch try Files.read(path, limit: RightLimits.fileBytes) {
        case .missing:
            guard count < RightLimits.rightsPerApp else {
                throw RightsError(.tooManyRights, "app \(owner.appID) of uid \(owner.uid) has \(count) rights; at most \(RightLimits.rightsPerApp)")
            }
        case .bytes(let old): oldBytes = old.count
        case .tooLarge(let size): oldBytes = size
        }
        try checkUserBounds(uid: owner.uid, newBytes: bytes.count, oldBytes: oldBytes, appHasRights: count > 0)
        // Only now: a refused save leaves nothing, not even an empty app directory.
        try Files.makeDirectories(folder, below: stateDirectory)
        try Files.write(bytes, to: path)
    }

    /// The verified right of `owner`; `.notFound` if there is none, or the damage by name.
    public func load(_ owner: RightOwner) throws(RightsError) -> RightRecord {
        let path = try self.path(of: owner)
        guard let record = try read(path, expecting: owner.uid, owner.appID, fileName: Files.name(of: path)) else {
            throw RightsError(.notFound, "\(owner) has no right")
        }
        return record
    }

    /// The rights of one app of one user, sorted by identifier. A damaged file
    /// does not hide the others: it is listed in `damaged` by name, with why.
    ///
    /// Listing reads each file's header (identifier, requirement, time,
    /// public key: the metadata kept in the clear) and its place, and opens
    /// nothing: no key is unwrapped and no sealed part decrypted, so a list
    /// costs file reads, not a millisecond of cryptography per right. The
    /// header is authenticated when the right is used (`load` verifies it).
    public func list(uid: UInt32, appID: String) throws(RightsError) -> RightListing {
        let folder = try appDirectory(uid: uid, appID: appID)
        var listing = RightListing()
        for name in (try Files.list(folder) ?? []).sorted() where name.hasSuffix(Self.suffix) {
            do {
                if let record = try read(folder + "/" + name, expecting: uid, appID, fileName: name, verifying: false) {
                    listing.rights.append(record)
                }
            } catch {
                listing.damaged.append(DamagedRight(fileName: name, error: error))
            }
        }
        listing.rights.sort { $0.owner.identifier < $1.owner.identifier }
        return listing
    }

    /// Removes the right of `owner`; `.notFound` if there was none.
    public func remove(_ owner: RightOwner) throws(RightsError) {
        guard try Files.remove(path(of: owner)) else { throw RightsError(.notFound, "\(owner) has no right") }
    }

    /// Removes every right of one app of one user, damaged files included; returns how many.
    @discardableResult
    public func removeAll(uid: UInt32, appID: String) throws(RightsError) -> Int {
        let folder = try appDirectory(uid: uid, appID: appID)
        var removed = 0
        for name in try Files.list(folder) ?? [] where name.hasSuffix(Self.suffix) {
            if try Files.remove(folder + "/" + name) { removed += 1 }
        }
        return removed
    }

    // MARK: Paths

    func appDirectory(uid: UInt32, appID: String) throws(RightsError) -> String {
        try RightOwner.check(appID, "app id", limit: RightLimits.appIDBytes, tooLong: .appIDTooLong)
        return "\(directory)/\(uid)/\(try Self.hashedName("app", appID))"
    }

    func path(of owner: RightOwner) throws(RightsError) -> String {
        try appDirectory(uid: owner.uid, appID: owner.appID) + "/" + Self.hashedName("identifier", owner.identifier) + Self.suffix
    }

    static func hashedName(_ role: String, _ name: String) throws(RightsError) -> String {
        do {
            return Hex.encode(try SHA256.hash(Array("\(role)\0".utf8) + Array(name.utf8)))
        } catch {
            throw RightsError.crypto(error, "hashing a name")
        }
    }

    /// Reads, decodes and verifies one file; nil if it does not exist.
    private func read(_ path: String, expecting uid: UInt32, _ appID: String, fileName: String,
                      verifying: Bool = true) throws(RightsError) -> RightRecord? {
        let bytes: [UInt8]
        switch try Files.read(path, limit: RightLimits.fileBytes) {
        case .missing: return nil
        case .tooLarge(let size): throw RightsError(.oversize, "\(path) is \(size) bytes; at most \(RightLimits.fileBytes)")
        case .bytes(let read): bytes = read
        }
        let record = try RightRecord.decode(bytes)
        let owner = record.owner
        guard owner.uid == uid, owner.appID == appID,
              try Self.hashedName("identifier", owner.identifier) + Self.suffix == fileName else {
            throw RightsError(.misplaced, "\(path) holds the right of \(owner)")
        }
        if verifying { try record.verify(using: protector) }
        return record
    }
}

/// What `RightStorage.list` found.
public struct RightListing: Sendable {
    public var rights: [RightRecord] = []
    public var damaged: [DamagedRight] = []
}

/// A file that could not be used, by name, and why (for the log).
public struct DamagedRight: Sendable, CustomStringConvertible {
    public let fileName: String
    public let error: RightsError
    public var description: String { "\(fileName): \(error)" }
}

extension Files {
    static func name(of path: String) -> String {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return path }
        return String(path[path.utf8.index(after: slash)...])
    }
}
