/// What logind says of the caller's session, and whether that caller can
/// be the person at the reader (docs/SECURITY.md, "At the reader"): pure
/// rules with unit tests (Tests/LocalAuthServiceTests/EnvironmentRulesTests.swift).
/// `Callers` judges it from logind (Callers/Presence.swift); the verify,
/// the evaluation, fprintd's claims and LAEnvironment's subscribers ask it.
/// A value every layer shares, so it sits with the service's shared types;
/// the error a caller gets for it is `Presence.refusal` (Callers/Presence.swift).
enum Presence: Equatable, Sendable {
    /// The active session on a seat, not remote: the person may be at the reader.
    case local
    /// A remote session (SSH, remote desktop).
    case remote
    /// No session, or a session without a seat (a cron job, a service).
    case noSeat
    /// A local session on a seat that is not the active one (another
    /// user switched in, or it is `closing` after logout): someone else
    /// is at the reader.
    case inactive
    /// logind is not on the bus: treated as local (docs/SECURITY.md).
    case unknown
    /// logind was on the bus and is not now (a restart, a crash): nobody
    /// can say who is at the reader, so nobody is (fails closed).
    case logindAway

    /// A session is at the reader only if it is local, has a seat, and is
    /// the active one: `Active` and `State` "active" ("online" is logged in
    /// but not in front, "closing" is a logged-out session's leftovers).
    static func of(remote: Bool, seat: String, active: Bool, state: String) -> Presence {
        if remote { return .remote }
        if seat.isEmpty { return .noSeat }
        return active && state == "active" ? .local : .inactive
    }
}
