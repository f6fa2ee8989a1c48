import DBusCore
import Glibc
import LocalAuthShared

// The password-given records behind `--require-password-after`, and the rule
// over them (EnvironmentRules.passwordNeeded): made before the Evaluator
// (which asks it and records the password given) and the Environment
// (which tells subscribers when a password given runs out).

/// When each user last gave the password (policy 2), for
/// `--require-password-after`: `<state>/password-given/<uid>`, "<boot id>
/// <unix seconds>". A file that cannot be read or parsed fails closed.
@ServiceActor
final class PasswordStore {
    private let directory: String
    private var cache: [UInt32: EnvironmentRules.Stored] = [:]
    /// `--require-password-after`.
    let requirement: PasswordRequirement

    init(stateDirectory: String, requirement: PasswordRequirement = .init()) {
        directory = stateDirectory + "/password-given"
        self.requirement = requirement
    }

    /// `--require-password-after`: the error while biometrics wait for the password.
    func passwordNeeded(_ uid: UInt32) -> ServiceError? {
        guard requirement.isActive else { return nil }
        return EnvironmentRules.passwordNeeded(requirement, stored: stored(uid), bootID: Self.bootID, now: Int64(time(nil)))
    }

    /// This boot's id: the kernel's, else the one the unit passes. The shipped
    /// unit has `ProcSubset=pid`, which hides /proc/sys, so it sets
    /// `LOCALAUTH_BOOT_ID=%b` (systemd's boot id specifier); without either the
    /// password is never taken as given this boot (fails closed).
    static var bootID: String? {
        if let kernel = Posix.readFile("/proc/sys/kernel/random/boot_id") {
            return String(decoding: kernel, as: UTF8.self).trimmed
        }
        guard let passed = getenv("LOCALAUTH_BOOT_ID").map({ String(cString: $0) }) else { return nil }
        return bootIDFromUnit(passed)
    }

    /// systemd's `%b` is the boot id as 32 hex digits; the kernel's file has
    /// the same 128 bits with dashes (8-4-4-4-12). Anything else is refused.
    static func bootIDFromUnit(_ text: String) -> String? {
        let digits = Array(text.lowercased().utf8)
        guard digits.count == 32, digits.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else { return nil }
        var out: [UInt8] = []
        for (index, digit) in digits.enumerated() {
            if [8, 12, 16, 20].contains(index) { out.append(45) }
            out.append(digit)
        }
        return String(decoding: out, as: UTF8.self)
    }

    func stored(_ uid: UInt32) -> EnvironmentRules.Stored {
        if let cached = cache[uid] { return cached }
        let path = "\(directory)/\(uid)"
        let result: EnvironmentRules.Stored
        switch Posix.readFileOrErrno(path) {
        case .success(let bytes):
            if let record = EnvironmentRules.PasswordRecord(text: String(decoding: bytes, as: UTF8.self)) {
                result = .record(record)
            } else {
                Log.error("\(path) is damaged: the password is required before biometrics for uid \(uid)")
                result = .damaged
            }
        case .failure(let error) where error.code == ENOENT:
            result = .none
        case .failure(let error):
            Log.error("\(path) cannot be read (\(error)): the password is required before biometrics for uid \(uid)")
            return .damaged
        }
        cache[uid] = result
        return result
    }

    /// The user gave the password now.
    func record(_ uid: UInt32) {
        guard let boot = Self.bootID else { return }
        let record = EnvironmentRules.PasswordRecord(bootID: boot, time: Int64(time(nil)))
        do {
            try AtomicFile.makeDirectory(directory)
            try AtomicFile.write(Array(record.text.utf8), to: "\(directory)/\(uid)")
            cache[uid] = .record(record)
        } catch {
            // Not cached as given: biometrics keep waiting (fails closed).
            Log.error("could not record the password of uid \(uid): \(error)")
        }
    }
}
