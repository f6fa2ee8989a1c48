import DBusCore
import LocalAuthShared

/// FprintdDevice's verify and enroll: VerifyStart/Stop and EnrollStart/Stop,
/// each run as a `FprintdOperation` (FprintdOperation.swift).
extension FprintdDevice {
    // MARK: Starting

    /// Runs `operation` (its body: the one verify or enroll, then the final
    /// status) as a task of the service, and answers Start once it has the
    /// reader open, or with why not. On failure the operation is over.
    private func start(
        _ operation: FprintdOperation, _ body: @escaping @ServiceActor () async -> Void
    ) async throws(ServiceError) {
        self.operation = operation
        spawn {
            await body()
            operation.finish()
        }
        if let refused = await operation.started() {
            if self.operation === operation { self.operation = nil }
            throw refused
        }
    }

    /// Why Start could not take the reader, in fprintd's vocabulary.
    private func startError(_ operation: FprintdOperation, busy: String) -> ServiceError {
        if operation.disconnected { return ServiceError(.failed, "the reader \(identity) is gone") }
        if let reason = operation.interruption ?? (seams.asleep ? .systemSleeping : nil) {
            let refusal = reason == .notAtTheReader ? FprintdRefusal.notAtTheReader : FprintdRefusal.readerUnavailable
            return ServiceError(.permissionDenied, "\(refusal): \(reason.error.message)")
        }
        if operation.cancellable.isCancelled || busy.isEmpty {
            return ServiceError(.failed, "the operation was stopped before it started")
        }
        return ServiceError(.failed, busy)
    }

    // MARK: Verify

    func verifyStart(_ call: Call<FingerNameArgument>) async throws(ServiceError) -> [DBusValue] {
        let request = call.request
        let claim = try currentClaim(request.sender)
        try ContextPolicy.admitFprintdVerify(request, uid: claim.uid)  // docs/POLICY.md
        try refuseWhileBusy()
        // As fprintd's finger_name_to_fp_finger: "any", "" and a name that is
        // no finger's all mean any enrolled finger (not an error).
        let finger = FingerName(rawValue: call.arguments.name)
        // What the first scan compares with, and the finger fprintd reports
        // as selected: "any" when a reader that identifies compares with
        // several prints; else the one print's finger (fprintd 1.94 verifies
        // a user's only print, and names it), on a reader that cannot
        // identify the verify-only rotation's print (the LAContext scan's,
        // not fprintd's "the first finger": docs/FPRINTD.md).
        let selected: String
        switch gallery(uid: claim.uid, finger: finger, caller: request.caller) {
        case .success(let first):
            selected = finger == nil && supportsIdentify && first.count > 1 ? FprintdBus.anyFinger : first[0].finger.rawValue
        case .failure(let refused):
            if case .notEnrolled = refused.kind {
                // fprintd names a finger not enrolled by libfprint's number.
                throw finger.map { ServiceError(.notEnrolled, "No such print \($0.fpFinger)") } ?? refused
            }
            // The rules below say it in fprintd's words.
            selected = finger?.rawValue ?? FprintdBus.anyFinger
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
        let sender = request.sender
        // The one verify operation (Evaluation/Verification.swift), one judged
        // scan long: Start answers once it has the reader open, as fprintd does.
        let verify = verifyRequest(uid: claim.uid, finger: finger, caller: request.caller)
        try await start(operation) { [self] in await runVerify(operation, verify, sender: sender) }
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
    /// bounded by `--scan-timeout` and restarted by a scan to repeat; the
    /// claimer's connection must be at the reader at every scan.
    func verifyRequest(uid: UInt32, finger: FingerName?, caller: CallerRecord) -> Verifier.Job {
        Verifier.Job(
            uid: uid, caller: caller, reader: identity, finger: finger, attempts: 1, queueWait: FprintdOperation.startWait,
            openBy: ContinuousClock.now + .seconds(FprintdOperation.startWait), fingerWait: .eachScan(scanTimeout),
            via: " through fprintd's interface")
    }

    /// Why a verify's Start could not have the reader, in fprintd's vocabulary.
    private func startError(_ operation: FprintdOperation, _ failure: Verifier.Failure) -> ServiceError {
        switch failure {
        case .refused(let refusal) where refusal.kind == .readerCoolingDown:
            return ServiceError(.permissionDenied, "\(FprintdRefusal.readerUnavailable): \(refusal.message)")
        case .refused(let refusal) where refusal.kind == .notAtTheReader:
            return ServiceError(.permissionDenied, "\(FprintdRefusal.notAtTheReader): \(refusal.message)")
        case .notOpened(let error): return startError(operation, notOpened: error)
        default: return startError(operation, busy: "")
        }
    }

    /// Why Start could not have the reader when the gate could not open it (or no turn came).
    private func startError(_ operation: FprintdOperation, notOpened error: ServiceError?) -> ServiceError {
        if operation.waitedTooLong { return startError(operation, busy: "another operation kept the fingerprint reader; try again") }
        // Another program holds it: try again; gone, asleep or stopped: why, in fprintd's words.
        return startError(operation, busy: error?.kind == .readerInUse ? error?.message ?? "" : "")
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
    /// every scan (Verifier.nextGallery), with "not enrolled" in fprintd's words.
    func gallery(uid: UInt32, finger: FingerName?, caller: CallerRecord) -> Result<[EnrolledPrint], ServiceError> {
        do throws(ServiceError) {
            let request = verifyRequest(uid: uid, finger: finger, caller: caller)
            return .success(try seams.verifier.nextGallery(request, on: identity).gallery)
        } catch where error.kind == .la(.biometryNotEnrolled) {
            return .failure(ServiceError(.notEnrolled, finger.map { "No such print \($0.rawValue)" } ?? "No fingerprints enrolled"))
        } catch {
            return .failure(error)
        }
    }

    /// Runs the verify and says how it went in fprintd's statuses: retries
    /// ("verify-retry-scan"…) as they come, then one final status.
    private func runVerify(_ operation: FprintdOperation, _ request: Verifier.Job, sender: String) async {
        func status(_ result: FprintdBus.VerifyResult) {
            emit(FprintdBus.Signal.verifyStatus, [.string(result.rawValue), .boolean(result.done)], to: sender)
        }
        let uid = request.uid
        let result: Verifier.Verdict
        do throws(Verifier.Failure) {
            result = try await seams.verifier.verify(request, for: operation) { progress in
                if case .retry(let kind) = progress { status(FprintdBus.VerifyResult(kind)) }
            }
        } catch {
            ApprovalHistory.current?.fprintdVerified(request, on: identity, result: nil, failure: error,
                                                     interruption: operation.interruption, timedOut: operation.timedOut)
            guard operation.hasStarted else { return operation.start(startError(operation, error)) }
            status(finalStatus(error, operation))
            return
        }
        ApprovalHistory.current?.fprintdVerified(request, on: identity, result: result, failure: nil, interruption: nil, timedOut: false)
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
    private func finalStatus(_ failure: Verifier.Failure, _ operation: FprintdOperation) -> FprintdBus.VerifyResult {
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
        // fprintd 1.94.5's "disconnected": PROTO, REMOVED (unplugged) and TOO_HOT (docs/FPRINTD.md).
        case .readerFailed(_, .removed, _), .readerFailed(_, .protocolError, _), .readerFailed(_, .overheated, _):
            return .disconnected
        case .readerFailed(_, .notFound, _):
            // fprintd 1.94: the chip lacks the print, so it did not match (judged by no scan: counted nowhere).
            return operation.disconnected ? .disconnected : .noMatch
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
        let enroll = enrollRequest(finger, claim: claim, asker: asker)
        try await start(operation) { [self] in await runEnroll(operation, enroll, sender: sender) }
        // Runs after this call's reply: the scans follow EnrollStart's answer.
        spawn { operation.answeredStart() }
        return []
    }

    /// An EnrollStart's request to the one enroll operation, in fprintd's ways.
    private func enrollRequest(_ finger: FingerName, claim: Claim, asker: UInt32) -> Enrollment.Job {
        Enrollment.Job(
            uid: claim.uid, username: claim.username, finger: finger, reader: identity, storesPrints: reader.storesPrints,
            queueWait: FprintdOperation.startWait, openBy: ContinuousClock.now + .seconds(FprintdOperation.startWait),
            fingerWait: scanTimeout,
            // As fprintd: enrolling a finger again deletes its print first (on a
            // reader with storage, its slot on the chip too, with the reader held).
            first: { [self] session throws(ServiceError) in
                guard seams.allPrints(of: claim.uid, on: identity).contains(where: { $0.finger == finger }) else { return }
                try await delete(finger, uid: claim.uid, on: session)
            },
            // fprintd's duplicate check, on a reader that identifies: every
            // print on this reader, the user's own included.
            duplicateCandidates: { [self] in
                guard supportsIdentify else { return nil }
                let own = Set(seams.allPrints(of: claim.uid, on: identity).map(\.stamp))
                return (seams.everyPrint(on: identity), own)
            },
            asker: asker,
            save: { [self] print throws(ServiceError) in
                do {
                    try seams.save(print, finger: finger, username: claim.username, uid: claim.uid, reader: identity)
                } catch {
                    Log.error("fprintd device \(id): could not store the print: \(error)")
                    throw ServiceError(.storageFailed, "could not store the print")
                }
            })
    }

    /// Runs the enrollment and says how it went in fprintd's statuses: each
    /// stage and retry as it comes (the last stage is told by the final
    /// status), then one final status.
    private func runEnroll(_ operation: FprintdOperation, _ request: Enrollment.Job, sender: String) async {
        func status(_ result: FprintdBus.EnrollResult) {
            emit(FprintdBus.Signal.enrollStatus, [.string(result.rawValue), .boolean(result.done)], to: sender)
        }
        var stages = reader.enrollStages
        do throws(Enrollment.Failure) {
            try await seams.enrollment.run(request, for: operation) { event in
                switch event {
                case .readerBusy: break
                case .readerReady(let count): stages = count
                case .duplicateCheckPassed: status(.stagePassed)
                case .stagePassed(let stage): if stage < stages { status(.stagePassed) }
                case .retry(let kind, _): status(FprintdBus.EnrollResult(kind))
                }
            }
        } catch {
            guard operation.hasStarted else { return operation.start(startError(operation, error)) }
            status(finalStatus(error, operation))
            return
        }
        Log.info("enrolled \(request.finger.rawValue) of \(request.username) on \(identity) through fprintd's interface")
        status(.completed)
        seams.userChanged(request.uid)  // the user's LAEnvironment subscribers hear the new print
    }

    /// Why an enroll's Start could not have the reader, in fprintd's vocabulary.
    private func startError(_ operation: FprintdOperation, _ failure: Enrollment.Failure) -> ServiceError {
        switch failure {
        case .refused(let error): return error
        case .notOpened(let error): return startError(operation, notOpened: error)
        default: return startError(operation, busy: "")
        }
    }

    /// The final status of an enrollment that kept no print, as fprintd says
    /// it (fprintd 1.94's enroll_result_to_name), but for an unplugged reader
    /// and the chip's duplicate check (docs/FPRINTD.md).
    private func finalStatus(_ failure: Enrollment.Failure, _ operation: FprintdOperation) -> FprintdBus.EnrollResult {
        if operation.disconnected { return .disconnected }
        switch failure {
        case .duplicate:
            return .duplicate
        case .interrupted, .readerFailed(_, .cancelled, _):
            // EnrollStop, Release, the claimer gone: enroll-failed; no finger in time, sleep: an error.
            return operation.timedOut ? .unknownError : .failed
        // fprintd 1.94.5's "disconnected": PROTO, REMOVED and TOO_HOT.
        case .readerFailed(_, .removed, _), .readerFailed(_, .protocolError, _), .readerFailed(_, .overheated, _):
            return .disconnected
        case .readerFailed(_, .dataFull, _):
            return .dataFull
        case .readerFailed(let error, _, _):
            Log.warning("fprintd device \(id): enroll failed: \(error)")
            return .unknownError
        case .notSaved:
            return .failed
        case .refused(let error), .notOpened(let error):
            Log.warning("fprintd device \(id): enroll ended: \(error.message)")
            return .unknownError
        }
    }
}
