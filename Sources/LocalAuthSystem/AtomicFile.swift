import Glibc

/// Crash-safe file writes, for every store (prints, lockout, rights, keys):
/// a temporary file, fsync, rename over the old file (or link for "only if
/// new"), fsync of the directory. A crash or kill -9 at any moment leaves the
/// old content or the new one, never a mix; a created directory is made
/// durable with its parent.
package enum AtomicFile {
    package static func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o600) throws(FileError) {
        let temporary = path + ".tmp-\(getpid())"
        let fd = try createTemporary(temporary, flags: O_TRUNC, mode: mode)
        do throws(FileError) {
            try writeAll(fd, bytes, temporary)
        } catch {
            close(fd)
            unlink(temporary)
            throw error
        }
        close(fd)
        guard rename(temporary, path) == 0 else {
            let saved = errno
            unlink(temporary)
            throw FileError("rename", path, errno: saved)
        }
        try syncDirectory(Posix.directory(of: path))
    }

    /// Creates `path` with `bytes` only if nothing is there yet: the bytes are
    /// written and synced under a temporary name, then hard-linked into place
    /// (link never replaces). Returns false if another writer was first.
    package static func createExclusively(_ bytes: [UInt8], at path: String, mode: mode_t = 0o600) throws(FileError) -> Bool {
        let temporary = path + ".new-\(getpid())"
        unlink(temporary)
        let fd = try createTemporary(temporary, flags: O_EXCL, mode: mode)
        defer { unlink(temporary) }
        do throws(FileError) {
            try writeAll(fd, bytes, temporary)
        } catch {
            close(fd)
            throw error
        }
        close(fd)
        guard link(temporary, path) == 0 else {
            if errno == EEXIST { return false }
            throw FileError("link", path)
        }
        try syncDirectory(Posix.directory(of: path))
        return true
    }

    /// Removes `path` durably; false if there was none.
    @discardableResult
    package static func remove(_ path: String) throws(FileError) -> Bool {
        guard unlink(path) == 0 else {
            if errno == ENOENT { return false }
            throw FileError("remove", path)
        }
        try syncDirectory(Posix.directory(of: path))
        return true
    }

    package static func syncDirectory(_ directory: String) throws(FileError) {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw FileError("open", directory) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw FileError("fsync", directory) }
    }

    /// Creates `path` (and parents) with `mode`, and tightens the mode of an existing one.
    package static func makeDirectory(_ path: String, mode: mode_t = 0o700) throws(FileError) {
        var current = ""
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            current += "/" + component
            if mkdir(current, mode) != 0 && errno != EEXIST { throw FileError("mkdir", current) }
        }
        guard chmod(path, mode) == 0 else { throw FileError("chmod", path) }
    }

    /// Creates each missing directory from `base` (whose parent exists) down
    /// to `path` with `mode`, durably (the parent is synced, so a file written
    /// into it cannot vanish with its directory after a crash), and tightens
    /// the mode of existing ones. A symlink or a file in the way is an error.
    package static func makeDirectories(_ path: String, below base: String, mode: mode_t = 0o700) throws(FileError) {
        precondition(path == base || path.hasPrefix(base + "/"), "\(path) is not below \(base)")
        var current = base
        var rest = path.dropFirst(base.count).split(separator: "/").map(String.init)
        while true {
            if mkdir(current, mode) == 0 {
                try syncDirectory(Posix.directory(of: current))
            } else if errno != EEXIST {
                throw FileError("mkdir", current)
            }
            var info = stat()
            guard lstat(current, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { throw FileError("mkdir", current, errno: ENOTDIR) }
            if info.st_mode & 0o7777 != mode, chmod(current, mode) != 0 { throw FileError("chmod", current) }
            guard !rest.isEmpty else { return }
            current += "/" + rest.removeFirst()
        }
    }

    private static func createTemporary(_ temporary: String, flags: Int32, mode: mode_t) throws(FileError) -> Int32 {
        let fd = open(temporary, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | flags, mode)
        guard fd >= 0 else { throw FileError("create", temporary) }
        fchmod(fd, mode)  // whatever the umask, and if a stale temporary existed
        return fd
    }

    /// All of `bytes`, then fsync.
    private static func writeAll(_ fd: Int32, _ bytes: [UInt8], _ path: String) throws(FileError) {
        var written = 0
        while written < bytes.count {
            let result = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, bytes.count - written) }
            if result < 0 {
                if errno == EINTR { continue }
                throw FileError("write", path)
            }
            written += result
        }
        guard fsync(fd) == 0 else { throw FileError("fsync", path) }
    }
}
