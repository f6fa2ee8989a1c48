internal import CGLib
internal import CFprint
import DBusCore
import LocalAuthShared

// What an operation does with a reader it holds (`Readers.acquire`): one
// scan against a gallery, an enrollment, the chip's prints; and, at the
// end, the gate's libfprint opener and the session it hands out
// (ReaderSession.swift: what every operation holds).
extension Readers {
    // MARK: Matching

    enum ScanResult: Sendable {
        case match(GObjectRef)
        case noMatch
        case retry(RetryKind)
    }

    /// One scan on `reader` (held: `acquire`) against `prints`, all made on
    /// it: a match, no match, or a scan to repeat. Throws libfprint's error
    /// (cancelled, removed, too hot, …). An empty gallery only on a reader
    /// that identifies (fprintd's duplicate check before the first print).
    func identify(_ prints: [GObjectRef], on reader: Reader, cancellable: Cancellable) async throws(GLibError) -> ScanResult {
        guard reader.isHeld, !prints.isEmpty || reader.supportsIdentify else { throw Self.noReader(reader.identity) }
        let fpDevice = reader.fpDevice
        let gallery = g_ptr_array_new()!
        for print in prints { g_ptr_array_add(gallery, UnsafeMutableRawPointer(print.pointer)) }
        defer { g_ptr_array_unref(gallery) }
        let identify = reader.supportsIdentify
        let single = prints.first
        // libfprint reports the match result through this callback as soon as
        // the scan is judged, before the operation completes; a Cancel that
        // lands in between makes the completion say only "cancelled". A
        // judged no-match must still count toward the lockout, so it is
        // remembered here (docs/SECURITY.md).
        let report = Unmanaged.passRetained(MatchReport()).toOpaque()
        let matchCallback: FpMatchCb = { _, match, _, userData, error in
            let box = Unmanaged<MatchReport>.fromOpaque(userData!).takeUnretainedValue()
            if error == nil && match == nil { box.judgedNoMatch = true }
        }
        let releaseReport: GDestroyNotify = { Unmanaged<MatchReport>.fromOpaque($0!).release() }
        let judged = Unmanaged<MatchReport>.fromOpaque(report).takeUnretainedValue()

        return try await glibAsync({ callback, data in
            if identify {
                fp_device_identify(fpDevice, gallery, cancellable.raw, matchCallback, report, releaseReport, callback, data)
            } else {
                fp_device_verify(fpDevice, single!.pointer, cancellable.raw, matchCallback, report, releaseReport,
                                 callback, data)
            }
        }, finish: { result -> Result<ScanResult, GLibError> in
            var error: UnsafeMutablePointer<GError>? = nil
            if identify {
                var match: OpaquePointer? = nil
                _ = fp_device_identify_finish(fpDevice, result, &match, nil, &error)
                if error != nil {
                    let failure = GLibError.take(error)
                    if failure.isCancelled && judged.judgedNoMatch { return .success(.noMatch) }
                    return failure.isRetry ? .success(.retry(failure.retryKind)) : .failure(failure)
                }
                if let match { return .success(.match(GObjectRef(taking: match))) }
                return .success(.noMatch)
            } else {
                var matched: gboolean = 0
                _ = fp_device_verify_finish(fpDevice, result, &matched, nil, &error)
                if error != nil {
                    let failure = GLibError.take(error)
                    if failure.isCancelled && judged.judgedNoMatch { return .success(.noMatch) }
                    return failure.isRetry ? .success(.retry(failure.retryKind)) : .failure(failure)
                }
                return .success(matched != 0 ? .match(single!) : .noMatch)
            }
        })
    }

    // MARK: Prints on the chip

    /// The prints the chip of `reader` (held) holds, whoever enrolled them.
    func chipPrints(on reader: Reader) async throws(GLibError) -> [GObjectRef] {
        guard reader.isHeld, reader.storesPrints else { return [] }
        let fpDevice = reader.fpDevice
        return try await glibAsync({ callback, data in fp_device_list_prints(fpDevice, nil, callback, data) },
                                   finish: { result -> Result<[GObjectRef], GLibError> in
            var error: UnsafeMutablePointer<GError>? = nil
            let list = fp_device_list_prints_finish(fpDevice, result, &error)
            if error != nil { return .failure(GLibError.take(error)) }
            guard let list else { return .success([]) }
            defer { g_ptr_array_unref(list) }
            var prints: [GObjectRef] = []
            for index in 0..<list.pointee.len {
                guard let raw = cfprint_ptr_array_index(list, index) else { continue }
                prints.append(GObjectRef(retaining: OpaquePointer(raw)))
            }
            return .success(prints)
        })
    }

    /// Deletes `print` from the chip of `reader` (held). A print the chip
    /// does not hold (any more) is not an error: the goal is that it is gone.
    func deleteFromChip(_ print: GObjectRef, on reader: Reader) async throws(GLibError) {
        guard reader.isHeld, reader.storesPrints else { return }
        let fpDevice = reader.fpDevice
        do {
            _ = try await glibAsync({ callback, data in fp_device_delete_print(fpDevice, print.pointer, nil, callback, data) },
                                    finish: { result -> Result<Bool, GLibError> in
                Result { () throws(GLibError) in
                    try GLibError.check { fp_device_delete_print_finish(fpDevice, result, $0) } != 0
                }
            })
        } catch where error.isDevice(FP_DEVICE_ERROR_DATA_NOT_FOUND_VALUE) {
            Log.info("the chip of \(reader.identity) no longer held the print to delete")
        }
    }

    /// Whether two prints are the same template (for prints on a chip: the same slot).
    static func same(_ one: GObjectRef, _ other: GObjectRef) -> Bool {
        fp_print_equal(one.pointer, other.pointer) != 0
    }

    // MARK: Enrolling

    /// Enrolls `finger` for `username` on `reader` (held: `acquire`);
    /// `progress` sees each stage and retry.
    func enroll(finger: UInt32, username: String, on reader: Reader, cancellable: Cancellable,
                progress: @escaping @ServiceActor (Int, RetryKind?) -> Void) async throws(GLibError) -> GObjectRef {
        guard reader.isHeld else { throw Self.noReader(reader.identity) }
        let fpDevice = reader.fpDevice
        let template = fp_print_new(fpDevice)!
        fp_print_set_finger(template, FpFinger(rawValue: finger))
        fp_print_set_username(template, username)
        let enrollDate = g_date_new()!
        g_date_set_time_t(enrollDate, time(nil))
        fp_print_set_enroll_date(template, enrollDate)
        g_date_free(enrollDate)

        let progressBox = Unmanaged.passRetained(ProgressBox(progress)).toOpaque()
        return try await glibAsync({ callback, data in
            fp_device_enroll(fpDevice, template, cancellable.raw, { _, stages, _, userData, error in
                let box = Unmanaged<ProgressBox>.fromOpaque(userData!).takeUnretainedValue()
                let retry: RetryKind? = error.map { GLibError(domain: $0.pointee.domain, code: $0.pointee.code, message: "").retryKind }
                ServiceActor.assumeIsolated { box.report(Int(stages), retry) }
            }, progressBox, { Unmanaged<ProgressBox>.fromOpaque($0!).release() }, callback, data)
        }, finish: { result -> Result<GObjectRef, GLibError> in
            var error: UnsafeMutablePointer<GError>? = nil
            let print = fp_device_enroll_finish(fpDevice, result, &error)
            if error != nil { return .failure(GLibError.take(error)) }
            guard let print else {
                return .failure(GLibError(domain: 0, code: 0, message: "the reader finished enrolling without a print"))
            }
            return .success(GObjectRef(taking: print))
        })
    }
}

/// What libfprint's match callback said about the scan in progress.
private final class MatchReport {
    var judgedNoMatch = false
}

private final class ProgressBox {
    let report: @ServiceActor (Int, RetryKind?) -> Void
    init(_ report: @escaping @ServiceActor (Int, RetryKind?) -> Void) { self.report = report }
}

/// Serialized prints: libfprint's own format, which also carries the driver,
/// device id, finger and username it was made with.
enum PrintCodec {
    static func serialize(_ print: GObjectRef) throws(GLibError) -> [UInt8] {
        var data: UnsafeMutablePointer<guchar>? = nil
        var length: gsize = 0
        _ = try GLibError.check { fp_print_serialize(print.pointer, &data, &length, $0) }
        guard let data else { return [] }
        defer { g_free(data) }
        return Array(UnsafeBufferPointer(start: data, count: Int(length)))
    }

    /// The same bytes always give the same print, so a print read before is
    /// taken from `PrintCache` (libfprint's parser is most of a preflight's cost).
    static func deserialize(_ bytes: [UInt8]) throws(GLibError) -> GObjectRef {
        if let cached = PrintCache.shared.print(for: bytes) { return cached }
        let print = try GLibError.check { error in
            bytes.withUnsafeBufferPointer { fp_print_deserialize($0.baseAddress, gsize($0.count), error) }
        }
        guard let print else { throw GLibError(domain: 0, code: 0, message: "not a print") }
        let reference = GObjectRef(taking: print)
        PrintCache.shared.store(reference, for: bytes)
        return reference
    }

    static func driver(of print: GObjectRef) -> String {
        fp_print_get_driver(print.pointer).map { String(cString: $0) } ?? ""
    }
    static func deviceID(of print: GObjectRef) -> String {
        fp_print_get_device_id(print.pointer).map { String(cString: $0) } ?? ""
    }
    static func finger(of print: GObjectRef) -> UInt32 {
        fp_print_get_finger(print.pointer).rawValue
    }
    static func username(of print: GObjectRef) -> String? {
        fp_print_get_username(print.pointer).map { String(cString: $0) }
    }
    /// The enroll date (a day) as Unix seconds at midnight UTC, if set.
    static func enrollDate(of print: GObjectRef) -> Int64? {
        guard let date = fp_print_get_enroll_date(print.pointer), g_date_valid(date) != 0 else { return nil }
        let epoch = g_date_new_dmy(1, G_DATE_JANUARY, 1970)!
        defer { g_date_free(epoch) }
        return (Int64(g_date_get_julian(date)) - Int64(g_date_get_julian(epoch))) * 86_400
    }
}

// MARK: - The session every operation holds

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
