import Glibc
import LocalAuthShared

/// Crash-safe file writes: temporary file, fsync, rename over the old file,
/// fsync of the directory. A crash at any moment leaves the old content or
/// the new one, never a mix.
enum AtomicFile {
    struct Failure: Error, CustomStringConvertible {
        let path: String
        let operation: String
        let errno: Int32
        var description: String { "\(operation) \(path): \(String(cString: strerror(errno)))" }
    }

    static func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o600) throws(Failure) {
        let directory = Posix.directory(of: path)
        let temporary = path + ".tmp-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode)
        guard fd >= 0 else { throw Failure(path: temporary, operation: "create", errno: errno) }
        fchmod(fd, mode)   // whatever the umask, and if a stale temporary existed
        var written = 0
        while written < bytes.count {
            let result = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, bytes.count - written) }
            if result < 0 {
                if errno == EINTR { continue }
                let saved = errno
                close(fd)
                unlink(temporary)
                throw Failure(path: temporary, operation: "write", errno: saved)
            }
            written += result
        }
        guard fsync(fd) == 0 else {
            let saved = errno
            close(fd)
            unlink(temporary)
            throw Failure(path: temporary, operation: "fsync", errno: saved)
        }
        close(fd)
        guard rename(temporary, path) == 0 else {
            let saved = errno
            unlink(temporary)
            throw Failure(path: path, operation: "rename", errno: saved)
        }
        try syncDirectory(directory)
    }

    static func remove(_ path: String) throws(Failure) {
        guard unlink(path) == 0 || errno == ENOENT else { throw Failure(path: path, operation: "remove", errno: errno) }
        try syncDirectory(Posix.directory(of: path))
    }

    static func syncDirectory(_ directory: String) throws(Failure) {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(path: directory, operation: "open", errno: errno) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw Failure(path: directory, operation: "fsync", errno: errno) }
    }

    /// Creates `path` (and parents) with `mode`, and tightens the mode of an existing one.
    static func makeDirectory(_ path: String, mode: mode_t = 0o700) throws(Failure) {
        var current = ""
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            current += "/" + component
            if mkdir(current, mode) != 0 && errno != EEXIST {
                throw Failure(path: current, operation: "mkdir", errno: errno)
            }
        }
        guard chmod(path, mode) == 0 else { throw Failure(path: path, operation: "chmod", errno: errno) }
    }

    /// Creates `base` (whose parent exists) and every directory from there
    /// down to `path`, each with `mode` (tightened if it exists). A directory
    /// that is created is made durable: its parent is fsynced, so a print
    /// written into it cannot vanish with its directory after a crash.
    static func makeDirectories(_ path: String, below base: String, mode: mode_t = 0o700) throws(Failure) {
        precondition(path == base || path.hasPrefix(base + "/"), "\(path) is not below \(base)")
        var current = base
        var rest = path.dropFirst(base.count).split(separator: "/").map(String.init)
        while true {
            if mkdir(current, mode) == 0 {
                try syncDirectory(Posix.directory(of: current))
            } else if errno != EEXIST {
                throw Failure(path: current, operation: "mkdir", errno: errno)
            }
            var info = stat()
            guard lstat(current, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
                throw Failure(path: current, operation: "mkdir", errno: ENOTDIR)
            }
            if info.st_mode & 0o7777 != mode {
                guard chmod(current, mode) == 0 else { throw Failure(path: current, operation: "chmod", errno: errno) }
            }
            guard !rest.isEmpty else { return }
            current += "/" + rest.removeFirst()
        }
    }

}

/// The consecutive failed matches of each user, on disk so that a restart
/// does not reset a lockout. Five in a row lock biometrics (Apple's rule).
///
/// Fails closed both ways: a counter that cannot be read for any reason but
/// "no such file" (damaged, a directory, EIO, EMFILE) means locked out, and a
/// failure that cannot be written is an error for the evaluation, never a
/// count that lives only in memory until the next idle exit.
@ServiceActor
final class LockoutStore {
    static let limit = 5
    private let directory: String
    private var cache: [UInt32: Int] = [:]

    init(stateDirectory: String) {
        directory = stateDirectory + "/lockout"
    }

    func failures(of uid: UInt32) -> Int {
        if let cached = cache[uid] { return cached }
        let path = "\(directory)/\(uid)"
        switch Posix.readFileOrErrno(path) {
        case .success(let bytes):
            let text = String(decoding: bytes, as: UTF8.self).trimmed
            guard let parsed = Int(text), parsed >= 0 else {
                Log.error("lockout file \(path) is corrupt; treating user \(uid) as locked out")
                cache[uid] = LockoutStore.limit
                return LockoutStore.limit
            }
            cache[uid] = parsed
            return parsed
        case .failure(let error) where error.code == ENOENT:
            cache[uid] = 0
            return 0
        case .failure(let error):
            // Not cached: the next call reads again, so a passing fault
            // (EMFILE) ends with it, and a lasting one stays closed.
            Log.error("lockout file \(path) cannot be read (\(error)); treating user \(uid) as locked out")
            return LockoutStore.limit
        }
    }

    func isLockedOut(_ uid: UInt32) -> Bool { failures(of: uid) >= LockoutStore.limit }

    /// Records one failed match; returns true if the user is now locked out.
    /// Throws if the count could not be written (the count in memory still rises).
    func recordFailure(_ uid: UInt32) throws(AtomicFile.Failure) -> Bool {
        let count = failures(of: uid) + 1
        cache[uid] = count
        try store(count, for: uid)
        return count >= LockoutStore.limit
    }

    /// Back to zero; if that cannot be written, the old count stays.
    func reset(_ uid: UInt32) throws(AtomicFile.Failure) {
        guard failures(of: uid) != 0 else { return }
        try store(0, for: uid)
        cache[uid] = 0
    }

    private func store(_ count: Int, for uid: UInt32) throws(AtomicFile.Failure) {
        do {
            try AtomicFile.makeDirectory(directory)
            try AtomicFile.write(Array("\(count)\n".utf8), to: "\(directory)/\(uid)")
        } catch {
            Log.error("could not save the lockout count of uid \(uid): \(error)")
            throw error
        }
    }
}

/// The finger each user matched with last, kept across restarts (the service
/// exits when idle): a reader that can only verify compares a scan with one
/// print, and this one is tried first. `<state>/last-finger/<uid>` holds the
/// finger's name. A file that cannot be read or names no finger is ignored:
/// the order is a convenience, never a security decision.
@ServiceActor
final class LastFingerStore {
    private let directory: String
    private var cache: [UInt32: FingerName?] = [:]

    init(stateDirectory: String) {
        directory = stateDirectory + "/last-finger"
    }

    func finger(of uid: UInt32) -> FingerName? {
        if let cached = cache[uid] { return cached }
        let finger = Posix.readFile("\(directory)/\(uid)").flatMap { FingerName(rawValue: String(decoding: $0, as: UTF8.self).trimmed) }
        cache[uid] = .some(finger)
        return finger
    }

    func remember(_ matched: FingerName, for uid: UInt32) {
        guard finger(of: uid) != matched else { return }
        cache[uid] = .some(matched)
        do {
            try AtomicFile.makeDirectory(directory)
            try AtomicFile.write(Array("\(matched.rawValue)\n".utf8), to: "\(directory)/\(uid)")
        } catch {
            Log.warning("could not save the last matched finger of uid \(uid): \(error)")
        }
    }
}
