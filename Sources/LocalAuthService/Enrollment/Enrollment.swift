import DBusCore
import LocalAuthShared

// The one enroll operation, whichever contract asked for it: LocalAuth's
// Enroll and EnrollWithOptions (Enroller.swift) and fprintd's EnrollStart
// (Fprintd/FprintdOperations.swift). It owns the turn in the reader queue,
// the reader (opened through the one gate), the check that the finger is not
// enrolled already for anyone (its oracle bounded by the DuplicateCheckBudget),
// each wait for a finger, the enroll's scans, the rule that nothing is kept
// for a call that ended, and the chip slot of a print that is not kept. The
// front-ends only translate: their arguments into an `Enrollment.Job` (with
// what their contract does first, and where their prints are saved),
// `Enrollment.Event` into their status signals, and the end into their answer.

extension Enrollment {
    /// What one enrollment is asked to do.
    struct Job {
        /// Whose finger, and their name (libfprint writes it into the print).
        let uid: UInt32
        let username: String
        let finger: FingerName
        let reader: Readers.Identity
        /// The reader keeps prints on its chip: a print not kept leaves it.
        let storesPrints: Bool
        /// The longest wait for the turn in the reader queue.
        let queueWait: Double
        /// When opening must have succeeded; nil: within the scan timeout.
        var openBy: ContinuousClock.Instant? = nil
        /// Each wait for a finger, restarted by every stage and retry.
        let fingerWait: Double
        /// Before the scans, with the reader held: the contract's own first step
        /// (freeing the slot of a print being replaced; fprintd deletes the old print).
        var first: @ServiceActor (any ReaderSession) async throws(ServiceError) -> Void = { _ throws(ServiceError) in }
        /// The duplicate check's gallery, read when the reader is held: every
        /// account's prints this finger must not match (nil: no check), and
        /// which of them are the enrolling user's own (a hit on one is no guess).
        var duplicateCandidates: @ServiceActor () -> (gallery: [EnrolledPrint], own: Set<[UInt8]>)? = { nil }
        /// Who asks: a hit on another account's print counts in their own lockout.
        let asker: UInt32
        /// Keeps the new print where the contract keeps prints (throws: not kept).
        let save: @ServiceActor (any PrintTemplate) throws(ServiceError) -> Void
    }

    /// What the person is told while an enrollment runs.
    enum Event: Equatable {
        case readerBusy
        /// The reader is open: `stages` scans make the print.
        case readerReady(stages: Int)
        /// The duplicate check found no such finger (fprintd counts it as a stage).
        case duplicateCheckPassed
        /// Stage `stage` of the print is done.
        case stagePassed(Int)
        /// The scan must be repeated (at stage `stage`).
        case retry(RetryKind, stage: Int)
    }

    /// How an enrollment ended without a kept print.
    enum Failure: Error {
        /// A check or the contract's first step said no.
        case refused(ServiceError)
        /// It was stopped, cancelled, or its caller has gone: the front-end's record says why.
        case interrupted
        /// The gate could not open the reader (its error).
        case notOpened(ServiceError)
        /// The finger is enrolled already (the duplicate check, or the chip's own).
        case duplicate
        /// libfprint failed; `unusable`: what that means when the reader cannot be used now.
        case readerFailed(GLibError, ReaderFailure, unusable: ServiceError?)
        /// The print was made but could not be kept (its slot on the chip is freed).
        case notSaved(ServiceError)
    }
}

/// The one enroll operation (see the top of this file).
@ServiceActor
final class Enrollment {
    /// The one way to hold a reader: the queue turn, then the device (shared with the verify).
    private let gate: ReaderGate
    /// Which reader serves whom, and whether a person can touch it now.
    private let readers: any ReaderLookup
    /// The match oracle of the duplicate check, bounded per uid.
    private let duplicateChecks: DuplicateCheckBudget
    /// libfprint's current number of stages of a reader.
    private let stages: @ServiceActor (Readers.Identity) -> Int
    /// The queue's time limit and each wait for a finger run on it.
    private let clock: any ServiceClock

    init(
        gate: ReaderGate, readers: any ReaderLookup, duplicateChecks: DuplicateCheckBudget,
        stages: @escaping @ServiceActor (Readers.Identity) -> Int, clock: any ServiceClock = EventLoopClock()
    ) {
        self.clock = clock
        self.gate = gate
        self.readers = readers
        self.duplicateChecks = duplicateChecks
        self.stages = stages
    }

    /// Runs one enrollment to its end: the print, saved by `job.save`, or why not.
    func run(
        _ job: Enrollment.Job, for call: any ReaderCall,
        progress: @escaping @ServiceActor (Enrollment.Event) -> Void
    ) async throws(Enrollment.Failure) {
        call.ticket.reader = job.reader
        // The turn (the queue's time limit), then the reader opened; both
        // given back when the enrollment ends (ReaderGate.begin).
        let hold = try await gate.begin(
            for: call.ticket, within: job.queueWait,
            timedOut: { [queue = gate.queue] in
                call.stopBiometrics(.queueTimedOut)
                queue.withdraw(call.ticket)
            },
            checks: { () throws(Enrollment.Failure) -> Readers.Identity in
                guard !call.cancellable.isCancelled, !call.hasEnded else { throw .interrupted }
                // While the caller waited, the reader may have gone.
                guard readers.isReachable(job.reader) else { throw .refused(ServiceErrors.noReader) }
                return job.reader
            },
            opening: ReaderOpening(for: call, until: job.openBy, busy: { progress(.readerBusy) }),
            notOpened: { .notOpened($0) })
        guard let hold else { throw .interrupted }
        defer { hold.end() }
        let session = hold.session
        do {
            try await job.first(session)
        } catch {
            throw .refused(error)
        }
        await call.readerReady()
        guard !call.cancellable.isCancelled, !call.hasEnded else { throw .interrupted }

        // Each wait for a finger; every stage or retry restarts it, so a
        // slow person is not cut off between scans.
        var fingerWait: (any ServiceTimer)?
        func waitForFinger() {
            fingerWait?.cancel()
            fingerWait = clock.after(job.fingerWait) { call.stopBiometrics(.timedOut) }
        }
        defer { fingerWait?.cancel() }
        waitForFinger()
        progress(.readerReady(stages: stages(job.reader)))
        try await refuseDuplicate(
            job, on: session, call: call,
            progress: { event in
                waitForFinger()
                progress(event)
            })
        let print: any PrintTemplate
        do {
            print = try await session.enroll(
                job.finger, username: job.username, cancellable: call.cancellable
            ) { stage, retry in
                waitForFinger()
                progress(retry.map { .retry($0, stage: stage) } ?? .stagePassed(stage))
            }
        } catch {
            throw failure(error, job, on: session, call: call)
        }
        fingerWait?.cancel()
        // The caller left (or Release, SIGTERM) while the last stage
        // completed: nothing is kept for a call that has ended.
        guard !call.cancellable.isCancelled, !call.hasEnded else {
            await freeSlot(of: print, job, on: session)
            throw .interrupted
        }
        do {
            try job.save(print)
        } catch {
            // A print that no file owns must not keep a slot on the chip.
            await freeSlot(of: print, job, on: session)
            throw .notSaved(error)
        }
    }

    /// What libfprint's `error` ends the enrollment with.
    private func failure(
        _ error: GLibError, _ job: Enrollment.Job, on session: any ReaderSession, call: any ReaderCall
    ) -> Enrollment.Failure {
        let failure = session.failure(error)
        if failure == .cancelled, call.cancellable.isCancelled { return .interrupted }
        if failure == .duplicate {
            // The chip's own check: it does not say whose print.
            duplicateChecks.matchedAnotherAccount(asker: job.asker)
            return .duplicate
        }
        return .readerFailed(error, failure, unusable: session.unusable(error))
    }

    /// The duplicate check: one identify over every account's prints this
    /// finger must not match (scans to repeat are repeated). A hit on another
    /// account's print is a guess that came true: it counts as a failed match
    /// of the asker's own (DuplicateCheckBudget).
    private func refuseDuplicate(
        _ job: Enrollment.Job, on session: any ReaderSession, call: any ReaderCall,
        progress: @ServiceActor (Enrollment.Event) -> Void
    ) async throws(Enrollment.Failure) {
        guard let candidates = job.duplicateCandidates() else { return }
        while true {
            let outcome: ScanOutcome
            do {
                outcome = try await session.scan(candidates.gallery, cancellable: call.cancellable)
            } catch {
                // The chip holds no such print: a new finger.
                if session.failure(error) == .notFound { return progress(.duplicateCheckPassed) }
                throw failure(error, job, on: session, call: call)
            }
            switch outcome {
            case .match(let index):
                Log.notice("enrollment refused: the finger is already enrolled on \(job.reader)")
                let own = index.map { candidates.gallery.indices.contains($0) && candidates.own.contains(candidates.gallery[$0].stamp) }
                if own != true { duplicateChecks.matchedAnotherAccount(asker: job.asker) }
                throw .duplicate
            case .retry(let kind):
                progress(.retry(kind, stage: 0))
            case .noMatch:
                return progress(.duplicateCheckPassed)
            }
        }
    }

    private func freeSlot(of print: any PrintTemplate, _ job: Enrollment.Job, on session: any ReaderSession) async {
        guard job.storesPrints else { return }
        do {
            try await session.deleteFromChip(print)
        } catch {
            Log.warning("a print not kept stays on the chip of \(job.reader): \(error.message)")
        }
    }
}
