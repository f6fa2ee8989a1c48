/// Which process a call came from, as the caller record pinned it when the
/// connection first called (CallerRecord.Process): a pid and its start time,
/// so a pid reused by another process is another process.
struct CallerProcess: Hashable, Sendable {
    let pid: UInt32
    let startTime: UInt64

    /// The caller's process as its record pinned it; nil: it could not be
    /// pinned (no start time read), and no ticket is ever recorded for or
    /// matched to such a caller.
    @ServiceActor
    init?(_ caller: CallerRecord) {
        guard let process = caller.process, let startTime = process.startTime else { return nil }
        self.init(pid: process.pid, startTime: startTime)
    }

    init(pid: UInt32, startTime: UInt64) {
        self.pid = pid
        self.startTime = startTime
    }
}

/// The one-time tickets of the fingerprint release (docs/KEYRING.md): a
/// match the service itself saw for `uid`, from a root PAM host's process,
/// bound to the transaction's nonce (pam_localauth's VerifyUser) or to none
/// (a match through the service's own fprintd VerifyStart), good for one
/// `ReleaseLoginSecret` from that same process within `lifetime`.
///
/// Pure bookkeeping on instants (no timers): what expired is decided when
/// a ticket is asked for.
struct LoginSecretTickets {
    static let lifetime: Duration = .seconds(10)
    static let perUser = 4
    static let inTotal = 256

    struct Ticket: Equatable {
        let uid: UInt32
        let process: CallerProcess
        let nonce: [UInt8]
        let expires: ContinuousClock.Instant
    }

    private(set) var tickets: [Ticket] = []

    /// Records a match. The oldest of that uid goes past `perUser`, the
    /// oldest of all past `inTotal`: a ticket is worth one login, never a store.
    mutating func record(uid: UInt32, process: CallerProcess, nonce: [UInt8], now: ContinuousClock.Instant) {
        tickets.removeAll { $0.expires <= now }
        tickets.append(Ticket(uid: uid, process: process, nonce: nonce, expires: now + Self.lifetime))
        while tickets.filter({ $0.uid == uid }).count > Self.perUser, let oldest = tickets.firstIndex(where: { $0.uid == uid }) {
            tickets.remove(at: oldest)
        }
        if tickets.count > Self.inTotal { tickets.removeFirst(tickets.count - Self.inTotal) }
    }

    /// Why a release is refused, for the log (the caller hears NotAuthorized only).
    enum Refusal: Equatable {
        case noMatch, otherUser, otherNonce, expired
    }

    /// Takes the ticket for a release of `uid`'s secret by `process` with
    /// `nonce`. Every ticket of that process goes with the attempt, whatever
    /// its outcome: one attempt per match, so a wrong guess costs the match.
    mutating func take(uid: UInt32, process: CallerProcess, nonce: [UInt8], now: ContinuousClock.Instant) -> Refusal? {
        let mine = tickets.filter { $0.process == process }
        tickets.removeAll { $0.process == process || $0.expires <= now }
        guard !mine.isEmpty else { return .noMatch }
        let forUser = mine.filter { $0.uid == uid }
        guard !forUser.isEmpty else { return .otherUser }
        let withNonce = forUser.filter { $0.nonce == nonce }
        guard !withNonce.isEmpty else { return .otherNonce }
        guard withNonce.contains(where: { $0.expires > now }) else { return .expired }
        return nil
    }
}

/// The service keys for ResealLoginSecret: handed out with a password wrap
/// whose machine wrap no longer opens, good for one call from the same
/// process for the same user within `lifetime`.
struct LoginSecretResealKeys {
    static let lifetime: Duration = .seconds(60)
    static let inTotal = 64

    struct Entry {
        let uid: UInt32
        let process: CallerProcess
        let key: ResealKey
        let expires: ContinuousClock.Instant
    }

    private(set) var entries: [Entry] = []

    mutating func add(_ key: ResealKey, uid: UInt32, process: CallerProcess, now: ContinuousClock.Instant) {
        entries.removeAll { $0.expires <= now || ($0.uid == uid && $0.process == process) }
        entries.append(Entry(uid: uid, process: process, key: key, expires: now + Self.lifetime))
        if entries.count > Self.inTotal { entries.removeFirst(entries.count - Self.inTotal) }
    }

    mutating func take(uid: UInt32, process: CallerProcess, now: ContinuousClock.Instant) -> ResealKey? {
        defer { entries.removeAll { $0.expires <= now || ($0.uid == uid && $0.process == process) } }
        return entries.first { $0.uid == uid && $0.process == process && $0.expires > now }?.key
    }
}
