import DBusCore
import LocalAuthShared

// Wiring only: the service's reader choice, reader queue, readers and bus as
// the Enroller's seams, the print store as its prints, and the service's old
// entry point for Authorization.swift (the integrator rewires it).

@ServiceActor
final class ServiceEnrollerSeams: EnrollerSeams {
    /// The service outlives the component that alone holds this adapter
    /// (unowned(unsafe): a checked `unowned` load takes the side table's slow
    /// retain and release on every call; see ServiceEvaluatorWiring).
    private unowned(unsafe) let service: LocalAuthService

    init(_ service: LocalAuthService) { self.service = service }

    func reader(for uid: UInt32) -> Readers.Identity? { service.readerChoice.reader(for: uid) }
    var noReaderError: ServiceError { service.readerChoice.noReaderError }
    func isReachable(_ reader: Readers.Identity) -> Bool { service.readerChoice.reachableReaders.contains(reader) }
    var chipReaders: [Readers.Identity] { service.readers.usableReaders.filter(storesPrints) }
    func storesPrints(_ reader: Readers.Identity) -> Bool { service.readers.usable(reader)?.storesPrints == true }

    func isEnrolling(_ sender: String) -> Bool { service.queue.isEnrolling(sender) }
    func acquireTurn(_ ticket: SensorQueue.Ticket) async -> Bool {
        let waitLimit = EventLoopTimers.after(ServiceLimits.readerQueueWait) { [queue = service.queue] in queue.withdraw(ticket) }
        defer { waitLimit.cancel() }
        return await service.queue.acquire(ticket)
    }
    func releaseTurn() { service.queue.release() }
    func open(
        _ reader: Readers.Identity, cancellable: Cancellable,
        interruption: @escaping @ServiceActor () -> Evaluation.Interruption?,
        busy: @escaping @ServiceActor () -> Void
    ) async throws(ServiceError) -> Readers.Reader {
        try await service.readerGate.open(reader, cancellable: cancellable, interruption: interruption, busy: busy)
    }
    func relinquish(_ device: Readers.Reader) { service.readers.relinquish(device) }
    func withReader<T>(
        _ identity: Readers.Identity, for record: CallRecord, uid: UInt32,
        _ body: (Readers.Reader) async throws(ServiceError) -> T
    ) async throws(ServiceError) -> T {
        try await service.readerGate.withReader(identity, for: record, uid: uid, body)
    }

    func enrollStages(on reader: Readers.Identity) -> Int { service.readers.enrollStages(on: reader) }
    func enroll(
        _ finger: FingerName, username: String, on device: Readers.Reader, cancellable: Cancellable,
        progress: @escaping @ServiceActor (Int, RetryKind?) -> Void
    ) async throws(GLibError) -> GObjectRef {
        try await service.readers.enroll(
            finger: finger.fpFinger, username: username, on: device,
            cancellable: cancellable, progress: progress)
    }
    func identify(
        _ gallery: [GObjectRef], on device: Readers.Reader,
        cancellable: Cancellable
    ) async throws(GLibError) -> Readers.ScanResult {
        try await service.readers.identify(gallery, on: device, cancellable: cancellable)
    }
    func chipPrints(on device: Readers.Reader) async throws(GLibError) -> [GObjectRef] {
        try await service.readers.chipPrints(on: device)
    }
    func deleteFromChip(_ print: GObjectRef, on device: Readers.Reader) async throws(GLibError) {
        try await service.readers.deleteFromChip(print, on: device)
    }
    func unusable(_ error: GLibError, _ device: Readers.Reader) -> ServiceError? { service.readerGate.unusable(error, device) }

    func emitEnrollStatus(to destination: String, _ progress: EnrollProgress, stage: UInt32, stages: UInt32) {
        try? service.bus.emit(
            path: ObjectPath(stringLiteral: LocalAuthBus.objectPath), interface: LocalAuthBus.interface,
            member: LocalAuthBus.Signal.enrollStatus,
            arguments: [.string(progress.rawValue), .uint32(stage), .uint32(stages)],
            destination: destination)
    }
}

/// The print store, as the Enroller uses it; each print saved or deleted
/// tells the Environment that its user's state changed (LAEnvironment's
/// subscribers of that uid hear it when the call ends).
@ServiceActor
final class ServiceEnrollerPrints: EnrollerPrints {
    private unowned let service: LocalAuthService

    init(_ service: LocalAuthService) { self.service = service }

    func prints(of uid: UInt32, for reader: Readers.Identity) -> [PrintStore.StoredPrint] {
        service.prints.prints(of: uid, for: reader)
    }
    func allPrints(of uid: UInt32) -> [PrintStore.StoredPrint] { service.prints.allPrints(of: uid) }
    func everyPrint(on reader: Readers.Identity) -> [PrintStore.StoredPrint] { service.prints.everyPrint(on: reader) }
    func isOurs(_ stored: PrintStore.StoredPrint) -> Bool { service.prints.isOurs(stored) }
    func save(_ print: GObjectRef, finger: FingerName, uid: UInt32, reader: Readers.Identity) throws -> PrintFile {
        defer { service.environment.userChanged(uid) }
        return try service.prints.save(print, finger: finger, uid: uid, reader: reader)
    }
    func delete(_ finger: FingerName, uid: UInt32) throws -> Bool {
        defer { service.environment.userChanged(uid) }
        return try service.prints.delete(finger, uid: uid)
    }
    func deleteAll(uid: UInt32) throws -> Int {
        defer { service.environment.userChanged(uid) }
        return try service.prints.deleteAll(uid: uid)
    }
}
