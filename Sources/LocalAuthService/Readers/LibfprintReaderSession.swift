internal import CFprint
import DBusCore
import LocalAuthShared

// libfprint's readers as the operations hold them: the opener the gate
// uses, and the session it hands out (ReaderSession.swift).

/// Opens libfprint's readers for the gate (ReaderGate.begin): within the
/// scan timeout (or by the operation's deadline: fprintd's Start answers
/// within a D-Bus reply timeout), retrying while another program holds the
/// device (`Readers.acquire`), with the errors a caller gets when it cannot.
@ServiceActor
struct LibfprintOpener: ReaderOpener {
    let readers: Readers
    let scanTimeout: Double

    func open(_ identity: Readers.Identity, _ opening: ReaderOpening) async throws(ServiceError) -> any ReaderSession {
        let deadline = opening.until ?? ContinuousClock.now + .milliseconds(Int(scanTimeout * 1000))
        do {
            let device = try await readers.acquire(identity, until: deadline, cancellable: opening.cancellable, busy: opening.busy)
            return LibfprintReaderSession(readers: readers, device: device)
        } catch {
            if let interruption = opening.interruption() { throw interruption.error }
            switch error {
            case .removed: throw Interruption.readerRemoved.error
            case .cancelled: throw ServiceErrors.la(.systemCancel, "cancelled while opening the fingerprint reader")
            case .suspended: throw Interruption.systemSleeping.error
            case .heldByAnotherProgram(let why):
                throw ServiceError(
                    .readerInUse,
                    "the fingerprint reader is in use by another program (\(why)); try again when it is free")
            }
        }
    }
}

/// A libfprint reader held for one operation (`Readers.acquire` to
/// `relinquish`): a verify's, an enrollment's or a chip's maintenance, of
/// either contract.
@ServiceActor
final class LibfprintReaderSession: ReaderSession {
    let readers: Readers
    let device: Readers.Reader

    init(readers: Readers, device: Readers.Reader) {
        self.readers = readers
        self.device = device
    }

    var identity: Readers.Identity { device.identity }

    func scan(_ gallery: [EnrolledPrint], cancellable: Cancellable) async throws(GLibError) -> ScanOutcome {
        // The prints came from ServiceEvaluatorWiring.prints: libfprint's own.
        let prints = gallery.compactMap { $0.template as? GObjectRef }
        guard prints.count == gallery.count else { throw Readers.noReader(device.identity) }
        switch try await readers.identify(prints, on: device, cancellable: cancellable) {
        case .match(let matched): return .match(prints.firstIndex { $0.pointer == matched.pointer })
        case .noMatch: return .noMatch
        case .retry(let kind): return .retry(kind)
        }
    }

    /// The reader's errors that mean it cannot be used now, for every
    /// operation alike (a removed reader is forgotten at once).
    func unusable(_ error: GLibError) -> ServiceError? {
        if error.isDevice(FP_DEVICE_ERROR_REMOVED_VALUE) {
            readers.forget(device)
            return Interruption.readerRemoved.error
        }
        if error.isDevice(FP_DEVICE_ERROR_TOO_HOT_VALUE) {
            return ServiceErrors.la(.systemCancel, "the fingerprint reader is cooling down; try again shortly")
        }
        return nil
    }

    func release() { readers.relinquish(device) }
}

/// libfprint's FpPrint is what a real reader compares with.
extension GObjectRef: PrintTemplate {}

extension PrintStore.StoredPrint {
    /// The print as a scan compares with it (and where it is kept).
    var enrolled: EnrolledPrint {
        EnrolledPrint(finger: finger, source: source, stamp: stamp, template: print, location: path)
    }
}

/// What an enrollment does with a held libfprint reader beyond a verify's scans.
extension LibfprintReaderSession {
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

    func chipPrints() async throws(GLibError) -> [GObjectRef] { try await readers.chipPrints(on: device) }

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
        // The caller of an evaluation hears "cooling down" (LibfprintReaderSession.unusable).
        case .tooHot?: self = .overheated
        case .general?, .notSupported?, .notOpen?, .alreadyOpen?, .busy?, .dataInvalid?, nil:
            self = .other
        }
    }
}
