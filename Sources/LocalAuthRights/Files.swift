import Glibc
import LocalAuthSystem

/// The file operations of rights and keys: LocalAuthSystem's, shared with the
/// service (crash-safe writes, bounded reads without symlinks), with their
/// failures as `RightsError(.io)`.
enum Files {
    static func failure(_ operation: String, _ path: String, _ code: Int32 = errno) -> RightsError {
        RightsError(FileError(operation, path, errno: code))
    }

    static func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o600) throws(RightsError) {
        try io { () throws(FileError) in try AtomicFile.write(bytes, to: path, mode: mode) }
    }

    /// Creates `path` with `bytes` only if nothing is there yet; false if another writer was first.
    static func createExclusively(_ bytes: [UInt8], at path: String, mode: mode_t = 0o600) throws(RightsError) -> Bool {
        try io { () throws(FileError) in try AtomicFile.createExclusively(bytes, at: path, mode: mode) }
    }

    /// Removes `path`; false if there was none.
    static func remove(_ path: String) throws(RightsError) -> Bool {
        try io { () throws(FileError) in try AtomicFile.remove(path) }
    }

    static func syncDirectory(_ path: String) throws(RightsError) {
        try io { () throws(FileError) in try AtomicFile.syncDirectory(path) }
    }

    static func makeDirectories(_ path: String, below base: String, mode: mode_t = 0o700) throws(RightsError) {
        try io { () throws(FileError) in try AtomicFile.makeDirectories(path, below: base, mode: mode) }
    }

    enum ReadResult {
        case bytes([UInt8])
        case missing
        case tooLarge(Int)
    }

    /// A regular file's bytes (no symlinks), or `.tooLarge` unread past `limit`.
    static func read(_ path: String, limit: Int) throws(RightsError) -> ReadResult {
        switch try io({ () throws(FileError) in try Posix.readRegularFile(path, limit: limit) }) {
        case .bytes(let bytes): .bytes(bytes)
        case .missing: .missing
        case .tooLarge(let size): .tooLarge(size)
        case .notRegularFile: throw RightsError(.io, "\(path) is not a regular file")
        }
    }

    /// The names in a directory (without . and ..); nil if it does not exist.
    static func list(_ path: String) throws(RightsError) -> [String]? {
        try io { () throws(FileError) in try Posix.list(path) }
    }

    static func directory(of path: String) -> String { Posix.directory(of: path) }

    private static func io<T>(_ body: () throws(FileError) -> T) throws(RightsError) -> T {
        do { return try body() } catch { throw RightsError(error) }
    }
}

extension RightsError {
    init(_ error: FileError) { self.init(.io, error.description) }
}
