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
    /// Bounds each wait for a finger (`--scan-timeout`).
    private let scanTimeout: Double
    /// The match oracle of the check before enrolling on a chip, bounded per uid.
    let duplicateChecks: DuplicateCheckBudget

    init(seams: any EnrollerSeams, prints: any EnrollerPrints, scanTimeout: Double, duplicateChecks: DuplicateCheckBudget) {
        self.seams = seams
        self.prints = prints
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
        let cancellable = record.cancellable
        try record.checkNotEnded()
        // A reader that keeps prints on its chip checks the finger against
        // every account's prints first (or refuses a duplicate itself): one
        // of the caller's duplicate checks today, before the reader is touched.
        if seams.storesPrints(reader) { try duplicateChecks.spend(for: caller.uid) }
        let ticket = SensorQueue.Ticket(uid: caller.uid, purpose: .enrollment(sender: caller.sender))
        ticket.reader = reader
        ticket.interrupt = { reason in record.interrupt(reason) }
        guard await seams.acquireTurn(ticket) else { throw Evaluation.Interruption.queueTimedOut.error }
        defer { seams.releaseTurn() }
        try record.checkNotEnded()
        if cancellable.isCancelled { throw ServiceErrors.la(.systemCancel, "enrollment cancelled") }
        // While this caller waited, the reader may have gone.
        guard seams.isReachable(reader) else { throw ServiceErrors.noReader }
        let sender = caller.sender
        let device = try await seams.open(
            reader, cancellable: cancellable, interruption: { record.interruption },
            busy: { [weak self] in self?.emitStatus(sender, .readerBusy, 0, 0) })
        defer { seams.relinquish(device) }
        // A match-on-chip reader: replacing frees the old print's slot first;
        // then the finger must not be on the chip already, for any account.
        if replace, device.storesPrints,
            let old = prints.allPrints(of: uid).first(where: { $0.finger == finger && prints.isOurs($0) && $0.reader == reader })
        {
            try await deleteFromChip(old, on: device)
        }
        let stages = UInt32(seams.enrollStages(on: reader))
        // Each scan has the scan timeout; every stage or retry restarts it.
        let timer = ScanTimer(seconds: scanTimeout, cancellable: cancellable)
        defer { timer.stop() }
        emitStatus(sender, .placeFinger, 0, stages)
        do throws(ServiceError) {
            try await refuseDuplicateOnChip(device, except: (uid, finger), asker: caller.uid, cancellable: cancellable)
        } catch {
            emitStatus(sender, error.kind == .duplicatePrint ? .duplicate : .failed, 0, stages)
            if timer.expired { throw ServiceErrors.la(.systemCancel, "no finger was presented in time") }
            throw error
        }
        timer.restart()
        let username = Users.name(of: uid) ?? String(uid)
        do {
            let print = try await seams.enroll(
                finger, username: username, on: device,
                cancellable: cancellable
            ) { [weak self] stage, retry in
                timer.restart()
                let progress: EnrollProgress = retry.map(\.enrollProgress) ?? .stagePassed
                self?.emitStatus(sender, progress, UInt32(stage), stages)
            }
            timer.stop()
            // Someone else may have enrolled this finger meanwhile.
            if !replace {
                do throws(ServiceError) {
                    try refuseEnrolled(finger, uid: uid, reader: reader)
                } catch {
                    emitStatus(sender, .failed, stages, stages)
                    throw error
                }
            }
            // The caller may have left during the last scan: store nothing for them.
            try record.checkNotEnded()
            let stored: PrintFile
            do {
                stored = try prints.save(print, finger: finger, uid: uid, reader: reader)
            } catch {
                emitStatus(sender, .failed, stages, stages)
                throw ServiceError(.storageFailed, "could not store the print: \(error)")
            }
            emitStatus(sender, .completed, stages, stages)
            Log.info(
                "enrolled \(finger.rawValue) of uid \(uid) on \(reader) (print \(stored.id.prefix(8)))"
                    + (uid != caller.uid ? ", asked by uid \(caller.uid)" : ""))
        } catch let error as ServiceError {
            throw error
        } catch {
            guard let failure = error as? GLibError else {
                emitStatus(sender, .failed, 0, stages)
                throw ServiceErrors.la(.systemCancel, "enrollment failed: \(error)")
            }
            emitStatus(
                sender,
                failure.isDevice(FP_DEVICE_ERROR_DATA_FULL_VALUE)
                    ? .dataFull
                    : failure.isDevice(FP_DEVICE_ERROR_DATA_DUPLICATE_VALUE) ? .duplicate : .failed, 0, stages)
            if timer.expired { throw ServiceErrors.la(.systemCancel, "no finger was presented in time") }
            if failure.isDevice(FP_DEVICE_ERROR_DATA_FULL_VALUE) { throw Self.chipFullError }
            if failure.isDevice(FP_DEVICE_ERROR_DATA_DUPLICATE_VALUE) {
                // The chip's own check: it does not say whose print.
                duplicateChecks.matchedAnotherAccount(asker: caller.uid)
                throw Self.duplicateError
            }
            if failure.isCancelled { throw ServiceErrors.la(.systemCancel, "enrollment cancelled") }
            if let unusable = seams.unusable(failure, device) { throw unusable }
            throw ServiceErrors.la(.systemCancel, "enrollment failed: \(failure.message)")
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

/// Bounds each wait for a finger during an enrollment; restarted by every
/// stage or retry, so a slow person is not cut off between scans.
@ServiceActor
private final class ScanTimer {
    private let seconds: Double
    private let cancellable: Cancellable
    private var timer: EventLoop.Timer?
    private(set) var expired = false

    init(seconds: Double, cancellable: Cancellable) {
        self.seconds = seconds
        self.cancellable = cancellable
        restart()
    }

    func restart() {
        timer?.cancel()
        timer = EventLoopTimers.after(seconds) { [weak self] in
            guard let self else { return }
            self.expired = true
            self.cancellable.cancel()
        }
    }

    func stop() {
        timer?.cancel()
        timer = nil
    }
}
