import Glibc

/// Debian's swtpm, a real software TPM 2.0 on two TCP ports of 127.0.0.1
/// (commands on `port`, control on `port` + 1), started already initialised
/// (not-need-init, startup-clear) over a state directory. One way to start it,
/// for the TPM tests and the benchmark's TPM row. Stopping is the caller's
/// (`Spawn.terminate(pid)`, or SIGKILL to make the TPM vanish).
public struct Swtpm: Sendable {
    public static let program = "/usr/bin/swtpm"
    public let pid: pid_t
    public let port: UInt16
    /// The tpm2-tss TCTI configuration that reaches it.
    public var tcti: String { "swtpm:host=127.0.0.1,port=\(port)" }

    /// Starts swtpm over `stateDirectory` on a free port pair, and returns once
    /// both its ports accept. A port lost to a race makes swtpm exit; then
    /// another pair is tried, five times in all.
    public static func start(stateDirectory: String) throws -> Swtpm {
        guard access(program, X_OK) == 0 else {
            throw RigError("\(program) is not installed; run scripts/install-deps.sh")
        }
        let log = stateDirectory + "/swtpm.log"
        for _ in 0..<5 {
            guard let port = freePortPair() else { continue }
            let pid = try Spawn.start(program, [
                "socket", "--tpm2", "--tpmstate", "dir=\(stateDirectory)",
                "--server", "type=tcp,port=\(port),bindaddr=127.0.0.1",
                "--ctrl", "type=tcp,port=\(port + 1),bindaddr=127.0.0.1",
                "--flags", "not-need-init,startup-clear",
            ], stdoutPath: log, stderrPath: log)
            for _ in 0..<250 {
                if Spawn.wait(pid, timeout: 0) != nil { break }
                // Both: swtpm listens on the control port before the command
                // port, and a loaded machine can run the TPM test in between.
                if accepts(port: port + 1), accepts(port: port) { return Swtpm(pid: pid, port: port) }
                usleep(20_000)
            }
            Spawn.terminate(pid, grace: 2)
        }
        throw RigError("swtpm did not start; see \(log)")
    }

    /// A port P with P and P + 1 free now (the kernel picks P; P + 1 is checked).
    static func freePortPair() -> UInt16? {
        for _ in 0..<50 {
            guard let port = bind(port: 0), port < 65000, bind(port: port + 1) != nil else { continue }
            return port
        }
        return nil
    }

    private static func loopback(_ port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    /// Binds a TCP socket on 127.0.0.1 and closes it; the bound port, or nil.
    private static func bind(port: UInt16) -> UInt16? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var address = loopback(port)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        return bound ? UInt16(bigEndian: address.sin_port) : nil
    }

    private static func accepts(port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = loopback(port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}
