import Glibc
import LocalAuthShared

/// How many duplicate checks one uid may have in a day (issue 30 item 4).
///
/// Before an enrollment on a reader that identifies (fprintd's EnrollStart)
/// or keeps prints on its chip (our Enroll), the finger is matched against
/// every account's prints, and a hit answers "duplicate". Unbounded, that is
/// a match oracle: a user with only their own password tests fake fingers
/// against another user's prints, then takes the one that matches to that
/// user's lock screen. So each check spends one of `perDay` for the uid that
/// asked (root, who can read every print anyway, is not counted), and a hit
/// on another account's print also counts as a failed match toward the
/// asker's own lockout (the caller does that). Past the budget the
/// enrollment is refused before the reader is touched.
///
/// The checks are kept on disk (`<state>/duplicate-checks/<uid>`, one
/// wall-clock second per line), so an idle exit or a restart gives no new
/// budget. Fails closed as the lockout does: a file that cannot be read for
/// any reason but "no such file" means the day's budget is spent, and a
/// check that cannot be written is refused.
@ServiceActor
final class DuplicateCheckBudget {
    /// Ten: every finger of two hands enrolled afresh in one day.
    static let perDay = 10
    static let day = 24.0 * 3600
    private let directory: String
    private let wallClock: () -> Double
    private var cache: [UInt32: [Double]] = [:]
    /// One failed match for a uid, in the lockout every client shares (the Evaluator's).
    private let countFailedMatch: @ServiceActor (UInt32) -> Void

    init(
        stateDirectory: String, wallClock: @escaping () -> Double = DuplicateCheckBudget.secondsSinceEpoch,
        countFailedMatch: @escaping @ServiceActor (UInt32) -> Void
    ) {
        directory = stateDirectory + "/duplicate-checks"
        self.wallClock = wallClock
        self.countFailedMatch = countFailedMatch
    }

    /// The check's scan matched a print of another account (or the reader
    /// would not say whose): one failed match toward the asker's own
    /// lockout, as a wrong finger at their own lock screen would be.
    func matchedAnotherAccount(asker uid: UInt32) {
        guard uid != 0 else { return }
        Log.notice("an enrollment's duplicate check by uid \(uid) matched another account's print: counted as a failed match")
        countFailedMatch(uid)
    }

    nonisolated static func secondsSinceEpoch() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    /// The checks of `uid` within the last day; nil: its file cannot be read (spent).
    private func recent(_ uid: UInt32) -> [Double]? {
        let now = wallClock()
        let kept: [Double]
        if let cached = cache[uid] {
            kept = cached
        } else {
            let path = "\(directory)/\(uid)"
            switch Posix.readFileOrErrno(path) {
            case .success(let bytes):
                let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n")
                let parsed = lines.compactMap { Double($0) }
                guard parsed.count == lines.count else {
                    Log.error("duplicate-check file \(path) is corrupt; no duplicate check for uid \(uid) today")
                    return nil
                }
                kept = parsed
            case .failure(let error) where error.code == ENOENT:
                kept = []
            case .failure(let error):
                Log.error("duplicate-check file \(path) cannot be read (\(error)); no duplicate check for uid \(uid) now")
                return nil
            }
        }
        // A clock set back does not make old checks new ones: a time in the
        // future counts until a day has passed since it.
        let window = kept.filter { now - $0 < Self.day }
        cache[uid] = window
        return window
    }

    /// How many checks `uid` has left today.
    func remaining(for uid: UInt32) -> Int {
        guard uid != 0 else { return Self.perDay }
        return max(0, Self.perDay - (recent(uid)?.count ?? Self.perDay))
    }

    /// Spends one check of `uid`, or refuses (LimitExceeded) with nothing
    /// spent and nothing touched.
    func spend(for uid: UInt32) throws(ServiceError) {
        guard uid != 0 else { return }
        guard let window = recent(uid), window.count < Self.perDay else {
            throw ServiceErrors.limit(
                "no more than \(Self.perDay) enrollments a day may check the reader for a finger enrolled already")
        }
        let spent = window + [wallClock()]
        do {
            try AtomicFile.makeDirectory(directory)
            try AtomicFile.write(
                Array(spent.map { String(Int64($0)) }.joined(separator: "\n").utf8) + [10],
                to: "\(directory)/\(uid)")
        } catch {
            Log.error("could not save the duplicate checks of uid \(uid): \(error)")
            throw ServiceErrors.limit("the enrollment's duplicate check could not be recorded")
        }
        cache[uid] = spent
    }
}
