internal import COpenSSL
import LocalAuthSystem

/// The one funnel through which every libcrypto call goes.
///
/// libcrypto reports failure with a return value (0, -1 or NULL) and leaves
/// the reasons on a thread-local error queue. Each call here clears the queue
/// first, checks the return value, and on failure drains the queue into a
/// `CryptoError`, so a stale entry never shows up in a later, unrelated error.
enum OpenSSL {
    /// Runs a call that returns 1 on success (the EVP convention).
    static func check(_ what: String, as code: CryptoError.Code = .library, _ body: () -> Int32) throws(CryptoError) {
        ERR_clear_error()
        guard body() == 1 else { throw failure(what, as: code) }
    }

    /// Runs a call that returns an object, or nil on failure.
    static func object<T>(_ what: String, as code: CryptoError.Code = .library, _ body: () -> T?) throws(CryptoError) -> T {
        ERR_clear_error()
        guard let result = body() else { throw failure(what, as: code) }
        return result
    }

    /// Runs a call that returns a length, negative or zero on failure (the i2d convention).
    static func length(_ what: String, as code: CryptoError.Code = .library, _ body: () -> Int32) throws(CryptoError) -> Int {
        ERR_clear_error()
        let result = body()
        guard result > 0 else { throw failure(what, as: code) }
        return Int(result)
    }

    /// The DER an i2d function writes: asked once with no buffer for the
    /// length, then again to write it (i2d advances the cursor it is given).
    static func encode(
        _ what: String, _ i2d: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?) -> Int32
    ) throws(CryptoError) -> [UInt8] {
        let count = try length(what) { i2d(nil) }
        var der = [UInt8](repeating: 0, count: count)
        _ = try rethrowing(CryptoError.self) {
            try der.withUnsafeMutableBufferPointer { (buffer) throws(CryptoError) -> Int in
                var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
                return try length(what) { i2d(&cursor) }
            }
        }
        return der
    }

    /// The error for a failed call, with OpenSSL's reasons; the queue is left empty.
    static func failure(_ what: String, as code: CryptoError.Code) -> CryptoError {
        var reasons: [String] = []
        var buffer = [CChar](repeating: 0, count: 256)
        while case let error = ERR_get_error(), error != 0 {
            // Bounded: a runaway queue would only lengthen the message.
            guard reasons.count < 4 else { continue }
            ERR_error_string_n(error, &buffer, buffer.count)
            reasons.append(String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        let detail = reasons.isEmpty ? "" : " (" + reasons.joined(separator: "; ") + ")"
        return CryptoError(code, what + " failed" + detail)
    }

    /// Runs a verification, whose "no" is an answer, not an error: true only
    /// for 1; whatever a "no" or a malformed input left on the queue is cleared.
    static func verdict(_ body: () -> Int32) -> Bool {
        ERR_clear_error()
        defer { ERR_clear_error() }
        return body() == 1
    }
}

/// An `EVP_PKEY`, freed with its owner.
///
/// `@unchecked Sendable` because OpenSSL 3 documents an `EVP_PKEY` as safe to
/// use from several threads at once once it is built (signing, deriving and
/// encoding only read it; its reference count is atomic), and nothing here
/// changes a key after construction.
final class KeyHandle: @unchecked Sendable {
    let pointer: OpaquePointer

    init(_ pointer: OpaquePointer) { self.pointer = pointer }

    /// Frees the key; libcrypto clears the private scalar before it frees it.
    deinit { EVP_PKEY_free(pointer) }
}

/// Byte-buffer helpers for C calls: a Swift array may have no storage when
/// empty, and libcrypto wants a valid pointer even for zero bytes.
extension Array where Element == UInt8 {
    func withCBytes<R>(_ body: (UnsafePointer<UInt8>, Int) throws(CryptoError) -> R) throws(CryptoError) -> R {
        var copy = self
        if copy.isEmpty { copy = [0] }
        let count = self.count
        return try rethrowing(CryptoError.self) {
            try copy.withUnsafeBufferPointer { (buffer: UnsafeBufferPointer<UInt8>) throws(CryptoError) -> R in
                try body(buffer.baseAddress!, count)
            }
        }
    }
}
