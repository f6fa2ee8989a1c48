import DBusCore
import LocalAuthShared

/// The world around the reader, as pure rules with unit tests
/// (Tests/LocalAuthServiceTests/EnvironmentRulesTests.swift): where a reader
/// sits (built in or external), which readers a closed lid leaves, whether
/// the caller can be the person at the reader, and whether biometrics wait
/// for the password after boot. What feeds them (logind, UPower, sysfs, the
/// state directory) is in Logind.swift and Environment.swift (the Environment component).
enum EnvironmentRules {
    // MARK: Built in or external

    enum Placement: String, Sendable, Equatable { case builtIn = "built-in", external }

    /// sysfs's name of the USB device on gusb's port path: "usb:01:03:02"
    /// (hex bus, then each port) is "1-3.2". nil if it is not one.
    static func sysfsName(platformID: String) -> String? {
        guard platformID.hasPrefix("usb:") else { return nil }
        let numbers = platformID.dropFirst(4).split(separator: ":").map { UInt8($0, radix: 16) }
        guard numbers.count >= 2, !numbers.contains(nil) else { return nil }
        let values = numbers.map { Int($0!) }
        return "\(values[0])-" + values.dropFirst().map(String.init).joined(separator: ".")
    }

    /// Where a reader sits: an override (`--built-in-reader` /
    /// `--external-reader`) wins; else the kernel's `removable` attribute of
    /// its USB device ("fixed": built in, "removable": external); a reader
    /// the kernel cannot place ("unknown", no USB port such as libfprint's
    /// virtual readers) counts as built in, so that a closed lid refuses it
    /// rather than let a reader under the lid be used.
    static func placement(driver: String, deviceID: String, builtInOverrides: [ReaderSelector],
                          externalOverrides: [ReaderSelector], removable: String?) -> Placement {
        if externalOverrides.contains(where: { $0.matches(driver, deviceID) }) { return .external }
        if builtInOverrides.contains(where: { $0.matches(driver, deviceID) }) { return .builtIn }
        switch removable?.trimmed {
        case "removable": return .external
        default: return .builtIn
        }
    }

    /// The readers that may be used: while the lid is closed, none built in.
    static func reachable(_ usable: [Readers.Identity], builtIn: Set<Readers.Identity>,
                          lidClosed: Bool) -> [Readers.Identity] {
        lidClosed ? usable.filter { !builtIn.contains($0) } : usable
    }

    // MARK: The caller

    /// What logind says of the caller's session.
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
    }

    /// A session is at the reader only if it is local, has a seat, and is
    /// the active one: `Active` and `State` "active" ("online" is logged in
    /// but not in front, "closing" is a logged-out session's leftovers).
    static func presence(remote: Bool, seat: String, active: Bool, state: String) -> Presence {
        if remote { return .remote }
        if seat.isEmpty { return .noSeat }
        return active && state == "active" ? .local : .inactive
    }

    /// Why biometrics are not offered to such a caller; nil: they may be.
    static func refusal(_ presence: Presence) -> ServiceError? {
        let why: String
        switch presence {
        case .local, .unknown: return nil
        case .remote: why = "the caller's session is remote: nobody there can touch the fingerprint reader"
        case .noSeat: why = "the caller has no session on a seat: nobody there can touch the fingerprint reader"
        case .inactive: why = "the caller's session is not the active one on its seat: someone else is at the reader"
        case .logindAway: why = "logind, which says who is at the reader, has left the bus (restarting?): nobody is until it is back"
        }
        return ServiceError(.notAtTheReader, why)
    }

    // MARK: Password after boot

    /// `--require-password-after`: since boot, and/or within a period.
    struct PasswordRequirement: Sendable, Equatable {
        var sinceBoot = false
        var within: Double?
        var isActive: Bool { sinceBoot || within != nil }
    }

    /// "boot", or a duration: seconds, or a number with s, m, h or d ("48h").
    static func parseRequirement(_ text: String, into requirement: inout PasswordRequirement) -> Bool {
        if text == "boot" {
            requirement.sinceBoot = true
            return true
        }
        var number = Substring(text)
        var unit = 1.0
        if let last = text.last, !last.isNumber {
            switch last {
            case "s": unit = 1
            case "m": unit = 60
            case "h": unit = 3600
            case "d": unit = 86_400
            default: return false
            }
            number = number.dropLast()
        }
        guard let value = Double(number), value.isFinite, value > 0 else { return false }
        requirement.within = value * unit
        return true
    }

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

    // MARK: Per-app domain state

    /// Apple's stateHash differs per app: ours is the user's enrolled-set hash
    /// keyed with the app (the executable the service sees), so two apps
    /// cannot compare hashes to follow a person, and each changes exactly
    /// when the enrolled set does.
    static func appStateHash(enrolledSetHash: [UInt8], app: String) -> [UInt8] {
        Digest.sha256(Array("localauth-app-domain-state 1\n\(app)\n".utf8) + enrolledSetHash)
    }
}
