import Glibc

/// The file operations rights need, from libc (the service avoids Foundation
/// to stay small: see Posix.swift in LocalAuthService).
///
/// The write is the same crash-safe sequence as the service's `AtomicFile`
/// (temporary file, fsync, rename over the old one, fsync of the directory),
/// so a crash or kill -9 at any moment leaves the old right or the new one.
/// It is repeated here rather than shared because LocalAuthService will
/// depend on this module, not the other way round; moving both into one
/// small module is a later clean-up.
enum Files {
    static func failure(_ operation: String, _ path: String, _ code: Int32 = errno) -> RightsError {
        RightsError(.io, "\(operation) \(path): \(String(cString: strerror(code)))")
    }

    static func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o600) throws(RightsError) {
        let temporary = path + ".tmp-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode)
        guard fd >= 0 else { throw failure("create", temporary) }
        fchmod(fd, mode)
        do throws(RightsError) {
            try writeAll(fd, bytes, temporary)
            guard fsync(fd) == 0 else { throw failure("fsync", temporary) }
        } catch {
            close(fd)
            unlink(temporary)
            throw error
        }
        close(fd)
        guard rename(temporary, path) == 0 else {
            let saved = errno
            unlink(temporary)
            throw failure("rename", path, saved)
        }
        try syncDirectory(directory(of: path))
    }

    /// Creates `path` with `bytes` only if nothing is there yet: the bytes are
    /// written and synced under a temporary name, then hard-linked into place
    /// (link never replaces). Returns false if another writer was first.
    static func createExclusively(_ bytes: [UInt8], at path: String, mode: mode_t = 0o600) throws(RightsError) -> Bool {
        let temporary = path + ".new-\(getpid())"
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode)
        guard fd >= 0 else { throw failure("create", temporary) }
        defer { unlink(temporary) }
        fchmod(fd, mode)
        do throws(RightsError) {
            try writeAll(fd, bytes, temporary)
            guard fsync(fd) == 0 else { throw failure("fsync", temporary) }
        } catch {
            close(fd)
            throw error
        }
        close(fd)
        guard link(temporary, path) == 0 else {
            if errno == EEXIST { return false }
            throw failure("link", path)
        }
        try syncDirectory(directory(of: path))
        return true
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8], _ path: String) throws(RightsError) {
        var written = 0
        while written < bytes.count {
            let result = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, bytes.count - written) }
            if result < 0 {
                if errno == EINTR { continue }
                throw failure("write", path)
            }
            written += result
        }
    }

    /// Removes `path`; false if there was none.
    static func remove(_ path: String) throws(RightsError) -> Bool {
        guard unlink(path) == 0 else {
            if errno == ENOENT { return false }
            throw failure("remove", path)
        }
        try syncDirectory(directory(of: path))
        return true
    }

    static func syncDirectory(_ path: String) throws(RightsError) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw failure("open", path) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw failure("fsync", path) }
    }

    /// Creates each missing directory from `base` (which must exist) down to
    /// `path` with `mode`, durably (the parent is synced), and tightens the
    /// mode of existing ones. A symlink or a file in the way is an error.
    static func makeDirectories(_ path: String, below base: String, mode: mode_t = 0o700) throws(RightsError) {
        precondition(path == base || path.hasPrefix(base + "/"), "\(path) is not below \(base)")
        var current = base
        var rest = path.dropFirst(base.count).split(separator: "/").map(String.init)
        while true {
            if mkdir(current, mode) == 0 {
                try syncDirectory(directory(of: current))
            } else if errno != EEXIST {
                throw failure("mkdir", current)
            }
            var info = stat()
            guard lstat(current, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { throw failure("mkdir", current, ENOTDIR) }
            if info.st_mode & 0o7777 != mode, chmod(current, mode) != 0 { throw failure("chmod", current) }
            guard !rest.isEmpty else { return }
            current += "/" + rest.removeFirst()
        }
    }

    enum ReadResult {
        case bytes([UInt8])
        case missing
        case tooLarge(Int)
    }

    /// A regular file's bytes, read through one descriptor (no symlinks), or
    /// `.tooLarge` without reading it when it is bigger than `limit`.
    static func read(_ path: String, limit: Int) throws(RightsError) -> ReadResult {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)   // a planted FIFO must not block the service
        guard fd >= 0 else {
            if errno == ENOENT { return .missing }
            throw failure("open", path)
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw failure("stat", path) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw RightsError(.io, "\(path) is not a regular file") }
        guard Int(info.st_size) <= limit else { return .tooLarge(Int(info.st_size)) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw failure("read", path)
            }
            if count == 0 { return .bytes(bytes) }
            bytes += chunk[0..<count]
            // The file grew after fstat: still bounded.
            if bytes.count > limit { return .tooLarge(bytes.count) }
        }
    }

    /// The names in a directory (without . and ..); nil if it does not exist.
    static func list(_ path: String) throws(RightsError) -> [String]? {
        guard let directory = opendir(path) else {
            if errno == ENOENT { return nil }
            throw failure("opendir", path)
        }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    static func directory(of path: String) -> String {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return "." }
        let head = String(path[..<slash])
        return head.isEmpty ? "/" : head
    }
}
