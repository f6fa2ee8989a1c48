internal import CFprint
import DBusCore
import LocalAuthShared

// Wiring only: the reader choice, reader queue, readers and bus as the
// Enroller's seams, the print store as its prints, the readers as the one
// enroll operation takes them, each given as the components they are; a
// print saved or deleted is an event (ServiceEvents).

/// The readers as the one enroll operation takes them (Enrollment.swift), for both contracts.
@ServiceActor
final class ServiceEnrollmentReaders: EnrollmentReaders, ReaderLookupWiring {
    private let readers: Readers
    private let gate: ReaderGate
    let readerChoice: ReaderChoice

    init(readers: Readers, gate: ReaderGate, readerChoice: ReaderChoice) {
        self.readers = readers
        self.gate = gate
        self.readerChoice = readerChoice
    }

    func open(
        _ reader: Readers.Identity, until deadline: ContinuousClock.Instant?, cancellable: Cancellable,
        interruption: @escaping @ServiceActor () -> Interruption?,
        busy: @escaping @ServiceActor () -> Void
    ) async throws(ServiceError) -> any EnrollSession {
        try await LibfprintReaderSession.open(
            reader, until: deadline, cancellable: cancellable, interruption: interruption, busy: busy, gate: gate,
            readers: readers)
    }
}

@ServiceActor
final class ServiceEnrollerSeams: EnrollerSeams, ReaderLookupWiring {
    let readerChoice: ReaderChoice
    private let readers: Readers
    private let queue: SensorQueue
    private let gate: ReaderGate
    private let bus: BusConnection

    init(readerChoice: ReaderChoice, readers: Readers, queue: SensorQueue, gate: ReaderGate, bus: BusConnection) {
        self.readerChoice = readerChoice
        self.readers = readers
        self.queue = queue
        self.gate = gate
        self.bus = bus
    }

    var chipReaders: [Readers.Identity] { readers.usableReaders.filter { storesPrints($0) } }
    func storesPrints(_ reader: Readers.Identity) -> Bool { readers.usable(reader)?.storesPrints == true }
    func checksDuplicates(_ reader: Readers.Identity) -> Bool { readers.usable(reader)?.checksDuplicates == true }

    func isEnrolling(_ sender: String) -> Bool { queue.isEnrolling(sender) }
    func withReader<T: Sendable>(
        _ identity: Readers.Identity, for record: CallRecord, uid: UInt32,
        _ body: (Readers.Reader) async throws(ServiceError) -> T
    ) async throws(ServiceError) -> T {
        try await gate.withReader(identity, for: record, uid: uid, body)
    }

    func chipPrints(on device: Readers.Reader) async throws(GLibError) -> [GObjectRef] {
        try await readers.chipPrints(on: device)
    }
    func deleteFromChip(_ print: GObjectRef, on device: Readers.Reader) async throws(GLibError) {
        try await readers.deleteFromChip(print, on: device)
    }
    func unusable(_ error: GLibError, _ device: Readers.Reader) -> ServiceError? { gate.unusable(error, device) }

    func emitEnrollStatus(to destination: String, _ progress: EnrollProgress, stage: UInt32, stages: UInt32) {
        try? bus.emit(
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
    private let prints: PrintStore
    private let events: ServiceEvents

    init(prints: PrintStore, events: ServiceEvents) {
        self.prints = prints
        self.events = events
    }

    func prints(of uid: UInt32, for reader: Readers.Identity) -> [PrintStore.StoredPrint] {
        prints.prints(of: uid, for: reader)
    }
    func allPrints(of uid: UInt32) -> [PrintStore.StoredPrint] { prints.allPrints(of: uid) }
    func everyPrint(on reader: Readers.Identity) -> [PrintStore.StoredPrint] { prints.everyPrint(on: reader) }
    func isOurs(_ stored: PrintStore.StoredPrint) -> Bool { prints.isOurs(stored) }
    func save(_ print: GObjectRef, finger: FingerName, uid: UInt32, reader: Readers.Identity) throws -> PrintFile {
        defer { events.publishUserChanged(uid) }
        return try prints.save(print, finger: finger, uid: uid, reader: reader)
    }
    func delete(_ finger: FingerName, uid: UInt32) throws -> Bool {
        defer { events.publishUserChanged(uid) }
        return try prints.delete(finger, uid: uid)
    }
    func deleteAll(uid: UInt32) throws -> Int {
        defer { events.publishUserChanged(uid) }
        return try prints.deleteAll(uid: uid)
    }
}

/// What an enrollment does with a held libfprint reader beyond a verify's scans.
extension LibfprintReaderSession: EnrollSession {
    func enroll(
        _ finger: FingerName, username: String, cancellable: Cancellable,
        progress: @escaping @ServiceActor (Int, RetryKind?) -> Void
    ) async throws(GLibError) -> any PrintTemplate {
        try await readers.enroll(
            finger: finger.fpFinger, username: username, on: device, cancellable: cancellable,
            progress: progress)
    }

    func deleteFromChip(_ print: any PrintTemplate) async throws(GLibError) {
        guard let print = print as? GObjectRef else { throw Readers.noReader(device.identity) }
        try await readers.deleteFromChip(print, on: device)
    }

    func failure(_ error: GLibError) -> ReaderFailure {
        let failure = ReaderFailure(error)
        if failure == .removed { readers.forget(device) }
        return failure
    }
}

extension ReaderFailure {
    /// What libfprint's `error` is, as fprintd's statuses tell them apart:
    /// every device error decided here, as fprintd 1.94.5 decides it
    /// (src/device.c, verify_result_to_name and enroll_result_to_name).
    init(_ error: GLibError) {
        if error.isCancelled {
            self = .cancelled
            return
        }
        switch FprintDeviceError(error) {
        case .removed?: self = .removed
        case .proto?: self = .protocolError
        case .dataFull?: self = .dataFull
        case .dataDuplicate?: self = .duplicate
        case .dataNotFound?: self = .notFound
        // The caller of an evaluation hears "cooling down" (ReaderGate.unusable).
        case .tooHot?: self = .overheated
        case .general?, .notSupported?, .notOpen?, .alreadyOpen?, .busy?, .dataInvalid?, nil:
            self = .other
        }
    }
}
