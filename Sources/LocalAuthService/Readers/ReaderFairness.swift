import LocalAuthShared

/// The rule that keeps one user from making the reader too hot for everyone
/// (docs/SECURITY.md, "The reader is shared fairly").
///
/// libfprint stops a reader after about three minutes of continuous use and
/// it takes several minutes to cool; waiting for a finger counts as use. A
/// person who misses the reader once retries at once, but a user whose waits
/// keep timing out while the reader is warm (an app looping evaluations
/// nobody answers) waits longer before each next one: 30 s after the second
/// timeout in a row, then 60, 120, 240 s. Any judged scan (a finger was there)
/// clears the streak; so do five minutes without a timeout. Pure logic: the
/// service passes the clock and the reader's temperature in.
struct ReaderFairness {
    private struct Streak {
        var timeouts: Int
        var last: ContinuousClock.Instant
    }
    private var streaks: [UInt32: Streak] = [:]

    /// How long a user waits after `timeouts` timed-out waits in a row.
    static func backoff(afterTimeouts timeouts: Int) -> Double {
        guard timeouts >= 2 else { return 0 }
        let doubled = ServiceLimits.warmReaderFirstBackoff * Double(1 << min(timeouts - 2, 8))
        return min(doubled, ServiceLimits.warmReaderMaximumBackoff)
    }

    /// A wait for a finger of `uid` timed out, the reader warm or not.
    mutating func waitTimedOut(_ uid: UInt32, at now: ContinuousClock.Instant, readerWarm: Bool) {
        guard readerWarm else { return }
        var streak = streaks[uid] ?? Streak(timeouts: 0, last: now)
        if now - streak.last > .seconds(ServiceLimits.warmReaderStreakMemory) { streak.timeouts = 0 }
        streak.timeouts += 1
        streak.last = now
        streaks[uid] = streak
    }

    /// The reader judged a scan of `uid`'s: someone was there.
    mutating func scanJudged(_ uid: UInt32) {
        streaks[uid] = nil
    }

    /// Seconds `uid` must still wait before waiting for a finger again; 0: now.
    func remaining(_ uid: UInt32, at now: ContinuousClock.Instant, readerWarm: Bool) -> Double {
        guard readerWarm, let streak = streaks[uid] else { return 0 }
        let elapsed = now - streak.last
        if elapsed > .seconds(ServiceLimits.warmReaderStreakMemory) { return 0 }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return max(0, Self.backoff(afterTimeouts: streak.timeouts) - seconds)
    }
}
