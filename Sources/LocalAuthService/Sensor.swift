internal import CGLib
internal import CFprint
import Foundation

/// The fingerprint reader, through libfprint: the first device that can verify.
///
/// All of libfprint's callbacks arrive on the service's loop thread, where this
/// class lives. One operation runs at a time; `SensorQueue` orders the callers.
@ServiceActor
final class Sensor {
    private let context: GObjectRef
    private(set) var device: GObjectRef?
    private(set) var isOpen = false

    /// Identifies prints made on this reader (libfprint's driver and device id).
    struct Identity: Sendable, Hashable {
        let driver: String
        let deviceID: String
    }
    private(set) var identity: Identity?
    private(set) var enrollStages = 0
    private var supportsIdentify = false

    init() {
        context = GObjectRef(taking: OpaquePointer(fp_context_new()))
    }

    var fpDevice: UnsafeMutablePointer<FpDevice>? { device?.cast() }
    var isPresent: Bool { device != nil }

    /// Finds the first reader that can verify and opens it. No reader is not
    /// an error: the service then answers BiometryNotAvailable.
    func start() async {
        let devices = fp_context_get_devices(context.cast())
        guard let devices else { return }
        for index in 0..<devices.pointee.len {
            guard let raw = cfprint_ptr_array_index(devices, index) else { continue }
            let candidate = raw.assumingMemoryBound(to: FpDevice.self)
            let features = fp_device_get_features(candidate).rawValue
            guard features & (FP_DEVICE_FEATURE_VERIFY.rawValue | FP_DEVICE_FEATURE_IDENTIFY.rawValue) != 0 else { continue }
            device = GObjectRef(retaining: OpaquePointer(candidate))
            supportsIdentify = features & FP_DEVICE_FEATURE_IDENTIFY.rawValue != 0
            identity = Identity(driver: String(cString: fp_device_get_driver(candidate)),
                                deviceID: String(cString: fp_device_get_device_id(candidate)))
            enrollStages = Int(fp_device_get_nr_enroll_stages(candidate))
            break
        }
        guard let fpDevice else {
            Log.info("no fingerprint reader found")
            return
        }
        do {
            _ = try await glibAsync({ callback, data in fp_device_open(fpDevice, nil, callback, data) },
                                finish: { result -> Result<Bool, GLibError> in
                Result { () throws(GLibError) in
                    try GLibError.check { fp_device_open_finish(fpDevice, result, $0) } != 0
                }
            })
            isOpen = true
            Log.info("reader \(identity!.driver)/\(identity!.deviceID) open, \(enrollStages) enroll stages")
        } catch {
            Log.error("could not open reader \(identity!.driver): \(error)")
        }
    }

    /// Closes the reader (at shutdown).
    func stop() async {
        guard let fpDevice, isOpen else { return }
        isOpen = false
        _ = try? await glibAsync({ callback, data in fp_device_close(fpDevice, nil, callback, data) },
                                 finish: { result -> Result<Bool, GLibError> in
            Result { () throws(GLibError) in
                try GLibError.check { fp_device_close_finish(fpDevice, result, $0) } != 0
            }
        })
    }

    /// Marks the reader as gone (unplugged): later requests see no reader.
    func forget() {
        device = nil
        identity = nil
        isOpen = false
    }

    // MARK: Matching

    enum ScanResult: Sendable {
        case match(GObjectRef)
        case noMatch
        case retry(RetryKind)
    }

    /// One scan against `prints`: a match, no match, or a scan to repeat.
    /// Throws libfprint's error (cancelled, removed, too hot, …).
    func identify(_ prints: [GObjectRef], cancellable: Cancellable) async throws(GLibError) -> ScanResult {
        guard let fpDevice else { throw GLibError(domain: 0, code: 0, message: "no reader") }
        let gallery = g_ptr_array_new()!
        for print in prints { g_ptr_array_add(gallery, UnsafeMutableRawPointer(print.pointer)) }
        defer { g_ptr_array_unref(gallery) }
        let identify = supportsIdentify
        let single = prints.first

        return try await glibAsync({ callback, data in
            if identify {
                fp_device_identify(fpDevice, gallery, cancellable.raw, nil, nil, nil, callback, data)
            } else {
                fp_device_verify(fpDevice, single!.pointer, cancellable.raw, nil, nil, nil, callback, data)
            }
        }, finish: { result -> Result<ScanResult, GLibError> in
            var error: UnsafeMutablePointer<GError>? = nil
            if identify {
                var match: OpaquePointer? = nil
                _ = fp_device_identify_finish(fpDevice, result, &match, nil, &error)
                if error != nil {
                    let failure = GLibError.take(error)
                    return failure.isRetry ? .success(.retry(failure.retryKind)) : .failure(failure)
                }
                if let match { return .success(.match(GObjectRef(taking: match))) }
                return .success(.noMatch)
            } else {
                var matched: gboolean = 0
                _ = fp_device_verify_finish(fpDevice, result, &matched, nil, &error)
                if error != nil {
                    let failure = GLibError.take(error)
                    return failure.isRetry ? .success(.retry(failure.retryKind)) : .failure(failure)
                }
                return .success(matched != 0 ? .match(single!) : .noMatch)
            }
        })
    }

    // MARK: Enrolling

    /// Enrolls `finger` for `username`; `progress` sees each stage and retry.
    func enroll(finger: UInt32, username: String, cancellable: Cancellable,
                progress: @escaping @ServiceActor (Int, RetryKind?) -> Void) async throws(GLibError) -> GObjectRef {
        guard let fpDevice else { throw GLibError(domain: 0, code: 0, message: "no reader") }
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
            return .success(GObjectRef(taking: print!))
        })
    }
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
}
