internal import CTSS2
import Glibc
import LocalAuthCrypto
import Synchronization

/// One TPM 2.0, reached through a TCTI configuration string of tpm2-tss's
/// loader: "device:/dev/tpmrm0" (the kernel's resource manager),
/// "swtpm:host=127.0.0.1,port=2321" (a software TPM), and so on.
///
/// Every operation opens its own connection and ESAPI context, creates the
/// storage primary key (see `TPMTemplates`), does its work, flushes every
/// object it loaded and closes the connection. So nothing stays in the TPM
/// between operations (a TPM has only a few object slots, and without a
/// resource manager a leaked one stays until reset), a TPM that went away
/// and came back is simply used again, and nothing persistent is needed.
/// Operations are serialised: an ESAPI context is not thread-safe and a
/// directly connected TPM (swtpm) serves one connection at a time.
public final class TPMDevice: Sendable {
    /// The kernel's TPM resource manager, used by `--tpm auto` when present.
    public static let kernelResourceManager = "/dev/tpmrm0"

    public let tcti: String
    private let lock = Mutex<Void>(())

    public init(tcti: String) {
        self.tcti = tcti
        // tpm2-tss logs its own warnings and errors on stderr, which is the
        // service's journal; every failure already reaches the caller as a
        // TPMError with the decoded code. TSS2_LOG set by the admin still wins.
        setenv("TSS2_LOG", "all+NONE", 0)
    }

    /// The TCTI configuration for the kernel's resource manager.
    public static var kernelResourceManagerTCTI: String { "device:" + kernelResourceManager }

    /// Runs `body` with a fresh ESAPI context and the storage primary key,
    /// both gone afterwards.
    func withPrimary<R: Sendable>(_ body: (Session) throws(TPMError) -> R) throws(TPMError) -> R {
        try lock.withLock { (_: inout Void) throws(TPMError) -> R in
            var transport: OpaquePointer?
            try TSS.call("Tss2_TctiLdr_Initialize(\(tcti))") { Tss2_TctiLdr_Initialize(tcti, &transport) }
            defer { Tss2_TctiLdr_Finalize(&transport) }
            var context: OpaquePointer?
            try TSS.call("Esys_Initialize") { Esys_Initialize(&context, transport, nil) }
            defer { Esys_Finalize(&context) }
            let session = Session(context: context!)
            let primary = try session.createPrimary()
            defer { session.flush(primary) }
            return try body(Session(context: context!, primary: primary))
        }
    }

    /// Checks that the TPM answers and can make the storage primary key
    /// (for the service's start-up log).
    public func probe() throws(TPMError) {
        try withPrimary { (_: Session) throws(TPMError) in }
    }
}

/// An open ESAPI context and, once made, the primary key's handle.
struct Session {
    let context: OpaquePointer
    var primary: ESYS_TR = ESYS_TR(ESYS_TR_NONE)

    /// Flushes a transient object. Errors are ignored: this runs on the way
    /// out, often because the TPM already failed; a TPM that went away holds
    /// nothing, and the resource manager flushes what a closed connection left.
    func flush(_ handle: ESYS_TR) {
        try? TSS.call("Esys_FlushContext") { Esys_FlushContext(context, handle) }
    }
}
