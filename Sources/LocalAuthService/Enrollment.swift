import DBusCore
import LocalAuthShared

// Enrollment, listing and deletion of prints, and the options that say whose
// prints a call is about (the `user` option needs the manage action: Authorization.swift).
extension LocalAuthService {
    // MARK: Whose prints, and may the caller touch them

    /// The options of EnrollWithOptions, ListEnrolledPrints and Delete…WithOptions.
    struct PrintOptions {
        /// Another user, by name (nil: the caller).
        var user: String?
        var replace = false
    }

    nonisolated static func printOptions(_ value: DBusValue) throws(ServiceError) -> PrintOptions {
        guard let entries = value.stringKeyedDictionary else { throw ServiceErrors.invalidArgs("options must be a{sv}") }
        var options = PrintOptions()
        for (key, value) in entries {
            switch key {
            case LocalAuthBus.PrintOption.user:
                guard let name = value.string else { throw ServiceErrors.invalidArgs("user must be a string (a user name)") }
                guard !name.isEmpty, name.utf8.count <= 256 else { throw ServiceErrors.invalidArgs("user must be 1 to 256 bytes") }
                options.user = name
            case LocalAuthBus.PrintOption.replace:
                guard let flag = value.bool else { throw ServiceErrors.invalidArgs("replace must be a boolean") }
                options.replace = flag
            default:
                continue   // forward compatibility, as for EvaluatePolicy
            }
        }
        return options
    }

    // MARK: Enrollment

    static func finger(_ value: DBusValue) throws(ServiceError) -> FingerName {
        guard let name = value.string, let finger = FingerName(rawValue: name) else {
            throw ServiceErrors.invalidArgs("unknown finger \(ServiceErrors.echo(value.string ?? "?")); use one of "
                + FingerName.allCases.map(\.rawValue).joined(separator: ", "))
        }
        return finger
    }

    /// Enroll(s finger): the caller's own finger, never replacing.
    func enroll(_ request: Request) async throws(ServiceError) -> [DBusValue] {
        try await enroll(request, finger: try Self.finger(request.arguments[0]), replace: false)
    }

    /// EnrollWithOptions(s finger, a{sv} options): `user`, `replace`.
    func enrollWithOptions(_ request: Request) async throws(ServiceError) -> [DBusValue] {
        let finger = try Self.finger(request.arguments[0])
        let options = try Self.printOptions(request.arguments[1])
        return try await enroll(request, finger: finger, replace: options.replace)
    }

    private func enroll(_ request: Request, finger: FingerName, replace: Bool) async throws(ServiceError) -> [DBusValue] {
        let uid = request.target
        guard let reader = reader(for: uid) else { throw noReaderError }
        if !replace { try refuseEnrolled(finger, uid: uid, reader: reader) }
        guard !queue.isEnrolling(request.sender) else {
            throw ServiceError(.busy, "this caller is already enrolling")
        }
        // The call's own cancellable: a vanish, or SIGTERM, at any moment since
        // the call arrived ends the enrollment, and a print is never stored
        // for a caller who left.
        let cancellable = request.record.cancellable
        try request.record.checkNotEnded()
        let ticket = SensorQueue.Ticket(uid: request.uid, purpose: .enrollment(sender: request.sender))
        ticket.reader = reader
        ticket.interrupt = { [record = request.record] reason in record.interrupt(reason) }
        let waitLimit = EventLoopTimers.after(ServiceLimits.readerQueueWait) { [queue] in queue.withdraw(ticket) }
        let acquired = await queue.acquire(ticket)
        waitLimit.cancel()
        guard acquired else { throw Evaluation.Interruption.queueTimedOut.error }
        defer { queue.release() }
        try request.record.checkNotEnded()
        if cancellable.isCancelled { throw ServiceErrors.la(.systemCancel, "enrollment cancelled") }
        // While this caller waited, the reader may have gone.
        guard reachableReaders.contains(reader) else { throw ServiceErrors.noReader }
        let sender = request.sender
        let device = try await openReader(reader, cancellable: cancellable,
                                          interruption: { [record = request.record] in record.interruption },
                                          busy: { [weak self] in self?.emitEnrollStatus(sender, .readerBusy, 0, 0) })
        defer { readers.relinquish(device) }
        // A match-on-chip reader: replacing frees the old print's slot first;
        // then the finger must not be on the chip already, for any account.
        if replace, device.storesPrints,
           let old = prints.allPrints(of: uid).first(where: { $0.finger == finger && prints.isOurs($0) && $0.reader == reader }) {
            try await deleteFromChip(old, on: device)
        }
        let stages = UInt32(readers.enrollStages(on: reader))
        // Each scan has the scan timeout; every stage or retry restarts it.
        let timer = ScanTimer(seconds: configuration.scanTimeout, cancellable: cancellable)
        defer { timer.stop() }
        emitEnrollStatus(sender, .placeFinger, 0, stages)
        do throws(ServiceError) {
            try await refuseDuplicateOnChip(device, except: (uid, finger), cancellable: cancellable)
        } catch {
            emitEnrollStatus(sender, error.kind == .duplicatePrint ? .duplicate : .failed, 0, stages)
            if timer.expired { throw ServiceErrors.la(.systemCancel, "no finger was presented in time") }
            throw error
        }
        timer.restart()
        let username = Users.name(of: uid) ?? String(uid)
        do {
            let print = try await readers.enroll(finger: finger.fpFinger, username: username, on: device,
                                                cancellable: cancellable) { [weak self] stage, retry in
                timer.restart()
                let progress: EnrollProgress = retry.map(\.enrollProgress) ?? .stagePassed
                self?.emitEnrollStatus(sender, progress, UInt32(stage), stages)
            }
            timer.stop()
            // Someone else may have enrolled this finger meanwhile.
            if !replace {
                do throws(ServiceError) {
                    try refuseEnrolled(finger, uid: uid, reader: reader)
                } catch {
                    emitEnrollStatus(sender, .failed, stages, stages)
                    throw error
                }
            }
            // The caller may have left during the last scan: store nothing for them.
            try request.record.checkNotEnded()
            let stored: PrintFile
            do {
                stored = try prints.save(print, finger: finger, uid: uid, reader: reader)
            } catch {
                emitEnrollStatus(sender, .failed, stages, stages)
                throw ServiceError(.storageFailed, "could not store the print: \(error)")
            }
            emitEnrollStatus(sender, .completed, stages, stages)
            Log.info("enrolled \(finger.rawValue) of uid \(uid) on \(reader) (print \(stored.id.prefix(8)))"
                     + (request.target != request.uid ? ", asked by uid \(request.uid)" : ""))
            return []
        } catch let error as ServiceError {
            throw error
        } catch {
            guard let failure = error as? GLibError else {
                emitEnrollStatus(sender, .failed, 0, stages)
                throw ServiceErrors.la(.systemCancel, "enrollment failed: \(error)")
            }
            emitEnrollStatus(sender, failure.isDevice(FP_DEVICE_ERROR_DATA_FULL_VALUE) ? .dataFull
                         : failure.isDevice(FP_DEVICE_ERROR_DATA_DUPLICATE_VALUE) ? .duplicate : .failed, 0, stages)
            if timer.expired { throw ServiceErrors.la(.systemCancel, "no finger was presented in time") }
            if failure.isDevice(FP_DEVICE_ERROR_DATA_FULL_VALUE) { throw Self.chipFullError }
            if failure.isDevice(FP_DEVICE_ERROR_DATA_DUPLICATE_VALUE) { throw Self.duplicateError }
            if failure.isCancelled { throw ServiceErrors.la(.systemCancel, "enrollment cancelled") }
            if let unusable = readerUnusable(failure, device) { throw unusable }
            throw ServiceErrors.la(.systemCancel, "enrollment failed: \(failure.message)")
        }
    }

    /// AlreadyEnrolled if `finger` of `uid` is offered on `reader`, from either source.
    private func refuseEnrolled(_ finger: FingerName, uid: UInt32, reader: Readers.Identity) throws(ServiceError) {
        guard let existing = prints.prints(of: uid, for: reader).first(where: { $0.finger == finger }) else { return }
        throw ServiceError(.alreadyEnrolled,
            "\(finger.rawValue) is already enrolled on \(reader)"
            + (existing.source == .fprintd ? " (with fprintd)" : "") + "; ask to replace it to enroll it again")
    }

    func emitEnrollStatus(_ destination: String, _ progress: EnrollProgress, _ stage: UInt32, _ stages: UInt32) {
        try? bus.emit(path: ObjectPath(stringLiteral: LocalAuthBus.objectPath), interface: LocalAuthBus.interface,
                      member: LocalAuthBus.Signal.enrollStatus,
                      arguments: [.string(progress.rawValue), .uint32(stage), .uint32(stages)],
                      destination: destination)
    }

    // MARK: Listing

    /// ListEnrolledFingers(): the caller's fingers that the reader serving them offers.
    func listEnrolledFingers(_ request: Request) throws(ServiceError) -> [DBusValue] {
        guard let reader = reader(for: request.uid) else { throw noReaderError }
        return [.strings(prints.prints(of: request.uid, for: reader).map(\.finger.rawValue))]
    }

    /// ListEnrolledPrints(a{sv}): every print of the user, each source and reader.
    func listEnrolledPrints(_ request: Request) throws(ServiceError) -> [DBusValue] {
        let uid = request.target
        let inUse = reader(for: uid).map { Set(prints.prints(of: uid, for: $0).map(\.path)) } ?? []
        let rows = prints.allPrints(of: uid).map { stored -> DBusValue in
            var entry: [String: DBusValue] = [
                LocalAuthBus.PrintKey.finger: .string(stored.finger.rawValue),
                LocalAuthBus.PrintKey.source: .string(stored.source.rawValue),
                LocalAuthBus.PrintKey.driver: .string(stored.reader.driver),
                LocalAuthBus.PrintKey.deviceID: .string(stored.reader.deviceID),
                LocalAuthBus.PrintKey.inUse: .boolean(inUse.contains(stored.path)),
                LocalAuthBus.PrintKey.readOnly: .boolean(!prints.isOurs(stored)),
            ]
            if let created = stored.created { entry[LocalAuthBus.PrintKey.created] = .int64(created) }
            return .dictionary(entry)
        }
        return [.array("a{sv}", rows)]
    }

    // MARK: Deleting (our store only; fprintd's is read-only)

    func deleteEnrolledFinger(_ request: Request) async throws(ServiceError) -> [DBusValue] {
        try await deleteFinger(try Self.finger(request.arguments[0]), uid: request.target, record: request.record)
    }

    func deleteEnrolledFingerWithOptions(_ request: Request) async throws(ServiceError) -> [DBusValue] {
        _ = try Self.printOptions(request.arguments[1])
        return try await deleteFinger(try Self.finger(request.arguments[0]), uid: request.target, record: request.record)
    }

    private func deleteFinger(_ finger: FingerName, uid: UInt32, record: CallRecord) async throws(ServiceError) -> [DBusValue] {
        // The print on the chip first (Readers/ChipPrints.swift): its file
        // goes only once its slot is free.
        try await deleteFromChips(finger, uid: uid, record: record)
        let deleted: Bool
        do {
            deleted = try prints.delete(finger, uid: uid)
        } catch {
            throw ServiceError(.storageFailed, "could not delete: \(error)")
        }
        guard deleted else {
            if prints.allPrints(of: uid).contains(where: { $0.finger == finger && $0.source == .fprintd }) {
                throw ServiceError(.readOnly,
                    "\(finger.rawValue) was enrolled with fprintd, whose store localauthd only reads; remove it with fprintd-delete")
            }
            throw ServiceError(.notEnrolled, "\(finger.rawValue) is not enrolled")
        }
        Log.info("deleted \(finger.rawValue) of uid \(uid)")
        return []
    }

    func deleteEnrolledFingers(_ request: Request) async throws(ServiceError) -> [DBusValue] {
        try await deleteAll(uid: request.target, record: request.record)
    }

    func deleteEnrolledFingersWithOptions(_ request: Request) async throws(ServiceError) -> [DBusValue] {
        _ = try Self.printOptions(request.arguments[0])
        return try await deleteAll(uid: request.target, record: request.record)
    }

    private func deleteAll(uid: UInt32, record: CallRecord) async throws(ServiceError) -> [DBusValue] {
        for finger in FingerName.allCases { try await deleteFromChips(finger, uid: uid, record: record) }
        do {
            let count = try prints.deleteAll(uid: uid)
            Log.info("deleted \(count) print(s) of uid \(uid)")
        } catch {
            throw ServiceError(.storageFailed, "could not delete: \(error)")
        }
        return []
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
