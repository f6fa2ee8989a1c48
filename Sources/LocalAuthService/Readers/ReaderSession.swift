import DBusCore
import LocalAuthShared

// A reader held for one operation, as every operation uses it: a verify's
// scans (the Verifier), an enrollment (Enrollment), a chip's maintenance
// (the Enroller, fprintd's Devices). ReaderGate.begin hands one out; the
// service's is libfprint's (ReaderOperations.swift), the unit tests'
// are fakes.

/// One reader, opened for one operation until `release` (ReaderGate.begin):
/// a verify's scans, an enrollment, a chip's maintenance.
@ServiceActor
protocol ReaderSession: AnyObject {
    var identity: Readers.Identity { get }
    /// One scan against `gallery` (all made on this reader): which of its
    /// prints matched, none, or a scan to repeat. Throws libfprint's error.
    func scan(_ gallery: [EnrolledPrint], cancellable: Cancellable) async throws(GLibError) -> ScanOutcome
    /// The caller's error when `error` means the reader cannot be used now
    /// (removed, too hot), or nil for any other failure.
    func unusable(_ error: GLibError) -> ServiceError?
    /// What libfprint's `error` means for fprintd's statuses (a removed reader is forgotten).
    func failure(_ error: GLibError) -> ReaderFailure
    /// The operation is over: the reader may close.
    func release()

    // An enrollment's and a chip's maintenance, beyond a verify's scans.
    /// Enrolls `finger` for `username`; `progress` sees each stage and retry.
    func enroll(
        _ finger: FingerName, username: String, cancellable: Cancellable,
        progress: @escaping @ServiceActor (Int, RetryKind?) -> Void
    ) async throws(GLibError) -> any PrintTemplate
    /// Frees `print`'s slot on the reader's chip (a print the chip no longer holds is no error).
    func deleteFromChip(_ print: any PrintTemplate) async throws(GLibError)
    /// The prints the reader's chip holds, whoever enrolled them (none on a
    /// reader without one), as libfprint gives them (an administrator's view
    /// compares them with the enrolled records: `Readers.same`).
    func chipPrints() async throws(GLibError) -> [GObjectRef]
}

/// libfprint's errors, as fprintd's statuses tell them apart (fprintd 1.94's
/// verify_result_to_name and enroll_result_to_name; the statuses:
/// Fprintd/FprintdOperations.swift, the classification: ReaderFailure.init,
/// Enrollment/EnrollmentWiring.swift).
enum ReaderFailure: Equatable {
    /// FP_DEVICE_ERROR_REMOVED: unplugged (the reader is forgotten).
    case removed
    /// FP_DEVICE_ERROR_PROTO: the reader stopped making sense: fprintd's "disconnected".
    case protocolError
    case cancelled
    /// FP_DEVICE_ERROR_DATA_FULL: the chip has no room for another print.
    case dataFull
    /// FP_DEVICE_ERROR_DATA_DUPLICATE: the chip's own duplicate check.
    case duplicate
    /// FP_DEVICE_ERROR_DATA_NOT_FOUND: the chip does not hold a print it was given.
    case notFound
    /// FP_DEVICE_ERROR_TOO_HOT: the reader must cool down (fprintd 1.94.5's
    /// "disconnected"; the caller of an evaluation hears "cooling down").
    case overheated
    /// Every other error (GENERAL, BUSY, …): fprintd's "unknown-error".
    case other
}

/// What one scan found.
enum ScanOutcome: Equatable, Sendable {
    /// The print at this index of the gallery passed to `scan` matched
    /// (nil: the reader did not say which).
    case match(Int?)
    case noMatch
    case retry(RetryKind)
}

/// One usable print, as the evaluator sees it.
struct EnrolledPrint {
    let finger: FingerName
    let source: PrintSource
    /// New on every enrollment (PrintStore.StoredPrint.stamp).
    let stamp: [UInt8]
    /// The print the reader compares with: libfprint's FpPrint for the real
    /// readers, anything for a fake one. Only a ReaderSession looks inside.
    let template: any PrintTemplate
    /// Where it is kept, for a component that deletes it (fprintd's Device).
    var location = ""
}

/// The reader's own form of a print (see EnrolledPrint.template).
protocol PrintTemplate: AnyObject {}
