import Glibc

/// libfprint's virtual sensor (`FP_VIRTUAL_DEVICE=<socket>`): one command per
/// connection, the raw bytes with no newline. The socket only listens while
/// the daemon has the device open, so connecting is retried.
public struct VirtualSensor: Sendable {
    public let path: String

    public init(path: String) { self.path = path }

    /// Sends `command`. With `acknowledged`, waits until the driver has
    /// handled it (it closes the connection then), so that back-to-back
    /// commands are not dropped.
    public func send(_ command: String, acknowledged: Bool = true, connectTimeout: Double = 5) throws {
        let fd = try connect(timeout: connectTimeout)
        defer { close(fd) }
        var bytes = Array(command.utf8)
        var written = 0
        while written < bytes.count {
            // MSG_NOSIGNAL: a daemon killed meanwhile must not SIGPIPE us.
            let result = bytes.withUnsafeMutableBytes { Glibc.send(fd, $0.baseAddress! + written, $0.count - written, Int32(MSG_NOSIGNAL)) }
            if result < 0 {
                if errno == EINTR { continue }
                throw RigError("virtual sensor \(path): write: \(String(cString: strerror(errno)))")
            }
            written += result
        }
        guard acknowledged else { return }
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        var buffer = [UInt8](repeating: 0, count: 256)
        let deadline = Clock.nanoseconds() + 5_000_000_000
        while Clock.nanoseconds() < deadline {
            guard poll(&poller, 1, 100) >= 0 || errno == EINTR else { break }
            if poller.revents == 0 { continue }
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if count == 0 { return }   // the driver closed: handled
            if count < 0 && errno != EINTR && errno != EAGAIN { return }   // reset: gone, nothing to wait for
        }
        throw RigError("virtual sensor \(path): no acknowledgement of \(command)")
    }

    private func connect(timeout: Double) throws -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let pathBytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard pathBytes.count < capacity else { throw RigError("socket path too long: \(path)") }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: pathBytes)
            raw[pathBytes.count] = 0
        }
        let deadline = Clock.nanoseconds() + UInt64(timeout * 1e9)
        var lastError: Int32 = 0
        repeat {
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { throw RigError("socket: \(String(cString: strerror(errno)))") }
            let result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            if result == 0 { return fd }
            lastError = errno
            close(fd)
            usleep(2_000)
        } while Clock.nanoseconds() < deadline
        throw RigError("virtual sensor \(path) not listening: \(String(cString: strerror(lastError)))")
    }
}
