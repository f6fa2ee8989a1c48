internal import CFprint
import DBusCore
import LocalAuthShared

// The Enrollment component: enrolling a finger (Enroll, EnrollWithOptions,
// with the EnrollStatus signal), listing and deleting prints
// (EnrollerPrints.swift) and the prints on readers' chips
// (EnrollerChips.swift). It holds no state between calls: the prints are the
// print store's, the reader's turn the queue's; it reaches both through its
// seams (EnrollerSeams.swift). Whose prints a call is about (the `user`
// option) was settled by polkit before: the handlers get the target uid.
@ServiceActor
final class Enroller {
    let seams: any EnrollerSeams
    let prints: any EnrollerPrints
    /// The one enroll operation (both contracts).
    let enrollment: Enrollment
    /// Bounds each wait for a finger (`--scan-timeout`).
    private let scanTimeout: Double
    /// The match oracle of the check before enrolling on a chip, bounded per uid.
    let duplicateChecks: DuplicateCheckBudget

    init(
        seams: any EnrollerSeams, prints: any EnrollerPrints, enrollment: Enrollment, scanTimeout: Double,
        duplicateChecks: DuplicateCheckBudget
    ) {
        self.seams = seams
        self.prints = prints
        self.enrollment = enrollment
        self.scanTimeout = scanTimeout
        self.duplicateChecks = duplicateChecks
    }

    static let duplicateError = ServiceError(
        .duplicatePrint,
        "this finger is already enrolled on the fingerprint reader; enroll another finger")
    static let chipFullError = ServiceError(
        .readerStorageFull,
        "the fingerprint reader's memory is full; delete an enrolled finger, or ask an administrator "
            + "to remove the prints no account owns (localauthctl reader-prints --clean)")

    // MARK: Enrollment

    /// Enroll(s finger): the caller's own finger, never replacing.
    func enroll(_ arguments: EnrollArguments, caller: CallerRecord, record: CallRecord) async throws(ServiceError) {
        try await enroll(arguments.finger, replace: false, caller: caller, target: caller.uid, record: record)
    }

    /// EnrollWithOptions(s finger, a{sv} options): `user` (settled: `target`), `replace`.
    func enroll(
        _ arguments: EnrollWithOptionsArguments, caller: CallerRecord, target: UInt32,
        record: CallRecord
    ) async throws(ServiceError) {
        try await enroll(
            arguments.finger, replace: arguments.options.replace, caller: caller, target: target,
            record: record)
    }

    /// LocalAuth's front-end of the one enroll operation (Enrollment.swift):
    /// its refusals before the reader, its request (replace frees the old
    /// print's chip slot first; the duplicate check on a chip that does not
    /// check itself; our store), its EnrollStatus signals and its errors.
    private func enroll(
        _ finger: FingerName, replace: Bool, caller: CallerRecord, target uid: UInt32,
        record: CallRecord
    ) async throws(ServiceError) {
        guard let reader = seams.reader(for: uid) else { throw seams.noReaderError }
        if !replace { try refuseEnrolled(finger, uid: uid, reader: reader) }
        guard !seams.isEnrolling(caller.sender) else {
            throw ServiceError(.busy, "this caller is already enrolling")
        }
        // The call's own cancellable: a vanish, or SIGTERM, at any moment since
        // the call arrived ends the enrollment, and a print is never stored
        // for a caller who left.
        try record.checkNotEnded()
        // A reader that keeps prints on its chip checks the finger against
        // every account's prints first (or refuses a duplicate itself): one
        // of the caller's duplicate checks today, before the reader is touched.
        let storesPrints = seams.storesPrints(reader)
        if storesPrints { try duplicateChecks.spend(for: caller.uid) }
        let call = Enroller.Run(record: record, uid: caller.uid, sender: caller.sender, reader: reader)
        let sender = caller.sender
        var stages: UInt32?
        do throws(Enrollment.Failure) {
            try await enrollment.run(
                request(finger, replace: replace, uid: uid, asker: caller.uid, reader: reader, storesPrints: storesPrints),
                for: call
            ) { [weak self] event in
                guard let self else { return }
                switch event {
                case .readerBusy: emitStatus(sender, .readerBusy, 0, 0)
                case .readerReady(let count):
                    stages = UInt32(count)
                    emitStatus(sender, .placeFinger, 0, UInt32(count))
                case .duplicateCheckPassed: break
                case .stagePassed(let stage): emitStatus(sender, .stagePassed, UInt32(stage), stages ?? 0)
                case .retry(let kind, let stage): emitStatus(sender, kind.enrollProgress, UInt32(stage), stages ?? 0)
                }
            }
        } catch {
            if let stages { emitStatus(sender, Self.finalStatus(error), Self.finalStage(error, stages), stages) }
            throw self.error(error, call)
        }
        emitStatus(sender, .completed, stages ?? 0, stages ?? 0)
        Log.info("enrolled \(finger.rawValue) of uid \(uid) on \(reader)" + (uid != caller.uid ? ", asked by uid \(caller.uid)" : ""))
    }

    /// An Enroll's request to the one enroll operation.
    private func request(
        _ finger: FingerName, replace: Bool, uid: UInt32, asker: UInt32, reader: Readers.Identity, storesPrints: Bool
    ) -> Enrollment.Job {
        let ours = { [prints] in
            prints.allPrints(of: uid).filter { $0.finger == finger && prints.isOurs($0) && $0.reader == reader }
        }
        return Enrollment.Job(
            uid: uid, username: Users.name(of: uid) ?? String(uid), finger: finger, reader: reader,
            storesPrints: storesPrints, queueWait: ServiceLimits.readerQueueWait, fingerWait: scanTimeout,
            // A match-on-chip reader: replacing frees the old print's slot first.
            first: { session throws(ServiceError) in
                guard replace, storesPrints, let old = ours().first else { return }
                try await Self.deleteFromChip(old, on: session)
            },
            // Then the finger must not be on the chip already, for any account
            // (a reader that checks duplicates itself refuses it in its enroll).
            duplicateCandidates: { [prints, seams] in
                guard storesPrints, !seams.checksDuplicates(reader) else { return nil }
                let replaced = Set(prints.allPrints(of: uid).filter { $0.finger == finger }.map(\.path))
                let gallery = prints.everyPrint(on: reader).filter { !replaced.contains($0.path) }.map(\.enrolled)
                guard !gallery.isEmpty else { return nil }
                return (gallery, Set(prints.allPrints(of: uid).map(\.stamp)))
            },
            asker: asker,
            save: { [self] print throws(ServiceError) in
                // Someone else may have enrolled this finger meanwhile.
                if !replace { try refuseEnrolled(finger, uid: uid, reader: reader) }
                // The prints came from a LibfprintReaderSession: libfprint's own.
                guard let print = print as? GObjectRef else { throw ServiceError(.storageFailed, "not a libfprint print") }
                do {
                    let stored = try prints.save(print, finger: finger, uid: uid, reader: reader)
                    Log.info("print \(stored.id.prefix(8)) of uid \(uid) saved")
                } catch {
                    throw ServiceError(.storageFailed, "could not store the print: \(error)")
                }
            })
    }

    /// The EnrollStatus an enrollment that kept no print ends with, and at which stage.
    private static func finalStatus(_ failure: Enrollment.Failure) -> EnrollProgress {
        switch failure {
        case .duplicate: .duplicate
        case .readerFailed(_, .dataFull, _): .dataFull
        default: .failed
        }
    }

    private static func finalStage(_ failure: Enrollment.Failure, _ stages: UInt32) -> UInt32 {
        if case .notSaved = failure { return stages }
        return 0
    }

    /// The caller's error for an enrollment that kept no print: its own end
    /// first (no finger in time, the queue, Cancel, the caller gone), then why.
    private func error(_ failure: Enrollment.Failure, _ call: Enroller.Run) -> ServiceError {
        if call.stopped == .timedOut { return ServiceErrors.la(.systemCancel, "no finger was presented in time") }
        switch failure {
        case .refused(let error), .notOpened(let error), .notSaved(let error):
            return error
        case .duplicate:
            return Self.duplicateError
        case .interrupted, .readerFailed(_, .cancelled, _):
            if let interruption = call.record.interruption { return interruption.error }
            if call.stopped == .queueTimedOut { return Interruption.queueTimedOut.error }
            return ServiceErrors.la(.systemCancel, "enrollment cancelled")
        case .readerFailed(_, .dataFull, _):
            return Self.chipFullError
        case .readerFailed(let error, _, let unusable):
            return unusable ?? ServiceErrors.la(.systemCancel, "enrollment failed: \(error.message)")
        }
    }

    /// AlreadyEnrolled if `finger` of `uid` is offered on `reader`, from either source.
    private func refuseEnrolled(_ finger: FingerName, uid: UInt32, reader: Readers.Identity) throws(ServiceError) {
        guard let existing = prints.prints(of: uid, for: reader).first(where: { $0.finger == finger }) else { return }
        throw ServiceError(
            .alreadyEnrolled,
            "\(finger.rawValue) is already enrolled on \(reader)"
                + (existing.source == .fprintd ? " (with fprintd)" : "") + "; ask to replace it to enroll it again")
    }

    private func emitStatus(_ destination: String, _ progress: EnrollProgress, _ stage: UInt32, _ stages: UInt32) {
        seams.emitEnrollStatus(to: destination, progress, stage: stage, stages: stages)
    }
}

extension Enroller {
    /// An Enroll call as the one enroll operation sees it: the call's record
    /// (what ends it) and its place in the reader queue.
    @ServiceActor
    final class Run: ReaderCall {
        let record: CallRecord
        let ticket: SensorQueue.Ticket
        /// No turn in the queue in time, or no finger in time.
        private(set) var stopped: Interruption?

        init(record: CallRecord, uid: UInt32, sender: String, reader: Readers.Identity) {
            self.record = record
            ticket = SensorQueue.Ticket(uid: uid, purpose: .enrollment(sender: sender))
            ticket.reader = reader
            ticket.interrupt = { reason in record.interrupt(reason) }
        }

        var cancellable: Cancellable { record.cancellable }
        var biometricInterruption: Interruption? { record.interruption ?? stopped }

        var hasEnded: Bool {
            do throws(ServiceError) {
                try record.checkNotEnded()
                return false
            } catch {
                return true
            }
        }

        func stopBiometrics(_ reason: Interruption) {
            if stopped == nil { stopped = reason }
            // The queue's wait is withdrawn by the operation; a wait for a finger ends the scan.
            if reason != .queueTimedOut { record.cancellable.cancel() }
        }
    }
}
