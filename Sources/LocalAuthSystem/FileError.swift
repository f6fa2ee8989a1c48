import Glibc

/// A file operation that failed, with the errno that stopped it.
package struct FileError: Error, Equatable, Sendable, CustomStringConvertible {
    package let operation: String
    package let path: String
    package let errno: Int32

    package init(_ operation: String, _ path: String, errno: Int32 = Glibc.errno) {
        self.operation = operation
        self.path = path
        self.errno = errno
    }

    package var description: String { "\(operation) \(path): \(String(cString: strerror(errno)))" }
}

/// What `fstat` says about an open file that a permission check needs.
package struct FileStatus {
    package let isRegularFile: Bool
    package let owner: UInt32
    /// The permission bits (`st_mode & 0o7777`).
    package let permissions: UInt32
    package let size: Int
    /// The modification time, seconds and nanoseconds.
    package let modified: (seconds: Int, nanoseconds: Int)

    /// nil if `fstat` fails (errno says why).
    package init?(descriptor fd: Int32) {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        isRegularFile = info.st_mode & S_IFMT == S_IFREG
        owner = UInt32(info.st_uid)
        permissions = UInt32(info.st_mode & 0o7777)
        size = Int(info.st_size)
        modified = (info.st_mtim.tv_sec, info.st_mtim.tv_nsec)
    }

    /// Whether any of `mask`'s permission bits are set (0o077: group or
    /// others may do anything; 0o022: group or others may write).
    package func grants(_ mask: UInt32) -> Bool { permissions & mask != 0 }

    /// The permission bits in octal, as `ls` and `chmod` spell them.
    package var modeText: String { String(permissions, radix: 8) }
}
