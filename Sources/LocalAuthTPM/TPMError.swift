internal import CTSS2
import LocalAuthSystem

/// A TPM operation that failed: the TSS2 response code, the call that returned
/// it, and tpm2-tss's own text for it (`Tss2_RC_Decode`), plus a `code` (a kind) to
/// decide on. A struct (as `CryptoError`) so kinds can be added without
/// breaking a switch. Messages never carry key or secret bytes.
public struct TPMError: DomainError {
    public struct Kind: ErrorCode {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// No TPM answered: the TCTI could not be loaded or connected, or the
        /// connection broke (the device went away, swtpm was killed).
        public static let unavailable: Kind = "unavailable"
        /// The TPM refused an object blob as not its own: made under another
        /// TPM's storage hierarchy, or this TPM was cleared since (a new
        /// owner seed gives another primary key, and the blob's integrity
        /// check fails). Such a blob never loads again.
        public static let foreignObject: Kind = "foreign-object"
        /// An object's auth value did not match.
        public static let authorizationFailed: Kind = "authorization-failed"
        /// The bytes are not a TPM2B_PUBLIC ‖ TPM2B_PRIVATE pair.
        public static let malformedBlob: Kind = "malformed-blob"
        /// Anything else the TPM or the stack said.
        public static let other: Kind = "other"
    }

    /// The TSS2_RC: its layer in bits 16–23 (0 = the TPM itself), the code below.
    public let responseCode: UInt32
    /// The ESAPI (or TCTI loader, MU) function that returned it.
    public let call: String
    /// `Tss2_RC_Decode(code)`, e.g. "tpm:parameter(1):integrity check failed".
    public let text: String

    public init(responseCode: UInt32, call: String, text: String) {
        self.responseCode = responseCode
        self.call = call
        self.text = text
    }

    public var message: String { "\(call): \(text) (0x\(String(responseCode, radix: 16)))" }
    public var description: String { "\(message), \(code)" }

    /// What to decide on, from the response code.
    public var code: Kind {
        let code = responseCode
        let layer = code & 0x00FF_0000
        let base = code & 0xFFFF
        if layer == TSS.tctiLayer { return .unavailable }
        if layer == TSS.muLayer { return .malformedBlob }
        if layer == TSS.esysLayer, base == UInt32(TSS2_BASE_RC_IO_ERROR) || base == UInt32(TSS2_BASE_RC_NO_CONNECTION) {
            return .unavailable
        }
        // TPM response codes: format 1 (bit 7) carries a parameter, handle or
        // session number above the error number in the low 6 bits.
        if layer == 0, code & UInt32(TPM2_RC_FMT1) != 0 {
            switch code & 0x3F {
            case CTSS2_RC_INTEGRITY & 0x3F, CTSS2_RC_BINDING & 0x3F: return .foreignObject
            case CTSS2_RC_AUTH_FAIL & 0x3F, CTSS2_RC_BAD_AUTH & 0x3F: return .authorizationFailed
            default: return .other
            }
        }
        return .other
    }
}

/// The one funnel for tpm2-tss: every Esys_*, Tss2_MU_* and Tss2_TctiLdr_*
/// call runs through `call`, which turns a TSS2_RC other than success into a
/// `TPMError` with `Tss2_RC_Decode`'s text.
enum TSS {
    // TSS2_ESYS_RC_LAYER, TSS2_MU_RC_LAYER, TSS2_TCTI_RC_LAYER: tss2_common.h
    // spells them with the function-like macro TSS2_RC_LAYER(n), which Swift
    // cannot import; these are its values (n << 16).
    static let esysLayer: UInt32 = 7 << 16
    static let muLayer: UInt32 = 9 << 16
    static let tctiLayer: UInt32 = 10 << 16

    static func call(_ name: String, _ body: () -> TSS2_RC) throws(TPMError) {
        let rc = body()
        guard rc != TSS2_RC(TSS2_RC_SUCCESS) else { return }
        throw error(name, rc)
    }

    static func error(_ name: String, _ rc: TSS2_RC) -> TPMError {
        let text = Tss2_RC_Decode(rc).map { String(cString: $0) } ?? "unknown response code"
        return TPMError(responseCode: rc, call: name, text: text)
    }
}
