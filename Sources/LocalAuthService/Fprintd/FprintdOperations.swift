import DBusCore
import LocalAuthShared

/// A verify or enroll of fprintd's contract, from its Start to its Stop.
///
/// Sharing the reader: a Claim holds nothing (fprintd opens the device on
/// Claim and keeps it until Release, which would lock every app and other
/// program out for as long as a lock screen sits claimed). VerifyStart and
/// EnrollStart take the reader for their operation only, as every operation
/// here does: a turn in the service's one queue (SensorQueue, fair between
/// users), then the device opened (`FprintdSeams.open`); both before the call
/// answers, so "started" means the reader is open and waiting for a finger,
/// as it is in fprintd, and a reader that cannot be had is the call's error.
/// The reader is given back with the operation's final status (not at
/// VerifyStop), and closes after the linger. Sleep and the lid end the
/// operation through its queue ticket, as they end an evaluation.
@ServiceActor
final class FprintdOperation: VerifyingCall {
    enum Kind { case verify, enroll }
    let kind: Kind
    let cancellable = Cancellable()
    /// Its place in the reader queue; sleep and the lid interrupt through it.
    let ticket: SensorQueue.Ticket
    private var done = false
    private var waiters: [CheckedContinuation<Void, Never>] = []
    /// The reader was unplugged: the final status says "disconnected".
    fileprivate(set) var disconnected = false
    /// No finger came in time, or the service ended it (sleep, the lid): the
    /// final status is an error, not a no-match.
    fileprivate(set) var timedOut = false
    /// Sleep or the lid ended it (Start's error says so, if it had not started).
    fileprivate(set) var interruption: Evaluation.Interruption?
    /// Bounds each wait for a finger; restarted by every scan.
    private var timer: EventLoop.Timer?
    private weak var queue: SensorQueue?

    /// How long Start waits for its turn and for the device to open: less
    /// than a D-Bus client's default reply timeout (25 s).
    static let startWait = 20.0

    init(_ kind: Kind, uid: UInt32, purpose: SensorQueue.Purpose, reader: Readers.Identity, queue: SensorQueue) {
        self.kind = kind
        self.queue = queue
        ticket = SensorQueue.Ticket(uid: uid, purpose: purpose)
        ticket.reader = reader
        ticket.interrupt = { [weak self] reason in self?.interrupt(reason) }
    }

    func cancel() {
        cancellable.cancel()
        queue?.withdraw(ticket)
        // A first scan held for Start's answer ends now (it sees the cancel).
        answeredStart()
    }

    func readerGone() {
        disconnected = true
        cancel()
    }

    /// Sleep or the lid ends the operation: the client hears an error status.
    func interrupt(_ reason: Evaluation.Interruption) {
        if interruption == nil { interruption = reason }
        timedOut = true
        cancel()
    }

    // MARK: As the one verify operation sees it (Evaluation/Verification.swift)

    var biometricInterruption: Evaluation.Interruption? { interruption }

    /// The verify ends it early: no finger in time is an error status; no
    /// turn in the queue in time, Start's "busy".
    func stopBiometrics(_ reason: Evaluation.Interruption) {
        guard reason == .queueTimedOut else { return interrupt(reason) }
        waitedTooLong = true
        queue?.withdraw(ticket)
    }

    /// No turn in the reader queue within Start's time: another operation kept it.
    private(set) var waitedTooLong = false

    /// Resumed once, when the verify has the reader open (nil) or ended before (why).
    private var startWaiter: CheckedContinuation<VerifyFailure?, Never>?
    private var startOutcome: VerifyFailure??
    /// The verify's first scan, held until Start has answered and VerifyFingerSelected gone out.
    private var firstScan: CheckedContinuation<Void, Never>?
    private var answered = false

    /// The reader is open: Start may answer; the first scan waits for `answeredStart`.
    func readerReady() async {
        start(nil)
        guard !answered else { return }
        await withCheckedContinuation { firstScan = $0 }
    }

    /// Start has answered and said which finger: the scans may begin.
    func answeredStart() {
        answered = true
        firstScan?.resume()
        firstScan = nil
    }

    /// Returns once the verify has opened the reader (nil), or why it could not.
    func started() async -> VerifyFailure? {
        if let startOutcome { return startOutcome }
        return await withCheckedContinuation { startWaiter = $0 }
    }

    /// The verify's reader is open (nil), or the verify ended before that; the first word counts.
    func start(_ outcome: VerifyFailure?) {
        guard startOutcome == nil else { return }
        startOutcome = .some(outcome)
        startWaiter?.resume(returning: outcome)
        startWaiter = nil
    }

    /// Whether Start answered that the verify runs (its final status is then due).
    var hasStarted: Bool { startOutcome.map { $0 == nil } ?? false }

    /// Returns once the scans have ended and the reader is given back (at once if they had).
    func finished() async {
        guard !done else { return }
        await withCheckedContinuation { waiters.append($0) }
    }

    fileprivate func finish() {
        stopTimer()
        done = true
        for waiter in waiters { waiter.resume() }
        waiters = []
    }

    /// (Re)starts the wait for a finger: `seconds` without a scan end the operation.
    func restartTimer(_ seconds: Double) {
        timer?.cancel()
        timer = EventLoopTimers.after(seconds) { [weak self] in
            guard let self else { return }
            self.timedOut = true
            self.cancel()
        }
    }

    func stopTimer() {
        timer?.cancel()
        timer = nil
    }
}

extension FprintdDevice {
    // MARK: Taking the reader for one operation

    /// Starts `operation`: its turn in the reader queue and the device open,
    /// within `FprintdOperation.startWait`. On failure the operation is over
    /// (and finished) and the error is fprintd's.
    private func begin(_ operation: FprintdOperation) async throws(ServiceError) -> any FprintdSession {
        self.operation = operation
        do throws(ServiceError) {
            return try await takeReader(for: operation)
        } catch {
            if self.operation === operation { self.operation = nil }
            operation.finish()
            throw error
        }
    }

    private func takeReader(for operation: FprintdOperation) async throws(ServiceError) -> any FprintdSession {
        let deadline = ContinuousClock.now + .seconds(FprintdOperation.startWait)
        let waitLimit = EventLoopTimers.after(FprintdOperation.startWait) { [queue, ticket = operation.ticket] in
            queue.withdraw(ticket)
        }
        let acquired = await queue.acquire(operation.ticket)
        waitLimit.cancel()
        guard acquired else { throw startError(operation, busy: "another operation kept the fingerprint reader; try again") }
        do throws(ServiceError) {
            guard !operation.cancellable.isCancelled else { throw ServiceError(.la(.systemCancel), "stopped") }
            return try await seams.open(identity, until: deadline, cancellable: operation.cancellable)
        } catch {
            queue.release()
            // Another program holds it: try again; gone, asleep or stopped: why, in fprintd's words.
            throw startError(operation, busy: error.kind == .readerInUse ? error.message : "")
        }
    }

    /// Why Start could not take the reader, in fprintd's vocabulary.
    private func startError(_ operation: FprintdOperation, busy: String) -> ServiceError {
        if operation.disconnected { return ServiceError(.failed, "the reader \(identity) is gone") }
        if let reason = operation.interruption ?? (seams.asleep ? .systemSleeping : nil) {
            return ServiceError(.permissionDenied, "\(FprintdRefusal.readerUnavailable): \(reason.error.message)")
        }
        if operation.cancellable.isCancelled || busy.isEmpty {
            return ServiceError(.failed, "the operation was stopped before it started")
        }
        return ServiceError(.failed, busy)
    }

    /// The operation's reader goes back: the queue's next, the device closing after the linger.
    private func end(_ operation: FprintdOperation, _ session: any FprintdSession) {
        operation.stopTimer()
        session.release()
        queue.release()
    }

    // MARK: Verify

    func verifyStart(_ call: Call<FingerNameArgument>) async throws(ServiceError) -> [DBusValue] {
        let request = call.request
        let claim = try currentClaim(request.sender)
        try refuseWhileBusy()
        let name = call.arguments.name
        let finger: FingerName?
        if name == FprintdBus.anyFinger {
            finger = nil
        } else {
            guard let named = FingerName(rawValue: name) else {
                throw ServiceError(.invalidArgs, "Invalid finger name \(ServiceErrors.echo(name))")
            }
            finger = named
        }
        // What the first scan compares with, and the finger fprintd reports
        // as selected: "any" on a reader that identifies; on one that cannot,
        // the verify-only rotation's print (the LAContext scan's, not
        // fprintd's "the first finger": docs/FPRINTD.md).
        let selected: String
        switch gallery(uid: claim.uid, finger: finger) {
        case .success(let first):
            selected = finger == nil && supportsIdentify ? FprintdBus.anyFinger : first[0].finger.rawValue
        case .failure(let refused):
            if case .notEnrolled = refused.kind { throw refused }
            // The rules below say it in fprintd's words.
            selected = name
        }
        // The same rules as an LAContext evaluation, in fprintd's vocabulary.
        if let refusal = await refusal(request.caller, uid: claim.uid, reader: identity) {
            throw refusal
        }
        // Re-read after the await.
        _ = try currentClaim(request.sender)
        try refuseWhileBusy()
        guard !stopping else { throw ServiceError(.failed, "the service is stopping") }
        let operation = FprintdOperation(.verify, uid: claim.uid, purpose: .evaluation, reader: identity, queue: queue)
        self.operation = operation
        let sender = request.sender
        // The one verify operation (Evaluation/Verification.swift), one judged
        // scan long: Start answers once it has the reader open, as fprintd does.
        spawn { [self] in
            await runVerify(operation, verifyRequest(uid: claim.uid, finger: finger), sender: sender)
            operation.finish()
        }
        if let failure = await operation.started() {
            if self.operation === operation { self.operation = nil }
            throw startError(operation, failure)
        }
        // Runs after this call's reply: VerifyFingerSelected follows VerifyStart's
        // answer, and the first scan follows both, as in fprintd.
        spawn { [self] in
            emit(FprintdBus.Signal.verifyFingerSelected, [.string(selected)], to: sender)
            operation.answeredStart()
        }
        return []
    }

    /// A VerifyStart's request to the one verify: this reader, `finger` (nil:
    /// any), one judged scan, Start's time limits, each wait for a finger
    /// bounded by `--scan-timeout` and restarted by a scan to repeat.
    func verifyRequest(uid: UInt32, finger: FingerName?) -> VerifyRequest {
        VerifyRequest(
            uid: uid, reader: identity, finger: finger, attempts: 1, queueWait: FprintdOperation.startWait,
            openBy: ContinuousClock.now + .seconds(FprintdOperation.startWait), fingerWait: .eachScan(scanTimeout))
    }

    /// Why Start could not have the reader, in fprintd's vocabulary.
    private func startError(_ operation: FprintdOperation, _ failure: VerifyFailure) -> ServiceError {
        switch failure {
        case .refused(let refusal) where refusal.kind == .readerCoolingDown:
            return ServiceError(.permissionDenied, "\(FprintdRefusal.readerUnavailable): \(refusal.message)")
        case .notOpened(let error) where error.kind == .readerInUse:
            return startError(operation, busy: error.message)
        case .interrupted where operation.waitedTooLong:
            return startError(operation, busy: "another operation kept the fingerprint reader; try again")
        default:
            return startError(operation, busy: "")
        }
    }

    private func refuseWhileBusy() throws(ServiceError) {
        switch operation?.kind {
        case nil: return
        case .verify?: throw ServiceError(.busy, "Verification already in progress")
        case .enroll?: throw ServiceError(.busy, "Enrollment already in progress")
        }
    }

    func verifyStop(_ request: Request) async throws(ServiceError) -> [DBusValue] {
        try await stop(.verify, request)
    }

    func enrollStop(_ request: Request) async throws(ServiceError) -> [DBusValue] {
        try await stop(.enroll, request)
    }

    private func stop(_ kind: FprintdOperation.Kind, _ request: Request) async throws(ServiceError) -> [DBusValue] {
        _ = try currentClaim(request.sender)
        guard let operation else {
            throw ServiceError(.nothingInProgress, kind == .verify ? "No verification in progress" : "No enrollment in progress")
        }
        guard operation.kind == kind else { throw ServiceError(.busy, "Another operation is already in progress") }
        operation.cancel()
        await operation.finished()
        if self.operation === operation { self.operation = nil }
        return []
    }

    /// The prints one scan of `uid`'s compares with (`finger`, or nil for
    /// any), or why no scan may be taken now: the one verify's check before
    /// every scan (Evaluator.nextGallery), with "not enrolled" in fprintd's words.
    func gallery(uid: UInt32, finger: FingerName?) -> Result<[EnrolledPrint], ServiceError> {
        do throws(ServiceError) {
            return .success(try seams.verifier.nextGallery(verifyRequest(uid: uid, finger: finger), on: identity).gallery)
        } catch where error.kind == .la(.biometryNotEnrolled) {
            return .failure(ServiceError(.notEnrolled, finger.map { "No such print \($0.rawValue)" } ?? "No fingerprints enrolled"))
        } catch {
            return .failure(error)
        }
    }

    /// Runs the verify and says how it went in fprintd's statuses: retries
    /// ("verify-retry-scan"…) as they come, then one final status.
    private func runVerify(_ operation: FprintdOperation, _ request: VerifyRequest, sender: String) async {
        func status(_ result: FprintdBus.VerifyResult) {
            emit(FprintdBus.Signal.verifyStatus, [.string(result.rawValue), .boolean(result.done)], to: sender)
        }
        let uid = request.uid
        let result: VerifyResult
        do throws(VerifyFailure) {
            result = try await seams.verifier.verify(request, for: operation) { progress in
                if case .retry(let kind) = progress { status(FprintdBus.VerifyResult(kind)) }
            }
        } catch {
            guard operation.hasStarted else { return operation.start(error) }
            status(finalStatus(error, operation))
            return
        }
        switch result {
        case .matched:
            Log.info("fprintd device \(id): uid \(uid) matched")
            // pam_fprintd's match, seen here: a nonce-less ticket for its process (LoginSecret/, docs/KEYRING.md).
            seams.matchSeen(uid: uid, sender: sender)
            status(.match)
        case .noMatch:
            // One lockout for every client (docs/FPRINTD.md): a failed match here counts as one in an app.
            status(.noMatch)
        }
        seams.userChanged(uid)  // the lockout count: the user's LAEnvironment subscribers
    }

    /// The final status of a verify the reader did not judge, as fprintd says it.
    private func finalStatus(_ failure: VerifyFailure, _ operation: FprintdOperation) -> FprintdBus.VerifyResult {
        switch failure {
        case .refused(let refusal):
            Log.notice("fprintd device \(id): no scan: \(refusal.message)")
            return .unknownError
        case .interrupted, .readerFailed(_, .cancelled, _):
            if operation.disconnected { return .disconnected }
            // VerifyStop or Release in the middle of a scan: the final status
            // fprintd sends (verify-no-match, done; judged by no reader, so
            // counted nowhere), and the Stop waits for it (so at SIGTERM). A
            // timeout or sleep is an error to report.
            return operation.timedOut ? .unknownError : .noMatch
        case .readerFailed(_, .removed, _):
            return .disconnected
        case .readerFailed(let error, _, _):
            if operation.disconnected { return .disconnected }
            Log.warning("fprintd device \(id): verify failed: \(error)")
            return .unknownError
        case .notOpened(let error):
            Log.warning("fprintd device \(id): the reader did not open: \(error.message)")
            return operation.disconnected ? .disconnected : .unknownError
        case .notRecorded:
            // Counted as a failure nowhere, but failing closed: no match.
            return .noMatch
        }
    }

    // MARK: Enroll

    func enrollStart(_ call: Call<FingerNameArgument>) async throws(ServiceError) -> [DBusValue] {
        let request = call.request
        let claim = try currentClaim(request.sender)
        guard let finger = FingerName(rawValue: call.arguments.name) else {
            throw ServiceError(.invalidArgs, "Invalid finger name")
        }
        try refuseWhileBusy()
        guard seams.isReachable(identity) else { throw ServiceError(.failed, seams.noReaderError.message) }
        guard !stopping else { throw ServiceError(.failed, "the service is stopping") }
        // A reader that identifies (fprintd's duplicate check) or keeps prints
        // on its chip (its own check) answers "enroll-duplicate" against every
        // account's prints: one of the caller's duplicate checks today, spent
        // before the reader is touched (docs/SECURITY.md).
        let asker = request.uid
        if supportsIdentify || reader.storesPrints { try seams.duplicateChecks.spend(for: asker) }
        let sender = request.sender
        let operation = FprintdOperation(.enroll, uid: claim.uid, purpose: .enrollment(sender: sender), reader: identity,
                                         queue: queue)
        let session = try await begin(operation)
        // As fprintd: enrolling a finger again deletes its print first (on a
        // reader with storage, its slot on the chip too, with the reader held).
        if seams.allPrints(of: claim.uid, on: identity).contains(where: { $0.finger == finger }) {
            do throws(ServiceError) {
                try await delete(finger, uid: claim.uid, on: session)
            } catch {
                end(operation, session)
                if self.operation === operation { self.operation = nil }
                operation.finish()
                throw error
            }
        }
        spawn { [self] in
            await runEnroll(operation, on: session, finger: finger, claim: claim, asker: asker, sender: sender)
            end(operation, session)
            operation.finish()
        }
        return []
    }

    private func runEnroll(_ operation: FprintdOperation, on session: any FprintdSession, finger: FingerName, claim: Claim,
                           asker: UInt32, sender: String) async {
        func status(_ result: FprintdBus.EnrollResult) {
            emit(FprintdBus.Signal.enrollStatus, [.string(result.rawValue), .boolean(result.done)], to: sender)
        }
        let seconds = scanTimeout
        operation.restartTimer(seconds)
        do throws(GLibError) {
            // No print twice, for anyone: one identify over every print on this
            // reader first (fprintd's duplicate check, counted as a stage).
            if supportsIdentify {
                let everyone = seams.everyPrint(on: identity)
                let own = Set(seams.allPrints(of: claim.uid, on: identity).map(\.stamp))
                while true {
                    let outcome = try await session.scan(everyone, cancellable: operation.cancellable)
                    operation.restartTimer(seconds)
                    switch outcome {
                    case .match(let index):
                        // A hit on another account's print is a guess that came true.
                        if index.map({ !own.contains(everyone[$0].stamp) }) ?? true {
                            seams.duplicateChecks.matchedAnotherAccount(asker: asker)
                        }
                        status(.duplicate)
                        return
                    case .retry(let kind):
                        status(FprintdBus.EnrollResult(kind))
                        continue
                    case .noMatch:
                        status(.stagePassed)
                    }
                    break
                }
            }
            let stages = reader.enrollStages
            let print = try await session.enroll(finger, username: claim.username, cancellable: operation.cancellable) {
                stage, retry in
                operation.restartTimer(seconds)
                // The last stage is told by the final status.
                if stage < stages || retry != nil { status(retry.map(FprintdBus.EnrollResult.init) ?? .stagePassed) }
            }
            // The claimer left (or Release, SIGTERM) while the last stage
            // completed: no print is saved for a claim that has ended.
            guard !operation.cancellable.isCancelled else {
                if reader.storesPrints { try? await session.deleteFromChip(print) }
                status(.failed)
                return
            }
            do {
                try seams.save(print, finger: finger, username: claim.username, uid: claim.uid, reader: identity)
            } catch {
                Log.error("fprintd device \(id): could not store the print: \(error)")
                // A print that no file owns must not keep a slot on the chip.
                try? await session.deleteFromChip(print)
                status(.failed)
                return
            }
            Log.info("enrolled \(finger.rawValue) of \(claim.username) on \(identity) through fprintd's interface")
            status(.completed)
            seams.userChanged(claim.uid)  // the user's LAEnvironment subscribers hear the new print
        } catch {
            switch session.failure(error) {
            case _ where operation.disconnected, .removed: status(.disconnected)
            case .cancelled: status(operation.timedOut ? .unknownError : .failed)
            case .dataFull: status(.dataFull)
            case .duplicate:
                // The chip's own check: it does not say whose print.
                seams.duplicateChecks.matchedAnotherAccount(asker: asker)
                status(.duplicate)
            case .other:
                Log.warning("fprintd device \(id): enroll failed: \(error)")
                status(.unknownError)
            }
        }
    }
}
