internal import CFprint
import DBusCore
import LocalAuthShared

/// A verify or enroll of fprintd's contract, from its Start to its Stop.
///
/// Sharing the reader: a Claim holds nothing (fprintd opens the device on
/// Claim and keeps it until Release, which would lock every app and other
/// program out for as long as a lock screen sits claimed). VerifyStart and
/// EnrollStart take the reader for their operation only, as every operation
/// here does: a turn in the service's one queue (SensorQueue, fair between
/// users), then the device opened (`Readers.acquire`); both before the call
/// answers, so "started" means the reader is open and waiting for a finger,
/// as it is in fprintd, and a reader that cannot be had is the call's error.
/// The reader is given back with the operation's final status (not at
/// VerifyStop), and closes after the linger. Sleep and the lid end the
/// operation through its queue ticket, as they end an evaluation.
@ServiceActor
final class FprintdOperation {
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
    private func begin(_ operation: FprintdOperation) async throws(DBusError) -> Readers.Reader {
        self.operation = operation
        do throws(DBusError) {
            return try await takeReader(for: operation)
        } catch {
            if self.operation === operation { self.operation = nil }
            operation.finish()
            throw error
        }
    }

    private func takeReader(for operation: FprintdOperation) async throws(DBusError) -> Readers.Reader {
        let queue = service.queue
        let deadline = ContinuousClock.now + .seconds(FprintdOperation.startWait)
        let waitLimit = EventLoopTimers.after(FprintdOperation.startWait) { [queue, ticket = operation.ticket] in
            queue.withdraw(ticket)
        }
        let acquired = await queue.acquire(operation.ticket)
        waitLimit.cancel()
        guard acquired else { throw startError(operation, busy: "another operation kept the fingerprint reader") }
        do throws(Readers.AccessError) {
            guard !operation.cancellable.isCancelled else { throw .cancelled }
            return try await service.readers.acquire(identity, until: deadline, cancellable: operation.cancellable, busy: {})
        } catch {
            queue.release()
            switch error {
            case .removed: throw FprintdBus.Error.internal("the reader \(identity) is gone")
            case .suspended, .cancelled: throw startError(operation, busy: "")
            case .heldByAnotherProgram(let why):
                throw startError(operation, busy: "the fingerprint reader is in use by another program (\(why))")
            }
        }
    }

    /// Why Start could not take the reader, in fprintd's vocabulary.
    private func startError(_ operation: FprintdOperation, busy: String) -> DBusError {
        if operation.disconnected { return FprintdBus.Error.internal("the reader \(identity) is gone") }
        if let reason = operation.interruption ?? (service.environment.asleep ? .systemSleeping : nil) {
            return FprintdBus.Error.permissionDenied("\(FprintdRefusal.readerUnavailable): \(reason.error.message)")
        }
        if operation.cancellable.isCancelled || busy.isEmpty {
            return FprintdBus.Error.internal("the operation was stopped before it started")
        }
        return FprintdBus.Error.internal("\(busy); try again")
    }

    /// The operation's reader goes back: the queue's next, the device closing after the linger.
    private func end(_ operation: FprintdOperation, _ device: Readers.Reader) {
        operation.stopTimer()
        service.readers.relinquish(device)
        service.queue.release()
    }

    // MARK: Verify

    func verifyStart(_ request: FprintdRequest) async throws(DBusError) -> [DBusValue] {
        let claim = try currentClaim(request.sender)
        try refuseWhileBusy()
        let name = request.arguments[0].string ?? ""
        let stored = service.prints.prints(of: claim.uid, for: identity)
        let gallery: [PrintStore.StoredPrint]
        let selected: String
        if name == FprintdBus.anyFinger {
            guard !stored.isEmpty else { throw FprintdBus.Error.noEnrolledPrints("No fingerprints enrolled") }
            // A reader that can identify takes every finger; one that cannot, the first (as fprintd).
            gallery = supportsIdentify ? stored : [stored[0]]
            selected = supportsIdentify ? FprintdBus.anyFinger : stored[0].finger.rawValue
        } else {
            guard let finger = FingerName(rawValue: name) else {
                throw FprintdBus.Error.invalidFingername("Invalid finger name \(ServiceErrors.echo(name))")
            }
            guard let print = stored.first(where: { $0.finger == finger }) else {
                throw FprintdBus.Error.noEnrolledPrints("No such print \(finger.rawValue)")
            }
            gallery = [print]
            selected = finger.rawValue
        }
        // The same rules as an LAContext evaluation, in fprintd's vocabulary.
        if let refusal = await refusal(request.caller, uid: claim.uid, reader: identity) {
            throw refusal
        }
        // Re-read after the await.
        _ = try currentClaim(request.sender)
        try refuseWhileBusy()
        guard !server.stopping else { throw FprintdBus.Error.internal("the service is stopping") }
        let operation = FprintdOperation(.verify, uid: claim.uid, purpose: .evaluation, reader: identity,
                                         queue: service.queue)
        let device = try await begin(operation)
        let sender = request.sender
        // Runs after this call's reply: VerifyFingerSelected follows VerifyStart's answer, as in fprintd.
        service.spawn { [self] in
            emit(FprintdBus.Signal.verifyFingerSelected, [.string(selected)], to: sender)
            await runVerify(operation, on: device, gallery: gallery, uid: claim.uid, sender: sender)
            end(operation, device)
            operation.finish()
        }
        return []
    }

    private func refuseWhileBusy() throws(DBusError) {
        switch operation?.kind {
        case nil: return
        case .verify?: throw FprintdBus.Error.alreadyInUse("Verification already in progress")
        case .enroll?: throw FprintdBus.Error.alreadyInUse("Enrollment already in progress")
        }
    }

    func verifyStop(_ request: FprintdRequest) async throws(DBusError) -> [DBusValue] {
        try await stop(.verify, request)
    }

    func enrollStop(_ request: FprintdRequest) async throws(DBusError) -> [DBusValue] {
        try await stop(.enroll, request)
    }

    private func stop(_ kind: FprintdOperation.Kind, _ request: FprintdRequest) async throws(DBusError) -> [DBusValue] {
        _ = try currentClaim(request.sender)
        guard let operation else {
            throw FprintdBus.Error.noActionInProgress(kind == .verify ? "No verification in progress" : "No enrollment in progress")
        }
        guard operation.kind == kind else { throw FprintdBus.Error.alreadyInUse("Another operation is already in progress") }
        operation.cancel()
        await operation.finished()
        if self.operation === operation { self.operation = nil }
        return []
    }

    /// Scans until a match, a no-match or an error; retries ("verify-retry-scan"…) scan again.
    private func runVerify(_ operation: FprintdOperation, on device: Readers.Reader, gallery: [PrintStore.StoredPrint],
                           uid: UInt32, sender: String) async {
        func status(_ result: FprintdBus.VerifyResult) {
            emit(FprintdBus.Signal.verifyStatus, [.string(result.rawValue), .boolean(result.done)], to: sender)
        }
        operation.restartTimer(service.configuration.fprintdScanTimeout)
        while !operation.cancellable.isCancelled {
            let result: Readers.ScanResult
            do {
                result = try await service.readers.identify(gallery.map(\.print), on: device, cancellable: operation.cancellable)
            } catch {
                if operation.disconnected || error.isDevice(FP_DEVICE_ERROR_REMOVED_VALUE) {
                    service.readers.forget(device)
                    status(.disconnected)
                } else if error.isCancelled {
                    // VerifyStop or Release: fprintd's final status for a cancelled
                    // verify is verify-no-match (nothing was judged, nothing counts),
                    // sent before their reply. A timeout or sleep is an error to report.
                    status(operation.timedOut ? .unknownError : .noMatch)
                } else {
                    Log.warning("fprintd device \(id): verify failed: \(error)")
                    status(.unknownError)
                }
                return
            }
            switch result {
            case .match(let matched):
                service.evaluator.scanMatched(uid, finger: gallery.first(where: { $0.print.pointer == matched.pointer })?.finger)
                Log.info("fprintd device \(id): uid \(uid) matched")
                // pam_fprintd's match, seen here: a nonce-less ticket for its process (LoginSecret/, docs/KEYRING.md).
                if let caller = service.callers.known(sender) { service.loginSecrets.matchSeen(uid: uid, caller: LoginSecretCaller(caller), nonce: []) }
                status(.match)
                service.environment.callEnded()  // the lockout reset: the user's LAEnvironment subscribers
                return
            case .noMatch:
                // One lockout for every client (docs/FPRINTD.md): a failed match here counts as one in an app.
                let lockedOut = (try? service.evaluator.scanDidNotMatch(uid)) ?? true
                Log.notice("failed fingerprint match for uid \(uid) on \(identity) through fprintd's interface "
                           + "(\(service.evaluator.failedMatches(of: uid)) of \(LockoutStore.limit) in a row)")
                if lockedOut { Log.warning("biometry locked out for uid \(uid) after \(LockoutStore.limit) failed matches") }
                status(.noMatch)
                service.environment.callEnded()  // the lockout count: the user's LAEnvironment subscribers
                return
            case .retry(let kind):
                operation.restartTimer(service.configuration.fprintdScanTimeout)
                status(FprintdBus.VerifyResult(kind))
            }
        }
    }

    // MARK: Enroll

    func enrollStart(_ request: FprintdRequest) async throws(DBusError) -> [DBusValue] {
        let claim = try currentClaim(request.sender)
        guard let name = request.arguments[0].string, let finger = FingerName(rawValue: name) else {
            throw FprintdBus.Error.invalidFingername("Invalid finger name")
        }
        try refuseWhileBusy()
        guard service.readerChoice.reachableReaders.contains(identity) else {
            throw FprintdBus.Error.internal(service.readerChoice.noReaderError.message)
        }
        guard !server.stopping else { throw FprintdBus.Error.internal("the service is stopping") }
        let sender = request.sender
        let operation = FprintdOperation(.enroll, uid: claim.uid, purpose: .enrollment(sender: sender), reader: identity,
                                         queue: service.queue)
        let device = try await begin(operation)
        // As fprintd: enrolling a finger again deletes its print first (on a
        // reader with storage, its slot on the chip too, with the reader held).
        if service.prints.allPrints(of: claim.uid).contains(where: { $0.reader == identity && $0.finger == finger }) {
            do throws(DBusError) {
                try await delete(finger, uid: claim.uid, on: device)
            } catch {
                end(operation, device)
                if self.operation === operation { self.operation = nil }
                operation.finish()
                throw error
            }
        }
        service.spawn { [self] in
            await runEnroll(operation, on: device, finger: finger, claim: claim, sender: sender)
            end(operation, device)
            operation.finish()
        }
        return []
    }

    private func runEnroll(_ operation: FprintdOperation, on device: Readers.Reader, finger: FingerName, claim: Claim,
                           sender: String) async {
        func status(_ result: FprintdBus.EnrollResult) {
            emit(FprintdBus.Signal.enrollStatus, [.string(result.rawValue), .boolean(result.done)], to: sender)
        }
        let seconds = service.configuration.fprintdScanTimeout
        operation.restartTimer(seconds)
        do throws(GLibError) {
            // No print twice, for anyone: one identify over every print on this
            // reader first (fprintd's duplicate check, counted as a stage).
            if supportsIdentify {
                while true {
                    let gallery = service.prints.everyPrint(on: identity).map(\.print)
                    let result = try await service.readers.identify(gallery, on: device, cancellable: operation.cancellable)
                    operation.restartTimer(seconds)
                    switch result {
                    case .match:
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
            let stages = service.readers.enrollStages(on: identity)
            let print = try await service.readers.enroll(finger: finger.fpFinger, username: claim.username, on: device,
                                                         cancellable: operation.cancellable) { stage, retry in
                operation.restartTimer(seconds)
                // The last stage is told by the final status.
                if stage < stages || retry != nil { status(retry.map(FprintdBus.EnrollResult.init) ?? .stagePassed) }
            }
            // The claimer left (or Release, SIGTERM) while the last stage
            // completed: no print is saved for a claim that has ended.
            guard !operation.cancellable.isCancelled else {
                if device.storesPrints { try? await service.readers.deleteFromChip(print, on: device) }
                status(.failed)
                return
            }
            do {
                try service.prints.saveInFprintdLayout(print, finger: finger, username: claim.username,
                                                       uid: claim.uid, reader: identity)
            } catch {
                Log.error("fprintd device \(id): could not store the print: \(error)")
                // A print that no file owns must not keep a slot on the chip.
                try? await service.readers.deleteFromChip(print, on: device)
                status(.failed)
                return
            }
            Log.info("enrolled \(finger.rawValue) of \(claim.username) on \(identity) through fprintd's interface")
            status(.completed)
            service.environment.userChanged(claim.uid)
            service.environment.callEnded()  // the user's LAEnvironment subscribers hear the new print
        } catch {
            if operation.disconnected || error.isDevice(FP_DEVICE_ERROR_REMOVED_VALUE) {
                service.readers.forget(device)
                status(.disconnected)
            } else if error.isCancelled {
                status(operation.timedOut ? .unknownError : .failed)
            } else if error.isDevice(FP_DEVICE_ERROR_DATA_FULL_VALUE) {
                status(.dataFull)
            } else if error.isDevice(FP_DEVICE_ERROR_DATA_DUPLICATE_VALUE) {
                status(.duplicate)
            } else {
                Log.warning("fprintd device \(id): enroll failed: \(error)")
                status(.unknownError)
            }
        }
    }
}
