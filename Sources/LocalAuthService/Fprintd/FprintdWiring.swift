internal import CFprint
import DBusCore
import LocalAuthShared

// fprintd's seams served by the service's components (FprintdSeams.swift):
// wiring only, no decisions. It is given the components it uses, not the
// service.

/// The readers, prints, lockout, presence and bus, as the service has them.
@ServiceActor
struct ServiceFprintdWiring: FprintdSeams, ReaderLookupWiring {
    let readers: Readers
    let gate: ReaderGate
    let prints: PrintStore
    let readerChoice: ReaderChoice
    let verifier: Verifier
    let environment: Environment
    let callers: Callers
    let duplicateChecks: DuplicateCheckBudget
    let enrollment: Enrollment
    let bus: BusConnection
    let loginSecrets: LoginSecrets

    /// pam_fprintd's match, seen here: a nonce-less ticket for its process (LoginSecret/, docs/KEYRING.md).
    func matchSeen(uid: UInt32, sender: String) {
        guard let caller = callers.known(sender) else { return }
        loginSecrets.matchSeen(uid: uid, caller: caller, nonce: [])
    }

    // MARK: Readers

    func hold(_ reader: Readers.Identity, cancellable: Cancellable) async throws(ServiceError) -> (any FprintdHold)? {
        do {
            // A deadline of now: one open, no retrying while another program has it.
            let device = try await readers.acquire(reader, until: .now, cancellable: cancellable, busy: {})
            return ClaimedReader(readers: readers, device: device)
        } catch {
            switch error {
            case .suspended: return nil
            case .cancelled: throw ServiceErrors.la(.systemCancel, "cancelled while opening the fingerprint reader")
            case .removed: throw ServiceError(.failed, "the reader \(reader) is gone")
            case .heldByAnotherProgram(let why): throw ServiceError(.readerInUse, why)
            }
        }
    }

    var asleep: Bool { environment.asleep }

    // MARK: Prints

    func prints(of uid: UInt32, on reader: Readers.Identity) -> [EnrolledPrint] {
        prints.prints(of: uid, for: reader).map(\.enrolled)
    }

    func allPrints(of uid: UInt32, on reader: Readers.Identity) -> [EnrolledPrint] {
        prints.allPrints(of: uid).filter { $0.reader == reader }.map(\.enrolled)
    }

    func everyPrint(on reader: Readers.Identity) -> [EnrolledPrint] { prints.everyPrint(on: reader).map(\.enrolled) }

    func save(_ print: any PrintTemplate, finger: FingerName, username: String, uid: UInt32, reader: Readers.Identity) throws {
        // The prints came from a LibfprintReaderSession: libfprint's own.
        guard let print = print as? GObjectRef else { throw PrintStore.LayoutError(description: "not a libfprint print") }
        try prints.saveInFprintdLayout(print, finger: finger, username: username, uid: uid, reader: reader)
    }

    func remove(_ print: EnrolledPrint) throws {
        // fprintd's store is left as fprintd leaves it (no empty directories); ours keeps its own rules.
        if print.source == .fprintd {
            try prints.removeFromFprintdLayout(print.location)
        } else {
            try AtomicFile.remove(print.location)
        }
    }

    // MARK: Rules and who hears

    func presence(of caller: CallerRecord) async -> Presence {
        if let known = callers.knownPresence(caller) { return known }
        return await callers.presence(caller)
    }

    func passwordNeeded(_ uid: UInt32) -> ServiceError? { environment.passwordNeeded(uid) }

    func userChanged(_ uid: UInt32) {
        environment.userChanged(uid)
        environment.callEnded()
    }

    func emit(_ member: String, _ arguments: [DBusValue], from path: String, interface: String, to destination: String?) {
        try? bus.emit(
            path: ObjectPath(stringLiteral: path), interface: interface, member: member, arguments: arguments,
            destination: destination)
    }
}

/// A Claim's holder of a libfprint reader (Readers.acquire to relinquish).
@ServiceActor
final class ClaimedReader: FprintdHold {
    private let readers: Readers
    private var device: Readers.Reader?

    init(readers: Readers, device: Readers.Reader) {
        self.readers = readers
        self.device = device
    }

    func release() {
        // Once: the count of holders must not go down twice for one hold.
        guard let device else { return }
        self.device = nil
        readers.relinquish(device)
    }
}

/// A libfprint reader as a Device object shows it.
@ServiceActor
final class LibfprintFprintdReader: FprintdReader {
    private let device: Readers.Reader

    init(_ device: Readers.Reader) { self.device = device }

    var identity: Readers.Identity { device.identity }
    var supportsIdentify: Bool { device.supportsIdentify }
    var storesPrints: Bool { device.storesPrints }
    // Read from the device itself: known whether or not the reader is open now.
    var name: String { fp_device_get_name(device.fpDevice).map { String(cString: $0) } ?? "" }
    var enrollStages: Int { Int(fp_device_get_nr_enroll_stages(device.fpDevice)) }
    var scanType: String { fp_device_get_scan_type(device.fpDevice) == FP_SCAN_TYPE_SWIPE ? "swipe" : "press" }

    func followFingerStatus(_ changed: @escaping @ServiceActor (Bool, Bool) -> Void) {
        // Lives as long as the libfprint device: released by GLib with the
        // handler when an unplugged reader's FpDevice goes (issue 30 item 9).
        let box = Unmanaged.passRetained(FingerStatusBox(changed)).toOpaque()
        _ = cfprint_connect_notify_full(
            device.fpDevice, "notify::finger-status",
            { device, _, data in
                guard let device, let data else { return }
                let box = Unmanaged<FingerStatusBox>.fromOpaque(data).takeUnretainedValue()
                let status = fp_device_get_finger_status(device).rawValue
                ServiceActor.assumeIsolated {
                    box.changed(status & FP_FINGER_STATUS_PRESENT.rawValue != 0, status & FP_FINGER_STATUS_NEEDED.rawValue != 0)
                }
            }, box, { data, _ in if let data { Unmanaged<FingerStatusBox>.fromOpaque(data).release() } })
    }
}

private final class FingerStatusBox {
    let changed: @ServiceActor (Bool, Bool) -> Void
    init(_ changed: @escaping @ServiceActor (Bool, Bool) -> Void) { self.changed = changed }
}
