import DBusCore
import LocalAuthShared

// The one verify operation (the `Verifier`, Verifier.swift), whichever
// contract asked for it: LocalAuth's EvaluatePolicy, VerifyUser and
// AuthorizeRight (through `Evaluator.fingerprint`, FingerprintScan.swift) and fprintd's VerifyStart
// (Fprintd/FprintdOperations.swift). It owns the turn in the reader queue,
// the reader (opened through the one gate), the checks before every scan,
// the lockout count, the verify-only reader's rotation and the
// reader-fairness rule. The front-ends only translate: their arguments into
// a `Verifier.Job`, `Verifier.Event` into their status signals, and the
// `Verifier.Verdict` or `Verifier.Failure` into their answer (an LAError, or
// fprintd's final VerifyStatus).

/// A verify or an enrollment as its front-end keeps it (an `Evaluation`,
/// LocalAuth's `Enroller.Run`, fprintd's `FprintdOperation`): what ends it
/// early, and why it ended.
@ServiceActor
protocol ReaderCall: AnyObject, Sendable {
    /// Its place in the reader queue; sleep and the lid interrupt through it.
    var ticket: SensorQueue.Ticket { get }
    /// Cancels the wait for the reader and the scan in progress.
    var cancellable: Cancellable { get }
    /// Why the scans ended early, if they did (the front-end's own record).
    var biometricInterruption: Interruption? { get }
    /// Its caller has gone (left the bus, released the claim, the whole
    /// call interrupted): an enrollment keeps nothing for it.
    var hasEnded: Bool { get }
    /// Ends the scans early: no turn in the queue in time, no finger in time.
    func stopBiometrics(_ reason: Interruption)
    /// The reader is open and the first scan is next: a front-end that
    /// answers its caller first (fprintd's Start, then VerifyFingerSelected)
    /// returns once it has.
    func readerReady() async
}

extension ReaderCall {
    func readerReady() async {}
}

extension ReaderOpening {
    /// How a verify's or an enrollment's call opens its reader: cancelled
    /// with the call, and the reason it ended early winning over the reader's error.
    @ServiceActor init(for call: any ReaderCall, until deadline: ContinuousClock.Instant?, busy: @escaping @ServiceActor () -> Void) {
        self.init(until: deadline, cancellable: call.cancellable, interruption: { call.biometricInterruption }, busy: busy)
    }
}

extension Verifier {
    /// What one verify is asked to do.
    struct Job {
        /// Whose prints a scan is compared with.
        let uid: UInt32
        /// The connection the verify is for: it must be at the reader (its
        /// session local, on a seat, the active one; or the login rules) when
        /// each scan starts and when its finger has been read (docs/SECURITY.md,
        /// "A touch belongs to whoever is in front").
        let caller: CallerRecord
        /// The reader: nil for the one that serves `uid` now (ReaderChoice: an
        /// evaluation); fprintd's Device names its own.
        var reader: Readers.Identity? = nil
        /// Only this finger's print; nil: any of the user's.
        var finger: FingerName? = nil
        /// Judged no-matches before the verify ends as one (`--attempts` for an evaluation; 1 for fprintd).
        let attempts: Int
        /// The longest wait for the turn in the reader queue.
        let queueWait: Double
        /// When opening must have succeeded; nil: within the scan timeout from the turn.
        var openBy: ContinuousClock.Instant? = nil
        /// The wait for a finger.
        let fingerWait: FingerWait
        /// Which contract asked, for the log (" through fprintd's interface").
        var via = ""

        enum FingerWait {
            /// Bounds the opening and every scan together, from the turn: an
            /// evaluation's caller waits at most that long.
            case fromTurn(Double)
            /// Bounds each scan, restarted by a scan to repeat: fprintd's
            /// VerifyStart (its client decides when to stop).
            case eachScan(Double)
        }
    }

    /// What the person is told while a verify runs.
    enum Event: Equatable {
        /// Another program holds the device: the open is retried.
        case readerBusy
        /// The reader is open and waits for a finger (fprintd's Start answers now).
        case readerReady
        /// The scan must be repeated (too short, off centre, …).
        case retry(RetryKind)
        /// A judged no-match, with another attempt to come.
        case noMatchScanAgain
    }

    /// How a verify ended, when the reader judged it.
    enum Verdict: Equatable {
        /// `finger` matched (nil: the reader did not say which), against the
        /// user's usable set `enrolledSet` (Verifier.enrolledSet: what a reuse is tied to).
        case matched(finger: FingerName?, enrolledSet: [[UInt8]])
        /// The last attempt did not match; `lockedOut`: that one locked biometry.
        case noMatch(lockedOut: Bool)
    }

    /// How a verify ended when the reader did not judge it.
    enum Failure: Error {
        /// A check said no, before the queue (fairness) or before a scan
        /// (reader, lockout, password, prints): in LocalAuth's words.
        case refused(ServiceError)
        /// It was stopped or cancelled: the front-end's `interruption` says why.
        case interrupted
        /// The gate could not open the reader (its error).
        case notOpened(ServiceError)
        /// libfprint failed the scan; `unusable`: what that means for a caller
        /// when the reader cannot be used now (removed, too hot).
        case readerFailed(GLibError, ReaderFailure, unusable: ServiceError?)
        /// A no-match could not be written: it ends the verify (fails closed).
        case notRecorded
    }
}

extension Verifier {
    /// Runs one verify to its end: the queue turn, the reader, then scans
    /// until a match, `job.attempts` judged no-matches, the lockout, or
    /// an interruption. Every judged scan counts in the one lockout.
    func verify(
        _ job: Verifier.Job, for call: any ReaderCall,
        progress: @escaping @ServiceActor (Verifier.Event) -> Void
    ) async throws(Verifier.Failure) -> Verifier.Verdict {
        let uid = job.uid
        do {
            try refuseWhileCooling(uid)
        } catch {
            throw .refused(error)
        }
        // In flight from here, queued or scanning: a switch of the session in
        // front ends it if its caller is no longer there (`frontChanged`).
        let flight = ObjectIdentifier(call)
        inFlight[flight] = Verifier.InFlight(call: call, caller: job.caller)
        defer { inFlight[flight] = nil }
        call.ticket.reader = job.reader ?? readers.reader(for: uid)
        var fingerWait: (any ServiceTimer)?
        func waitForFinger(_ seconds: Double) {
            fingerWait?.cancel()
            fingerWait = clock.after(seconds) { [weak self] in
                call.stopBiometrics(.timedOut)
                // A wait that timed out on a warm reader: this user waits before the next one.
                self?.waitTimedOut(uid)
            }
        }
        defer { fingerWait?.cancel() }
        // The turn (the queue's time limit), then the reader opened; both
        // given back when the verify ends (ReaderGate.begin).
        let hold = try await gate.begin(
            for: call.ticket, within: job.queueWait, timedOut: { call.stopBiometrics(.queueTimedOut) },
            checks: { () throws(Verifier.Failure) -> Readers.Identity in
                // It may have ended while it waited.
                guard !call.cancellable.isCancelled else { throw .interrupted }
                if case .fromTurn(let seconds) = job.fingerWait { waitForFinger(seconds) }
                guard let identity = job.reader ?? readers.reader(for: uid) else {
                    throw .refused(readers.noReaderError)
                }
                return identity
            },
            opening: ReaderOpening(for: call, until: job.openBy, busy: { progress(.readerBusy) }),
            notOpened: { .notOpened($0) })
        guard let hold else { throw .interrupted }
        defer { hold.end() }
        let session = hold.session
        guard !call.cancellable.isCancelled else { throw .interrupted }
        if case .eachScan(let seconds) = job.fingerWait { waitForFinger(seconds) }
        progress(.readerReady)
        await call.readerReady()
        guard !call.cancellable.isCancelled else { throw .interrupted }

        var failures = 0
        while true {
            // Re-read before every scan (the first comes after a wait for the
            // reader; every later one after an await): a user locked out
            // meanwhile, or whose print went, gets no scan past it, and so no
            // match that would lift a lockout already in force.
            // Who is in front is judged now, when the finger is about to be
            // read, not when the call came in: a call admitted while its
            // caller was in front gets no scan once another session is.
            let frontBefore = environment.frontChanges
            try await checkAtTheReader(job, call)
            let usable: [EnrolledPrint]
            let gallery: [EnrolledPrint]
            do {
                (usable, gallery) = try nextGallery(job, on: session.identity)
            } catch {
                throw .refused(error)
            }
            let outcome: ScanOutcome
            do {
                outcome = try await session.scan(gallery, cancellable: call.cancellable)
            } catch {
                let failure = session.failure(error)
                if failure == .cancelled, call.cancellable.isCancelled { throw .interrupted }
                throw .readerFailed(error, failure, unusable: session.unusable(error))
            }
            ServiceActor.assertOnLoop()
            // And judged again once the finger was read: a scan read while
            // another session was in front (or across a switch, even one
            // switched back) was someone else's touch. It is thrown away,
            // never a match and never a failure of this user's.
            if case .retry = outcome {} else {
                try await checkStillInFront(job, call, outcome: outcome, frontBefore: frontBefore)
            }
            switch outcome {
            case .match(let index):
                let finger = index.flatMap { gallery.indices.contains($0) ? gallery[$0].finger : nil }
                scanMatched(uid, finger: finger)
                return .matched(finger: finger, enrolledSet: Self.enrolledSet(usable))
            case .noMatch:
                failures += 1
                // A completed no-match always counts, whatever ends the
                // verify next; one that cannot be written ends it.
                let lockedOut: Bool
                do {
                    lockedOut = try scanDidNotMatch(uid)
                } catch {
                    throw .notRecorded
                }
                Log.notice(
                    "failed fingerprint match for uid \(uid) on \(session.identity)\(job.via) "
                        + "(\(failedMatches(of: uid)) of \(LockoutStore.limit) in a row)")
                if lockedOut { Log.warning("biometry locked out for uid \(uid) after \(LockoutStore.limit) failed matches") }
                switch Self.afterNoMatch(failures: failures, lockedOut: lockedOut, attemptsPerEvaluation: job.attempts) {
                case .lockedOut, .failed: return .noMatch(lockedOut: lockedOut)
                case .scanAgain: progress(.noMatchScanAgain)
                }
            case .retry(let kind):
                if case .eachScan(let seconds) = job.fingerWait { waitForFinger(seconds) }
                progress(.retry(kind))
            }
        }
    }

    /// The prints the next scan of `job` compares with on the held
    /// reader, or why no scan may be taken now: the reader still the
    /// job's (reachable; for an evaluation, still the one serving the
    /// user), the lockout, the password required, the prints as they are now.
    /// A reader that can only verify compares a scan with one print: the
    /// finger that matched last time (the one the person usually uses)
    /// first, then one more of the user's prints after each judged
    /// no-match, counted since the last match and not per verify, so the
    /// next verify goes on where this one stops and every enrolled finger is
    /// reached (docs/SECURITY.md, "A verify-only reader"). A scan to repeat
    /// tries the same print. Returns the usable prints and the gallery.
    func nextGallery(
        _ job: Verifier.Job, on held: Readers.Identity
    ) throws(ServiceError) -> (usable: [EnrolledPrint], gallery: [EnrolledPrint]) {
        let uid = job.uid
        if job.reader == nil {
            // The user's prints are all on the reader that serves them: the one held.
            guard readers.reader(for: uid) == held else { throw readers.noReaderError }
        } else {
            guard readers.isReachable(held) else { throw readers.noReaderError }
        }
        if isLockedOut(uid) {
            throw ServiceErrors.la(.biometryLockout, "biometry is locked after too many failed attempts")
        }
        if let needed = environment.passwordNeeded(uid) { throw needed }
        var usable = prints.prints(of: uid, on: held)
        if let finger = job.finger {
            usable = usable.filter { $0.finger == finger }
            guard !usable.isEmpty else {
                throw ServiceErrors.la(.biometryNotEnrolled, "the finger \(finger.rawValue) is not enrolled")
            }
        }
        guard !usable.isEmpty else { throw ServiceErrors.la(.biometryNotEnrolled, "no fingerprints are enrolled for this user") }
        let offset = Self.galleryStart(
            usable.map(\.finger), lastMatched: lastMatchedFinger(of: uid), missesSinceMatch: missesSinceMatch(of: uid))
        return (usable, Array(usable[offset...] + usable[..<offset]))
    }
}

extension Verifier {
    /// A verify queued or scanning, as `frontChanged` looks at it.
    struct InFlight {
        let call: any ReaderCall
        let caller: CallerRecord
    }
}

extension Verifier {
    /// The session in front of the reader may have changed (logind: a
    /// session's `Active` changed, logind left or came back): every verify
    /// queued or scanning whose caller is no longer at the reader ends now,
    /// with NotAtTheReader on ours and fprintd's error on its, and gives its
    /// turn back, so that the next touch cannot answer it.
    func frontChanged() async {
        // A switch is signalled once per session whose `Active` changed
        // (the one left, the one brought to the front): a verify already
        // ended by the first is not judged again.
        for (flight, verify) in inFlight where verify.call.biometricInterruption == nil {
            let presence = await environment.presence(of: verify.caller)
            guard let refusal = Presence.refusal(presence), inFlight[flight] != nil,
                  verify.call.biometricInterruption == nil else { continue }
            Log.notice(
                "uid \(verify.caller.uid)'s call from \(verify.caller.sender) is no longer at the reader "
                    + "(\(refusal.message)): its fingerprint verify ends")
            verify.call.stopBiometrics(.notAtTheReader)
        }
    }

    /// Throws NotAtTheReader unless the job's caller is at the reader now.
    fileprivate func checkAtTheReader(_ job: Verifier.Job, _ call: any ReaderCall) async throws(Verifier.Failure) {
        let presence = await environment.presence(of: job.caller)
        guard !call.cancellable.isCancelled else { throw .interrupted }
        guard let refusal = Presence.refusal(presence) else { return }
        Log.notice("no scan for uid \(job.uid)\(job.via): the caller \(job.caller.sender) is not at the reader "
                   + "(\(refusal.message))")
        throw .refused(Interruption.notAtTheReader.error)
    }

    /// After a judged scan: the caller still at the reader, and no switch of
    /// the session in front since before the scan began; else the scan is
    /// thrown away (logged) and the verify ends with NotAtTheReader.
    fileprivate func checkStillInFront(
        _ job: Verifier.Job, _ call: any ReaderCall, outcome: ScanOutcome, frontBefore: UInt64
    ) async throws(Verifier.Failure) {
        // The presence is read from logind after the scan: any change logind
        // signalled before answering has been counted by then.
        let presence = await environment.presence(of: job.caller)
        let refusal = Presence.refusal(presence)
        let switched = environment.frontChanges != frontBefore
        guard refusal != nil || switched else { return }
        let why = refusal?.message ?? "the session in front changed during the scan"
        Log.warning(
            "a scan read for uid \(job.uid)\(job.via) (\(outcome == .noMatch ? "no match" : "a match")) "
                + "was thrown away: the caller \(job.caller.sender) was not in front when the finger was read (\(why))")
        throw .refused(Interruption.notAtTheReader.error)
    }
}
