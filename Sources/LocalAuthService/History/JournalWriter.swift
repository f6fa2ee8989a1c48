import Glibc
import LocalAuthSystem

/// Sends history entries to journald over its native socket (a datagram of
/// fields: HistoryEntry.datagram), so each field is a field of the journal
/// that `journalctl MESSAGE_ID=…` and `localauthctl history` match on. No
/// libsystemd: the protocol is a few lines, and a service built without it
/// has nothing new to link or to load. Where the socket is absent or refuses
/// (the rig has no journald; a service started by hand outside systemd), the
/// entry is one line on stderr with the same fields instead, so it is never
/// lost silently and the rig can read it.
@ServiceActor
final class JournalWriter {
    /// journald's native socket; a test gives its own.
    let socketPath: String
    private var socket: Int32 = -1
    /// Whether the fallback was announced (once: every entry then goes to stderr).
    private var fellBack = false

    static let journaldSocket = "/run/systemd/journal/socket"

    init(socketPath: String = JournalWriter.journaldSocket) {
        self.socketPath = socketPath
        // Opened once, at start: the service's descriptors do not grow at its
        // first decision (the reliability suite counts them around its rows).
        openSocket()
    }

    private func openSocket() {
        socket = Glibc.socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    }

    deinit {
        if socket >= 0 { close(socket) }
    }

    /// Writes the entry to the journal, else to stderr. Never blocks the
    /// loop: a full journald queue drops the datagram (MSG_DONTWAIT) and the
    /// entry goes to stderr, which journald's stream keeps in order.
    func write(_ entry: HistoryEntry) {
        if send(entry.datagram) { return }
        if !fellBack {
            fellBack = true
            Log.notice("the history of approvals goes to stderr: journald's socket \(socketPath) did not take it")
        }
        Posix.writeError(entry.stderrLine + "\n")
    }

    /// One datagram to the socket; false if there is none or it refused.
    func send(_ bytes: [UInt8]) -> Bool {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let path = Array(socketPath.utf8)
        guard path.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path) }
        if socket < 0 {
            openSocket()
            guard socket >= 0 else { return false }
        }
        let sent = bytes.withUnsafeBytes { body in
            withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(
                        socket, body.baseAddress, body.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT), $0,
                        socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
        }
        return sent == bytes.count
    }
}
