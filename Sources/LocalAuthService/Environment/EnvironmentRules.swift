import DBusCore
import LocalAuthShared

/// The world around the reader, as pure rules with unit tests
/// (Tests/LocalAuthServiceTests/EnvironmentRulesTests.swift): whether
/// biometrics wait for the password after boot. The per-app domain state
/// is `ReaderChoice.appStateHash`. Where a reader sits is `ReaderPlacement` (Readers/), whether the
/// caller can be the person at the reader `Presence` (Callers/). What feeds
/// them (logind, UPower, sysfs, the state directory) is in Logind.swift and
/// Environment.swift (the Environment component).
enum EnvironmentRules {
    // MARK: Password after boot

    /// When the user last gave the password: the boot it was in and the wall-clock time.
    struct PasswordRecord: Equatable, Sendable {
        let bootID: String
        let time: Int64

        /// The file's text: "<boot id> <unix seconds>\n".
        var text: String { "\(bootID) \(time)\n" }

        /// nil if the text is damaged (the caller then fails closed).
        init?(text: String) {
            let parts = text.trimmed.split(separator: " ")
            guard parts.count == 2, !parts[0].isEmpty, let time = Int64(parts[1]) else { return nil }
            bootID = String(parts[0])
            self.time = time
        }
        init(bootID: String, time: Int64) {
            self.bootID = bootID
            self.time = time
        }
    }

    /// What the store holds for a user.
    enum Stored: Equatable, Sendable {
        case none
        case damaged
        case record(PasswordRecord)
    }

    /// Whether biometrics must wait for the password; nil: they may be used.
    /// A damaged or unreadable record fails closed; a record from the future
    /// (the clock went back) counts only from now on.
    static func passwordNeeded(_ requirement: PasswordRequirement, stored: Stored, bootID: String?,
                               now: Int64) -> ServiceError? {
        guard requirement.isActive else { return nil }
        let record: PasswordRecord
        switch stored {
        case .none, .damaged: return passwordNeededError(requirement)
        case .record(let found): record = found
        }
        if requirement.sinceBoot, bootID == nil || record.bootID != bootID { return passwordNeededError(requirement) }
        if let within = requirement.within {
            guard record.time <= now, Double(now - record.time) <= within else { return passwordNeededError(requirement) }
        }
        return nil
    }

    /// Apple's answer when biometry needs the passcode first is
    /// biometryLockout ("passcode is required to unlock biometry"); policy 2's
    /// password lifts it, as it lifts a lockout.
    static func passwordNeededError(_ requirement: PasswordRequirement) -> ServiceError {
        let why = requirement.sinceBoot && requirement.within == nil
            ? "since the computer started"
            : "within the last \(formatted(requirement.within ?? 0))\(requirement.sinceBoot ? " and since the computer started" : "")"
        return ServiceErrors.la(.biometryLockout, "the account password is required before the fingerprint: it was not given \(why)")
    }

    static func formatted(_ seconds: Double) -> String {
        if seconds >= 86_400, seconds.truncatingRemainder(dividingBy: 86_400) == 0 { return "\(Int(seconds / 86_400)) d" }
        if seconds >= 3600, seconds.truncatingRemainder(dividingBy: 3600) == 0 { return "\(Int(seconds / 3600)) h" }
        if seconds >= 60, seconds.truncatingRemainder(dividingBy: 60) == 0 { return "\(Int(seconds / 60)) min" }
        return "\(Int(seconds)) s"
    }
}
