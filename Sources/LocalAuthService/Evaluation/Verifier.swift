import DBusCore
import LocalAuthShared

/// The one verify operation, whichever contract asked for it: the twin of
/// `Enrollment`. LocalAuth's `Evaluator` (EvaluatePolicy, VerifyUser,
/// AuthorizeRight) and fprintd's Devices (VerifyStart) are its front-ends.
/// It owns what verifies leave behind: the lockout counts, the finger each
/// user matched with last, where a verify-only reader's rotation has got to,
/// the reader-fairness streaks, and the verifies in flight (whose caller
/// must stay in front). This file: that state and its rules;
/// Verification.swift: `verify` itself, the checks before and after each
/// scan, and a switch of the session in front.
@ServiceActor
final class Verifier {
    /// The one way to hold a reader: the queue turn, then the device (shared with enrollment).
    let gate: ReaderGate
    let readers: any EvaluationReaders
    let prints: any EvaluationPrints
    let environment: any EvaluationEnvironment
    let clock: any ServiceClock

    // The state verifies leave behind: private, so that only the methods
    // below (and no other file, component or fake) change it.
    /// Consecutive failed matches of each user, on disk (LockoutStore.swift).
    private let lockout: LockoutStore
    /// The finger each user matched with last: a verify-only reader tries it first.
    private let lastFinger: LastFingerStore
    /// Judged no-matches of each user since their last match: where a
    /// verify-only reader's rotation through the prints has got to
    /// (`galleryStart`). Unlike the lockout count, the password and
    /// ResetLockout leave it, so the rotation goes on to the fingers not yet
    /// tried; in memory only (a restart starts again at the last matched).
    private var missesSinceMatch: [UInt32: Int] = [:]
    /// Who has kept the warm reader waiting lately (Readers/ReaderFairness.swift).
    private var fairness = ReaderFairness()
    /// The verifies queued or scanning now, with whose presence each needs
    /// (Verification.swift: a switch of the session in front ends them).
    var inFlight: [ObjectIdentifier: Verifier.InFlight] = [:]

    init(
        stateDirectory: String, gate: ReaderGate, readers: any EvaluationReaders, prints: any EvaluationPrints,
        environment: any EvaluationEnvironment, clock: any ServiceClock
    ) {
        self.gate = gate
        self.readers = readers
        self.prints = prints
        self.environment = environment
        self.clock = clock
        lockout = LockoutStore(stateDirectory: stateDirectory)
        lastFinger = LastFingerStore(stateDirectory: stateDirectory)
    }

    // MARK: The lockout

    func resetLockout(of uid: UInt32, by administrator: UInt32) throws(ServiceError) {
        defer { environment.lockoutChanged(uid) }
        do {
            try lockout.reset(uid)
        } catch {
            throw ServiceError(.storageFailed, "could not save the lockout count")
        }
        Log.info("biometry lockout of uid \(uid) reset by uid \(administrator)")
    }

    /// Whether `uid`'s biometry is locked (the domain state, fprintd's refusal).
    func isLockedOut(_ uid: UInt32) -> Bool { lockout.isLockedOut(uid) }

    /// `uid`'s failed matches in a row.
    func failedMatches(of uid: UInt32) -> Int { lockout.failures(of: uid) }

    /// The reader judged a scan of `uid`'s a match, here or through fprintd's
    /// Verify: the lockout count is reset, the finger tried first next time.
    func scanMatched(_ uid: UInt32, finger: FingerName?) {
        if let finger { lastFinger.remember(finger, for: uid) }
        missesSinceMatch[uid] = nil
        fairness.scanJudged(uid)
        try? lockout.reset(uid)  // logged; the count stays (fails closed)
        environment.lockoutChanged(uid)
    }

    /// The reader judged a scan of `uid`'s no match: one more failure in a row
    /// (one lockout for every client). True: the user is now locked out.
    /// Throws if the count could not be written.
    func scanDidNotMatch(_ uid: UInt32) throws(FileError) -> Bool {
        fairness.scanJudged(uid)
        // Bounded: the rotation needs it only modulo the user's number of
        // prints (at most 10 on a reader), and 2,520 is a multiple of each.
        missesSinceMatch[uid] = ((missesSinceMatch[uid] ?? 0) + 1) % 2_520
        defer { environment.lockoutChanged(uid) }
        return try lockout.recordFailure(uid)
    }

    /// The finger `uid` matched with last, if known.
    func lastMatchedFinger(of uid: UInt32) -> FingerName? { lastFinger.finger(of: uid) }

    /// `uid`'s judged no-matches since its last match (the rotation's step).
    func missesSinceMatch(of uid: UInt32) -> Int { missesSinceMatch[uid] ?? 0 }

    /// The account password was accepted (policy 2): it unlocks biometrics
    /// after a lockout (Apple's rule).
    func passwordAccepted(_ uid: UInt32) {
        try? lockout.reset(uid)  // logged; the count stays (fails closed)
        environment.lockoutChanged(uid)
    }

    // MARK: Reader fairness

    /// The reader-fairness rule (ReaderFairness.swift): a user whose waits for
    /// a finger keep timing out on a warm reader waits before the next one.
    /// The password of policy 2 is never held back.
    func refuseWhileCooling(_ uid: UInt32) throws(ServiceError) {
        let remaining = fairness.remaining(uid, at: clock.now, readerWarm: readerIsWarm(for: uid))
        guard remaining > 0 else { return }
        throw ServiceError(
            .readerCoolingDown,
            "the fingerprint reader is cooling down; try again in about \(Int(remaining.rounded(.up))) s")
    }

    /// A wait for `uid`'s finger timed out, on a warm reader or not.
    func waitTimedOut(_ uid: UInt32) {
        fairness.waitTimedOut(uid, at: clock.now, readerWarm: readerIsWarm(for: uid))
    }

    private func readerIsWarm(for uid: UInt32) -> Bool {
        guard let reader = readers.reader(for: uid) else { return false }
        return readers.isWarm(reader)
    }

    // MARK: Pure rules

    /// What a reused match is tied to: each usable print's finger, source and
    /// enrollment stamp (new on every enrollment). Cheap, since the scan loop
    /// and the preflight have the prints at hand already.
    static func enrolledSet(_ prints: [EnrolledPrint]) -> [[UInt8]] {
        prints.map { Array("\($0.finger.rawValue) \($0.source.rawValue) ".utf8) + $0.stamp }
    }

    /// Where in the user's prints a scan starts (a verify-only reader tries
    /// only that one), as pure logic: the last matched finger first, then
    /// round the list, one step per judged no-match since the last match.
    nonisolated static func galleryStart(_ fingers: [FingerName], lastMatched: FingerName?, missesSinceMatch: Int) -> Int {
        guard !fingers.isEmpty else { return 0 }
        let first = lastMatched.flatMap { fingers.firstIndex(of: $0) } ?? 0
        return (first + missesSinceMatch % fingers.count) % fingers.count
    }

    /// What a judged no-match means, as pure logic: the persisted lockout
    /// wins over this evaluation's own attempts; until either is reached,
    /// the person scans again.
    enum AfterNoMatch: Equatable { case lockedOut, failed, scanAgain }

    nonisolated static func afterNoMatch(failures: Int, lockedOut: Bool, attemptsPerEvaluation: Int) -> AfterNoMatch {
        if lockedOut { return .lockedOut }
        return failures >= attemptsPerEvaluation ? .failed : .scanAgain
    }
}
