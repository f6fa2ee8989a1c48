internal import CFprint
import DBusCore
import LocalAuthShared

/// A verify or enroll of fprintd's contract, from its Start to its Stop. The
/// scans run as a task of the service's task group, holding the reader through
/// the service's one queue (SensorQueue), so they take turns with LAContext
/// evaluations and enrollments.
@ServiceActor
final class FprintdOperation {
    enum Kind { case verify, enroll }
    let kind: Kind
    let cancellable = Cancellable()
    fileprivate var ticket: SensorQueue.Ticket?
    fileprivate weak var queue: SensorQueue?
    private var done = false
    private var waiters: [CheckedContinuation<Void, Never>] = []
    /// The reader was unplugged: the final status says "disconnected".
    fileprivate(set) var disconnected = false
    /// No finger came in time, or the service ended it (sleep): the final
    /// status is an error, not a no-match.
    fileprivate(set) var timedOut = false
    /// Bounds each wait for a finger; restarted by every scan.
    private var timer: EventLoop.Timer?

    init(_ kind: Kind) { self.kind = kind }

    func cancel() {
        cancellable.cancel()
        if let ticket { queue?.withdraw(ticket) }
    }

    func readerGone() {
        disconnected = true
        cancel()
    }

    /// The service ends the operation (sleep): the client hears an error status.
    func interrupt() {
        timedOut = true
        cancel()
    }

    /// Returns once the scans have ended (at once if they had).
    func finished() async {
        guard !done else { return }
        await withCheckedContinuation { waiters.append($0) }
    }

    fileprivate func finish() {
        done = true
        for waiter in waiters { waiter.resume() }
        waiters = []
    }
}

extension FprintdDevice {
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
        if let refusal = await service.fprintdRefusal(sender: request.sender, uid: claim.uid, reader: identity) {
            throw refusal
        }
        // Re-read after the await.
        _ = try currentClaim(request.sender)
        try refuseWhileBusy()
        guard !server.stopping else { throw FprintdBus.Error.internal("the service is stopping") }
        let operation = FprintdOperation(.verify)
        self.operation = operation
        let sender = request.sender
        // Runs after this call's reply: VerifyFingerSelected follows VerifyStart's answer, as in fprintd.
        service.spawn { [self] in
            emit(FprintdBus.Signal.verifyFingerSelected, [.string(selected)], to: sender)
            await runVerify(operation, gallery: gallery, uid: claim.uid, sender: sender)
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
    private func runVerify(_ operation: FprintdOperation, gallery: [PrintStore.StoredPrint], uid: UInt32, sender: String) async {
        func status(_ result: FprintdBus.VerifyResult) {
            emit(FprintdBus.Signal.verifyStatus, [.string(result.rawValue), .boolean(result.done)], to: sender)
        }
        guard await holdReader(operation, uid: uid, purpose: .evaluation) else { return }
        defer { service.queue.release() }
        operation.restartTimer(service.configuration.fprintdScanTimeout)
        defer { operation.stopTimer() }
        while !operation.cancellable.isCancelled {
            let result: Readers.ScanResult
            do {
                result = try await service.readers.identify(gallery.map(\.print), cancellable: operation.cancellable)
            } catch {
                if operation.disconnected || error.isDevice(FP_DEVICE_ERROR_REMOVED_VALUE) {
                    service.readers.forget()
                    status(.disconnected)
                } else if error.isCancelled {
                    // VerifyStop or Release: nothing more to say. A timeout is an error to report.
                    if operation.timedOut { status(.unknownError) }
                } else {
                    Log.warning("fprintd device \(id): verify failed: \(error)")
                    status(.unknownError)
                }
                return
            }
            switch result {
            case .match(let matched):
                try? service.lockout.reset(uid)
                if let finger = gallery.first(where: { $0.print.pointer == matched.pointer })?.finger {
                    service.lastFinger.remember(finger, for: uid)
                }
                Log.info("fprintd device \(id): uid \(uid) matched")
                status(.match)
                return
            case .noMatch:
                // One lockout for every client (docs/FPRINTD.md): a failed match here counts as one in an app.
                let lockedOut = (try? service.lockout.recordFailure(uid)) ?? true
                Log.notice("failed fingerprint match for uid \(uid) on \(identity) through fprintd's interface "
                           + "(\(service.lockout.failures(of: uid)) of \(LockoutStore.limit) in a row)")
                if lockedOut { Log.warning("biometry locked out for uid \(uid) after \(LockoutStore.limit) failed matches") }
                status(.noMatch)
                return
            case .retry(let kind):
                operation.restartTimer(service.configuration.fprintdScanTimeout)
                status(FprintdBus.VerifyResult(kind))
            }
        }
    }

    /// Waits for the reader in the service's queue; false if the operation ended first.
    fileprivate func holdReader(_ operation: FprintdOperation, uid: UInt32, purpose: SensorQueue.Purpose) async -> Bool {
        let ticket = SensorQueue.Ticket(uid: uid, purpose: purpose)
        operation.ticket = ticket
        operation.queue = service.queue
        guard !operation.cancellable.isCancelled, await service.queue.acquire(ticket) else { return false }
        operation.ticket = nil
        if operation.cancellable.isCancelled {
            service.queue.release()
            return false
        }
        return true
    }

    // MARK: Enroll

    func enrollStart(_ request: FprintdRequest) async throws(DBusError) -> [DBusValue] {
        let claim = try currentClaim(request.sender)
        guard let name = request.arguments[0].string, let finger = FingerName(rawValue: name) else {
            throw FprintdBus.Error.invalidFingername("Invalid finger name")
        }
        try refuseWhileBusy()
        guard service.reachableReaders.contains(identity) else {
            throw FprintdBus.Error.internal(service.noReaderError.message)
        }
        // As fprintd: enrolling a finger again deletes its print first.
        if service.prints.allPrints(of: claim.uid).contains(where: { $0.reader == identity && $0.finger == finger }) {
            try delete(finger, uid: claim.uid)
        }
        guard !server.stopping else { throw FprintdBus.Error.internal("the service is stopping") }
        let operation = FprintdOperation(.enroll)
        self.operation = operation
        let sender = request.sender
        service.spawn { [self] in
            await runEnroll(operation, finger: finger, claim: claim, sender: sender)
            operation.finish()
        }
        return []
    }

    private func runEnroll(_ operation: FprintdOperation, finger: FingerName, claim: Claim, sender: String) async {
        func status(_ result: FprintdBus.EnrollResult) {
            emit(FprintdBus.Signal.enrollStatus, [.string(result.rawValue), .boolean(result.done)], to: sender)
        }
        guard await holdReader(operation, uid: claim.uid, purpose: .enrollment(sender: sender)) else { return }
        defer { service.queue.release() }
        let seconds = service.configuration.fprintdScanTimeout
        operation.restartTimer(seconds)
        defer { operation.stopTimer() }
        do throws(GLibError) {
            // No print twice, for anyone: one identify over every print on this
            // reader first (fprintd's duplicate check, counted as a stage).
            if supportsIdentify {
                while true {
                    let gallery = service.prints.everyPrint(on: identity).map(\.print)
                    let result = try await service.readers.identify(gallery, on: identity, cancellable: operation.cancellable)
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
            let print = try await service.readers.enroll(finger: finger.fpFinger, username: claim.username, on: identity,
                                                         cancellable: operation.cancellable) { stage, retry in
                operation.restartTimer(seconds)
                // The last stage is told by the final status.
                if stage < stages || retry != nil { status(retry.map(FprintdBus.EnrollResult.init) ?? .stagePassed) }
            }
            do {
                try service.prints.saveInFprintdLayout(print, finger: finger, username: claim.username,
                                                       uid: claim.uid, reader: identity)
            } catch {
                Log.error("fprintd device \(id): could not store the print: \(error)")
                status(.failed)
                return
            }
            Log.info("enrolled \(finger.rawValue) of \(claim.username) on \(identity) through fprintd's interface")
            status(.completed)
        } catch {
            if operation.disconnected || error.isDevice(FP_DEVICE_ERROR_REMOVED_VALUE) {
                service.readers.forget()
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

extension FprintdOperation {
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
