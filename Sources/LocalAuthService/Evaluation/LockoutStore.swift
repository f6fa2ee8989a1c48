import Glibc
import LocalAuthShared

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
    func recordFailure(_ uid: UInt32) throws(FileError) -> Bool {
        let count = failures(of: uid) + 1
        cache[uid] = count
        try store(count, for: uid)
        return count >= LockoutStore.limit
    }

    /// Back to zero; if that cannot be written, the old count stays.
    func reset(_ uid: UInt32) throws(FileError) {
        guard failures(of: uid) != 0 else { return }
        try store(0, for: uid)
        cache[uid] = 0
    }

    private func store(_ count: Int, for uid: UInt32) throws(FileError) {
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
