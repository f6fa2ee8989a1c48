import LocalAuthShared

/// Whether each account has a usable password (`Accounts.hasPassword`, the
/// LAEnvironment's `passwordSet`), kept while /etc/shadow and /etc/passwd are
/// unchanged: each answer reads and splits the whole of /etc/shadow, and
/// LAEnvironment subscribers ask it for every state they are told
/// (BENCHMARKS.md, "Curves"). Unchanged means the same `lstat` (device,
/// inode, size, mode, owner, mtime and ctime to the nanosecond): passwd,
/// chpasswd, usermod and vipw write a new file and rename it, an editor
/// saving in place changes mtime and ctime. As `Users.name`, an answer is
/// kept a minute at most, for accounts from other NSS sources.
@ServiceActor
final class PasswordSetCache {
    private let shadowPath: String
    private let passwdPath: String
    private let lookup: (UInt32) -> Bool
    private let maximumAge: Duration
    private var version: [FileVersion?]
    private var since: ContinuousClock.Instant = .now
    private var answers: [UInt32: Bool] = [:]
    /// The files' versions when `changedSinceLastAsked` was last asked.
    private var versionLastAsked: [FileVersion?]

    init(
        shadowPath: String = "/etc/shadow", passwdPath: String = "/etc/passwd",
        maximumAge: Duration = .seconds(60),
        lookup: @escaping (UInt32) -> Bool = { Accounts.hasPassword(uid: $0) }
    ) {
        self.shadowPath = shadowPath
        self.passwdPath = passwdPath
        self.maximumAge = maximumAge
        self.lookup = lookup
        version = [FileVersion(shadowPath), FileVersion(passwdPath)]
        versionLastAsked = version
    }

    private var versionNow: [FileVersion?] { [FileVersion(shadowPath), FileVersion(passwdPath)] }

    func hasPassword(_ uid: UInt32) -> Bool {
        let now = versionNow
        if now != version || ContinuousClock.now - since >= maximumAge {
            (version, since) = (now, .now)
            answers.removeAll()
        }
        if let known = answers[uid] { return known }
        let answer = lookup(uid)
        // Bounded by the accounts asked about in a minute (uids that have an
        // LAEnvironment subscriber or make a call); a huge set starts afresh.
        if answers.count >= 4096 { answers.removeAll() }
        answers[uid] = answer
        return answer
    }

    /// Whether either file changed since the last time this was asked.
    func changedSinceLastAsked() -> Bool {
        let now = versionNow
        guard now != versionLastAsked else { return false }
        versionLastAsked = now
        return true
    }
}
