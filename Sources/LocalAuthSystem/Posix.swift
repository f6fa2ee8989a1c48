import Glibc

/// The few file and process services the daemon and the rights store need,
/// straight from libc.
///
/// Why not Foundation: it loads ICU and its own runtime, which more than
/// doubles the daemon's resident memory (BENCHMARKS.md, "Measurements
/// behind the code"). A system service that idles on every desktop should cost no
/// more than fprintd, so the service, the rights store and DBusCore use libc only.
package enum Posix {
    /// The whole file, or nil if it cannot be read.
    package static func readFile(_ path: String) -> [UInt8]? {
        try? readFileOrErrno(path).get()
    }

    /// A file's bytes, or the errno that stopped the read: a caller that must
    /// fail closed tells "no such file" from every other failure.
    package static func readFileOrErrno(_ path: String) -> Result<[UInt8], Errno> {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return .failure(Errno(errno)) }
        defer { close(fd) }
        return readToEnd(fd)
    }

    /// What is left to read from `fd`, stopping once more than `limit` bytes came.
    private static func readToEnd(_ fd: Int32, limit: Int = .max) -> Result<[UInt8], Errno> {
        // A buffer on the stack, not zero-filled: every call reads its
        // caller's /proc/PID/stat with this, and a fresh 16 KiB array per read
        // was a tenth of a preflight's instructions (BENCHMARKS.md).
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 16_384) { chunk in
            var bytes: [UInt8] = []
            while bytes.count <= limit {
                let count = read(fd, chunk.baseAddress, chunk.count)
                if count < 0 {
                    if errno == EINTR { continue }
                    return .failure(Errno(errno))
                }
                if count == 0 { break }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: chunk[0..<count]))
            }
            return .success(bytes)
        }
    }

    /// Where a symbolic link points, or nil.
    package static func readLink(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink(path, &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// An errno value as an Error, with its text.
    package struct Errno: Error, Equatable, CustomStringConvertible {
        package let code: Int32
        package init(_ code: Int32) { self.code = code }
        package var description: String { String(cString: strerror(code)) }
    }

    /// The names in a directory (without . and ..), or nil if it cannot be read.
    package static func listDirectory(_ path: String) -> [String]? {
        (try? list(path)) ?? nil
    }

    /// The names in a directory (without . and ..); nil if it does not
    /// exist, an error for any other failure.
    package static func list(_ path: String) throws(FileError) -> [String]? {
        guard let directory = opendir(path) else {
            if errno == ENOENT { return nil }
            throw FileError("opendir", path)
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

    package enum BoundedRead {
        case bytes([UInt8])
        case missing
        case notRegularFile
        case tooLarge(Int)
    }

    /// A regular file's bytes, read through one descriptor (no symlinks, and
    /// a planted FIFO does not block), or `.tooLarge` without reading it when
    /// it is bigger than `limit`.
    package static func readRegularFile(_ path: String, limit: Int) throws(FileError) -> BoundedRead {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else {
            if errno == ENOENT { return .missing }
            throw FileError("open", path)
        }
        defer { close(fd) }
        guard let status = FileStatus(descriptor: fd) else { throw FileError("stat", path) }
        guard status.isRegularFile else { return .notRegularFile }
        guard status.size <= limit else { return .tooLarge(status.size) }
        switch readToEnd(fd, limit: limit) {
        case .failure(let error): throw FileError("read", path, errno: error.code)
        // The file grew after fstat: still bounded.
        case .success(let bytes) where bytes.count > limit: return .tooLarge(bytes.count)
        case .success(let bytes): return .bytes(bytes)
        }
    }

    package static func environment(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }

    /// Writes all of `text` to stderr.
    package static func writeError(_ text: String) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                return
            }
            bytes = bytes.dropFirst(written)
        }
    }

    /// The directory part of a path (`/a/b` → `/a`).
    package static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// 128 random bits as hex: a request id nobody else can guess.
    package static func randomID() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<4).map { _ in String(UInt32.random(in: .min ... .max, using: &generator), radix: 16) }.joined(separator: "-")
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces, tabs and newlines.
    package var trimmed: String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(self[first...last])
    }
}

/// What identifies one version of a file without reading it.
package struct FileVersion: Equatable, Sendable {
    package let device: UInt64, inode: UInt64, size: Int64, mode: UInt32, owner: UInt32
    package let modified: Int, modifiedNanos: Int, changed: Int, changedNanos: Int

    package init?(_ path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        mode = UInt32(info.st_mode)
        owner = UInt32(info.st_uid)
        modified = info.st_mtim.tv_sec
        modifiedNanos = info.st_mtim.tv_nsec
        changed = info.st_ctim.tv_sec
        changedNanos = info.st_ctim.tv_nsec
    }
}
