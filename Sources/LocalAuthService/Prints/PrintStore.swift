import Glibc
import LocalAuthShared

/// Enrolled prints, from two sources (layout and guarantees: docs/STORE.md):
///
/// * ours, read-write: `<state>/prints/<uid>/<driver>/<device-id>/<finger-name>`,
///   one `PrintFile` per print; directories 0700, files 0600, root only;
///   every write atomic (AtomicFile);
/// * fprintd's, read-only: `<fprintd-store>/<user name>/<driver>/<device-id>/<finger hex digit>`,
///   libfprint's serialized print as fprintd wrote it. Nothing here ever writes there.
///
/// Every file is checked before use (regular file, owned by root, not writable
/// by others, format, checksum, and that what it says matches where it lies);
/// one that fails is logged by name, once, and skipped: the others still work.
/// Every request lists the directories again, so what the service offers is
/// always what is on disk; a file already checked is read again only when
/// `stat` says it changed (`checked` below), and libfprint's parsing of bytes
/// already seen is kept in `PrintCache`.
@ServiceActor
final class PrintStore {
    let root: String
    let fprintdRoot: String
    /// Problems already logged (path + inode + size + mtime), so that a bad
    /// file is reported once, not on every request.
    private var reported: Set<String> = []
    /// Files already read and checked, with the identity of the version that
    /// was checked. Directories are still listed on every request; a file is
    /// read again only when its inode, size, times, mode or owner changed (any
    /// write, rename over it, chmod or chown changes its ctime). Why: reading,
    /// checking and parsing every print made a preflight costly
    /// (BENCHMARKS.md, "Measurements behind the code").
    private var checked: [String: (version: FileVersion, print: StoredPrint)] = [:]

    /// The print at `path` if this very version was checked before; otherwise
    /// `load` reads and checks it, and a good result is remembered.
    private func cached(_ path: String, _ load: () -> StoredPrint?) -> StoredPrint? {
        let version = FileVersion(path)
        if let version, let entry = checked[path], entry.version == version { return entry.print }
        checked[path] = nil
        guard let print = load() else { return nil }
        // Remember only if the file did not change while it was being read.
        if let version, FileVersion(path) == version { checked[path] = (version, print) }
        return print
    }

    struct StoredPrint: OfferablePrint {
        let finger: FingerName
        let print: GObjectRef
        /// libfprint's serialized print.
        let bytes: [UInt8]
        let source: PrintSource
        let reader: Readers.Identity
        /// Unix seconds; fprintd's prints have a day only (their enroll date).
        let created: Int64?
        let path: String
        /// Identifies this enrollment for the domain state: new on every
        /// enrollment, the same across restarts.
        let stamp: [UInt8]
        /// The account name the print was enrolled for (libfprint's username).
        /// A uid reused for a new account must not inherit the old account's
        /// prints, so our own prints are offered only while this is still the
        /// name of their uid (checked on every read, since the account can
        /// change while the file does not). A renamed account enrolls again.
        var enrolledFor: String? = nil
    }

    /// `--fprintd`: every print is written in fprintd's layout (Fprintd/FprintdPrints.swift).
    let fprintdLayout: Bool

    /// Whether this service wrote `stored` and may delete it (and its slot on
    /// a chip): our own layout's, and with `--fprintd` fprintd's too.
    func isOurs(_ stored: StoredPrint) -> Bool { stored.source == .localauth || fprintdLayout }

    init(stateDirectory: String, fprintdStore: String, fprintdLayout: Bool = false) {
        root = stateDirectory + "/prints"
        fprintdRoot = fprintdStore
        self.fprintdLayout = fprintdLayout
    }

    private func userDirectory(_ uid: UInt32) -> String { "\(root)/\(uid)" }

    private func readerDirectory(_ uid: UInt32, _ reader: Readers.Identity) -> String {
        "\(userDirectory(uid))/\(Escape.component(reader.driver))/\(Escape.component(reader.deviceID))"
    }

    // MARK: Reading

    /// The prints that `reader` is offered for `uid`: one per finger, ours
    /// before fprintd's for the same finger (enrolling again with `replace`
    /// over an fprintd print shadows it without touching fprintd's file).
    func prints(of uid: UInt32, for reader: Readers.Identity) -> [StoredPrint] {
        Self.offered(allPrints(of: uid), on: reader)
    }

    /// The shadowing rule, as pure logic: of `prints`, those made on `reader`,
    /// one per finger in libfprint's finger order, ours before fprintd's.
    nonisolated static func offered<Stored: OfferablePrint>(_ prints: [Stored], on reader: Readers.Identity) -> [Stored] {
        var byFinger: [FingerName: Stored] = [:]
        for stored in prints where stored.reader == reader {
            if let existing = byFinger[stored.finger], existing.source == .localauth { continue }
            byFinger[stored.finger] = stored
        }
        return FingerName.allCases.compactMap { byFinger[$0] }
    }

    /// Every valid print of `uid`, on every reader, from both sources.
    func allPrints(of uid: UInt32) -> [StoredPrint] {
        // One look at the account database per read (fprintd keys by name;
        // our prints must still belong to the account of their uid).
        let account = Users.name(of: uid)
        return ownPrints(of: uid, account: account) + fprintdPrints(of: uid, account: account)
    }

    /// Every enrolled record on `reader`, of every account, both sources:
    /// what owns the prints on a chip (Enrollment/EnrollerChips.swift).
    func everyPrint(on reader: Readers.Identity) -> [StoredPrint] {
        var uids = Set(Self.entries(root).compactMap { UInt32($0) })
        for name in Self.entries(fprintdRoot) { if let uid = Users.uid(of: name) { uids.insert(uid) } }
        return uids.sorted().flatMap { allPrints(of: $0) }.filter { $0.reader == reader }
    }

    /// The readers that have at least one print of `uid`.
    func readers(withPrintsOf uid: UInt32) -> Set<Readers.Identity> {
        Set(allPrints(of: uid).map(\.reader))
    }

    private func ownPrints(of uid: UInt32, account: String?) -> [StoredPrint] {
        var result: [StoredPrint] = []
        let user = userDirectory(uid)
        for driverName in Self.entries(user) {
            for deviceName in Self.entries("\(user)/\(driverName)") {
                let directory = "\(user)/\(driverName)/\(deviceName)"
                for name in Self.entries(directory) {
                    let path = "\(directory)/\(name)"
                    guard let finger = FingerName(rawValue: name) else {
                        // A write that never finished is never a print, and no
                        // problem to report. Asked only here, for names that are
                        // not a finger's: `contains` on a String is the regex
                        // engine's, 18,000 instructions, 9% of a preflight
                        // (BENCHMARKS.md, issue 25).
                        if !name.contains(".tmp-") { report(path, "is not a print file name; skipped") }
                        continue
                    }
                    guard let stored = cached(path, { loadOwn(path, uid: uid, finger: finger, driverName: driverName, deviceName: deviceName) })
                    else { continue }
                    // Checked on every read, not cached with the file: the
                    // account behind a uid can change while the file does not.
                    if let enrolledFor = stored.enrolledFor, enrolledFor != (account ?? String(uid)) {
                        report(path, "was enrolled for the account \(enrolledFor), "
                               + "but uid \(uid) is now \(account ?? "nobody's"); skipped")
                        continue
                    }
                    result.append(stored)
                }
            }
        }
        return result
    }

    private func loadOwn(_ path: String, uid: UInt32, finger: FingerName, driverName: String,
                         deviceName: String) -> StoredPrint? {
        guard let bytes = read(path, store: "")?.bytes else { return nil }
        let file: PrintFile
        do {
            file = try PrintFile.decode(bytes)
        } catch {
            report(path, "is corrupt: \(error); skipped")
            return nil
        }
        guard file.uid == uid else {
            report(path, "is foreign: it belongs to uid \(file.uid), not \(uid); skipped")
            return nil
        }
        guard file.finger == finger, Escape.component(file.driver) == driverName,
              Escape.component(file.deviceID) == deviceName else {
            report(path, "is foreign: it says \(file.finger.rawValue) on \(file.driver)/\(file.deviceID); skipped")
            return nil
        }
        guard let print = deserialize(file.print, path, store: "") else { return nil }
        guard Self.print(print, isOf: finger, on: file.driver, file.deviceID) else {
            report(path, "is foreign: the print inside was made for another reader or finger; skipped")
            return nil
        }
        let username = PrintCodec.username(of: print)
        return StoredPrint(finger: finger, print: print, bytes: file.print, source: .localauth,
                           reader: Readers.Identity(driver: file.driver, deviceID: file.deviceID),
                           created: file.created, path: path, stamp: Array(("localauth " + file.id).utf8),
                           enrolledFor: username?.isEmpty == false ? username : nil)
    }

    /// fprintd's prints of the user `uid` is called now (fprintd keys by name).
    private func fprintdPrints(of uid: UInt32, account: String?) -> [StoredPrint] {
        guard let name = account, Escape.component(name) == name else { return [] }
        var result: [StoredPrint] = []
        let user = "\(fprintdRoot)/\(name)"
        for driver in Self.entries(user) {
            for deviceID in Self.entries("\(user)/\(driver)") {
                let directory = "\(user)/\(driver)/\(deviceID)"
                for file in Self.entries(directory) {
                    // fprintd itself only considers one hex digit naming a finger (1…a).
                    guard file.utf8.count == 1, let digit = Hex.digit(file.utf8.first!),
                          let finger = FingerName(fpFinger: UInt32(digit)) else { continue }
                    let path = "\(directory)/\(file)"
                    if let stored = cached(path, { loadFprintd(path, user: name, finger: finger, driver: driver, deviceID: deviceID) }) {
                        result.append(stored)
                    }
                }
            }
        }
        return result
    }

    private func loadFprintd(_ path: String, user: String, finger: FingerName, driver: String,
                             deviceID: String) -> StoredPrint? {
        let store = "(fprintd's store) "
        guard let contents = read(path, store: store), let print = deserialize(contents.bytes, path, store: store) else { return nil }
        // fprintd's own checks on load: the print must say what its path says.
        guard Self.print(print, isOf: finger, on: driver, deviceID), PrintCodec.username(of: print).map({ $0 == user }) ?? true else {
            report(path, "\(store)is foreign: the print was made for another user, finger or reader; skipped")
            return nil
        }
        var stamp = Array("fprintd \(contents.modified)\n".utf8)
        stamp += Digest.sha256(contents.bytes)
        return StoredPrint(finger: finger, print: print, bytes: contents.bytes, source: .fprintd,
                           reader: Readers.Identity(driver: driver, deviceID: deviceID),
                           created: PrintCodec.enrollDate(of: print), path: path, stamp: stamp)
    }

    // What loading a file of either store starts with. `store` says whose
    // in the log: "" ours, "(fprintd's store) " fprintd's.

    /// The file's bytes, or nil once the problem is reported.
    private func read(_ path: String, store: String) -> SafeFile.Contents? {
        switch SafeFile.read(path, maximumSize: PrintFile.maximumSize) {
        case .success(let contents): return contents
        case .failure(let problem):
            report(path, "\(store)\(problem); skipped")
            return nil
        }
    }

    /// The libfprint print in `bytes`, or nil once it is reported as corrupt.
    private func deserialize(_ bytes: [UInt8], _ path: String, store: String) -> GObjectRef? {
        do {
            return try PrintCodec.deserialize(bytes)
        } catch {
            report(path, "\(store)is corrupt: libfprint cannot read the print (\(error)); skipped")
            return nil
        }
    }

    /// Whether the print says it was made on this reader for this finger
    /// (what its path, and our file's header, say it is).
    private static func print(_ print: GObjectRef, isOf finger: FingerName, on driver: String, _ deviceID: String) -> Bool {
        PrintCodec.driver(of: print) == driver && PrintCodec.deviceID(of: print) == deviceID
            && PrintCodec.finger(of: print) == finger.fpFinger
    }

    /// Logs a problem with `path` once for each version of the file.
    private func report(_ path: String, _ problem: String) {
        var info = stat()
        let key = lstat(path, &info) == 0
            ? "\(path)|\(info.st_ino)|\(info.st_size)|\(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec)" : path
        guard reported.insert(key).inserted else { return }
        Log.error("print file \(path) \(problem)")
    }

    /// Names in a directory (sorted); none if it cannot be read.
    private static func entries(_ directory: String) -> [String] {
        (Posix.listDirectory(directory) ?? []).sorted()
    }

    // MARK: Writing (our store only)

    /// Stores a freshly enrolled print, replacing the finger's previous print
    /// on that reader atomically: a crash leaves the old file or the new one.
    @discardableResult
    func save(_ print: GObjectRef, finger: FingerName, uid: UInt32, reader: Readers.Identity) throws -> PrintFile {
        let file = PrintFile(id: PrintFile.newID(), uid: uid, finger: finger, driver: reader.driver,
                             deviceID: reader.deviceID, created: Int64(time(nil)),
                             print: try PrintCodec.serialize(print))
        if fprintdLayout {
            try saveInFprintdLayout(bytes: file.print, finger: finger, username: Users.name(of: uid) ?? String(uid),
                                    uid: uid, reader: reader)
            return file
        }
        let directory = readerDirectory(uid, reader)
        try AtomicFile.makeDirectories(directory, below: root)
        removeTemporaries(in: directory)
        try AtomicFile.write(file.encode(), to: "\(directory)/\(finger.rawValue)")
        return file
    }

    /// Deletes our prints of `finger` for `uid` on every reader; false if there were none.
    func delete(_ finger: FingerName, uid: UInt32) throws -> Bool {
        var deleted = fprintdLayout ? try deleteFromFprintdLayout(finger, uid: uid) : false
        let user = userDirectory(uid)
        for driver in Self.entries(user) {
            for device in Self.entries("\(user)/\(driver)") {
                let path = "\(user)/\(driver)/\(device)/\(finger.rawValue)"
                var info = stat()
                guard lstat(path, &info) == 0 else { continue }
                try AtomicFile.remove(path)
                deleted = true
            }
        }
        return deleted
    }

    /// Deletes all our prints of `uid`; returns how many files went.
    func deleteAll(uid: UInt32) throws -> Int {
        var count = 0
        for finger in FingerName.allCases where try delete(finger, uid: uid) { count += 1 }
        return count
    }

    /// Removes what interrupted writes left behind (`<finger>.tmp-<pid>`);
    /// they were never prints. Run at start and before each write.
    func removeTemporaries(in directory: String? = nil) {
        let directories: [String]
        if let directory {
            directories = [directory]
        } else {
            directories = Self.entries(root).flatMap { uid in
                Self.entries("\(root)/\(uid)").flatMap { driver in
                    Self.entries("\(root)/\(uid)/\(driver)").map { "\(root)/\(uid)/\(driver)/\($0)" }
                }
            }
        }
        for directory in directories {
            for name in Self.entries(directory) where name.contains(".tmp-") {
                if unlink("\(directory)/\(name)") == 0 {
                    Log.info("removed \(directory)/\(name), left by an interrupted write")
                }
            }
        }
    }
}

/// Reads a file only if it is safe to trust: a regular file (no symlink),
/// owned by root (or the service's own user), not writable by group or others,
/// and not larger than expected.
enum SafeFile {
    struct Contents {
        let bytes: [UInt8]
        /// mtime, as "seconds.nanoseconds".
        let modified: String
    }

    struct Problem: Error, CustomStringConvertible {
        let description: String
    }

    static func read(_ path: String, maximumSize: Int) -> Result<Contents, Problem> {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            return .failure(Problem(description: errno == ELOOP ? "is a symbolic link"
                                    : "cannot be opened: \(String(cString: strerror(errno)))"))
        }
        defer { close(fd) }
        guard let info = FileStatus(descriptor: fd) else { return .failure(Problem(description: "cannot be examined")) }
        guard info.isRegularFile else { return .failure(Problem(description: "is not a regular file")) }
        guard info.owner == 0 || info.owner == geteuid() else {
            return .failure(Problem(description: "is owned by uid \(info.owner), not root"))
        }
        guard !info.grants(0o022) else {
            return .failure(Problem(description: "is writable by group or others (mode \(info.modeText))"))
        }
        guard info.size <= maximumSize else { return .failure(Problem(description: "is larger than \(maximumSize) bytes")) }
        var bytes = [UInt8](repeating: 0, count: info.size)
        var filled = 0
        while filled < bytes.count {
            let count = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + filled, $0.count - filled) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            filled += count
        }
        guard filled == bytes.count else { return .failure(Problem(description: "could not be read completely")) }
        return .success(Contents(bytes: bytes, modified: "\(info.modified.seconds).\(info.modified.nanoseconds)"))
    }
}

/// What the shadowing rule looks at in a print (so that it can be tested
/// without libfprint's print objects).
protocol OfferablePrint {
    var finger: FingerName { get }
    var source: PrintSource { get }
    var reader: Readers.Identity { get }
}
