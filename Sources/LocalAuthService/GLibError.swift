internal import CGLib
internal import CFprint

/// A GError as a Swift error: domain, code and message, copied out and freed.
/// Every GLib-style `GError **` in the service goes through `GLibError.take`.
struct GLibError: Error, Sendable, CustomStringConvertible {
    let domain: UInt32
    let code: Int32
    let message: String

    var description: String { message }

    /// Copies and frees a GError set by a C call.
    static func take(_ error: UnsafeMutablePointer<GError>?) -> GLibError {
        guard let error else { return GLibError(domain: 0, code: 0, message: "unknown error") }
        defer { g_error_free(error) }
        return GLibError(domain: error.pointee.domain, code: error.pointee.code,
                         message: error.pointee.message.map { String(cString: $0) } ?? "")
    }

    /// Runs `body` with a GError out-parameter and throws what it set.
    static func check<T>(_ body: (UnsafeMutablePointer<UnsafeMutablePointer<GError>?>) -> T) throws(GLibError) -> T {
        var error: UnsafeMutablePointer<GError>? = nil
        let result = body(&error)
        if error != nil { throw take(error) }
        return result
    }

    /// What an operation that a stuck shutdown gave up on ends with: a
    /// cancellation, which is what was asked of it and never honoured.
    static var abandoned: GLibError {
        GLibError(domain: cglib_io_error_quark(), code: Int32(G_IO_ERROR_CANCELLED.rawValue),
                  message: "abandoned: the operation did not end after it was cancelled")
    }

    var isCancelled: Bool { domain == cglib_io_error_quark() && code == Int32(G_IO_ERROR_CANCELLED.rawValue) }
    var isRetry: Bool { domain == cfprint_device_retry_quark() }
    var isDeviceError: Bool { domain == cfprint_device_error_quark() }
    func isDevice(_ error: FpDeviceError) -> Bool { isDeviceError && code == Int32(error.rawValue) }

    /// For a retry error: what the person should do.
    var retryKind: RetryKind {
        switch code {
        case Int32(FP_DEVICE_RETRY_TOO_SHORT.rawValue): .tooShort
        case Int32(FP_DEVICE_RETRY_CENTER_FINGER.rawValue): .centerFinger
        case Int32(FP_DEVICE_RETRY_REMOVE_FINGER.rawValue): .removeFinger
        // FP_DEVICE_RETRY_TOO_FAST (libfprint 1.94.7; Debian 13's 1.94.9), the
        // value after REMOVE_FINGER: Debian 12's headers (1.94.5) lack the name.
        case Int32(FP_DEVICE_RETRY_REMOVE_FINGER.rawValue) + 1: .tooFast
        default: .general
        }
    }
}

/// Why a scan has to be repeated (libfprint's FpDeviceRetry).
enum RetryKind: Sendable, CaseIterable {
    case general, tooShort, centerFinger, removeFinger, tooFast
}

/// libfprint's device errors (fp-device.h's FpDeviceError), every one by
/// name, so that a table deciding on them (ReaderFailure) decides on each.
enum FprintDeviceError: CaseIterable, Sendable {
    case general, notSupported, notOpen, alreadyOpen, busy, proto, dataInvalid
    case dataNotFound, dataFull, dataDuplicate, removed, tooHot

    private var value: FpDeviceError {
        switch self {
        case .general: FP_DEVICE_ERROR_GENERAL
        case .notSupported: FP_DEVICE_ERROR_NOT_SUPPORTED
        case .notOpen: FP_DEVICE_ERROR_NOT_OPEN
        case .alreadyOpen: FP_DEVICE_ERROR_ALREADY_OPEN
        case .busy: FP_DEVICE_ERROR_BUSY
        case .proto: FP_DEVICE_ERROR_PROTO
        case .dataInvalid: FP_DEVICE_ERROR_DATA_INVALID
        case .dataNotFound: FP_DEVICE_ERROR_DATA_NOT_FOUND
        case .dataFull: FP_DEVICE_ERROR_DATA_FULL
        case .dataDuplicate: FP_DEVICE_ERROR_DATA_DUPLICATE
        case .removed: FP_DEVICE_ERROR_REMOVED
        case .tooHot: FP_DEVICE_ERROR_TOO_HOT
        }
    }

    /// The one `error` is, if it is one of libfprint's device errors.
    init?(_ error: GLibError) {
        guard error.isDeviceError, let known = Self.allCases.first(where: { error.isDevice($0.value) }) else { return nil }
        self = known
    }

    /// This error as libfprint reports it.
    func error(_ message: String = "") -> GLibError {
        GLibError(domain: cfprint_device_error_quark(), code: Int32(value.rawValue), message: message)
    }
}

// libfprint's device errors, named for the checks the service makes.
let FP_DEVICE_ERROR_REMOVED_VALUE = FP_DEVICE_ERROR_REMOVED
let FP_DEVICE_ERROR_TOO_HOT_VALUE = FP_DEVICE_ERROR_TOO_HOT
let FP_DEVICE_ERROR_DATA_FULL_VALUE = FP_DEVICE_ERROR_DATA_FULL
let FP_DEVICE_ERROR_DATA_DUPLICATE_VALUE = FP_DEVICE_ERROR_DATA_DUPLICATE
let FP_DEVICE_ERROR_DATA_NOT_FOUND_VALUE = FP_DEVICE_ERROR_DATA_NOT_FOUND
