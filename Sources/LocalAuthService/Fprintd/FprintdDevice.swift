internal import CFprint
internal import CGLib
import DBusCore
import LocalAuthShared

/// One reader as fprintd's Device object: who claimed it, the operation in
/// progress, its properties, and the methods of net.reactivated.Fprint.Device.
///
/// fprintd's rules: every call but ListEnrolledFingers needs the device
/// claimed by the caller (Claim needs it free: AlreadyInUse); Claim with an
/// empty name claims for the caller, another user's name needs polkit's
/// setusername; the claim ends with Release or when the claimer leaves the
/// bus. One operation (verify or enroll) at a time; it stays "current" after
/// its final status until VerifyStop / EnrollStop.
@ServiceActor
final class FprintdDevice {
    let id: Int
    let identity: Readers.Identity
    let path: String
    unowned let server: FprintdServer
    let reader: Readers.Reader
    var service: LocalAuthService { server.service }
    private(set) var isGone = false

    struct Claim {
        let sender: String
        let username: String
        let uid: UInt32
    }
    private(set) var claim: Claim?
    /// The verify or enroll in progress (FprintdOperations.swift).
    var operation: FprintdOperation?

    /// Last values sent, for PropertiesChanged.
    private var fingerPresent = false
    private var fingerNeeded = false

    init(id: Int, reader: Readers.Reader, server: FprintdServer) {
        self.id = id
        self.reader = reader
        self.identity = reader.identity
        self.server = server
        path = FprintdBus.devicePath(id)
        followFingerStatus()
    }

    var supportsIdentify: Bool { reader.supportsIdentify }

    // MARK: Checks, in fprintd's order

    /// The claim a method needs (its row's `ClaimRule`), checked by the
    /// router before polkit and again after it (FprintdContract.swift).
    func checkClaim(_ rule: ClaimRule, sender: String) throws(ServiceError) {
        if isGone { throw ServiceError(.failed, "the reader \(identity) is gone") }
        switch rule {
        case .anytime:
            return
        case .unclaimed:
            if claim != nil { throw ServiceError(.busy, "Device was already claimed") }
        case .claimedOrFree:
            if let claim, claim.sender != sender { throw ServiceError(.busy, "Device already in use by another user") }
        case .claimed:
            guard let claim else { throw ServiceError(.notClaimed, "Device was not claimed before use") }
            if claim.sender != sender { throw ServiceError(.busy, "Device already in use by another user") }
        }
    }

    func currentClaim(_ sender: String) throws(ServiceError) -> Claim {
        guard let claim else { throw ServiceError(.notClaimed, "Device was not claimed before use") }
        guard claim.sender == sender else { throw ServiceError(.busy, "Device already in use by another user") }
        return claim
    }

    // MARK: Claim and Release

    /// Claims for the caller, or for the user the call named (the router
    /// asked setusername and looked the name up: `request.target`).
    func claim(_ call: Call<UsernameArgument>) throws(ServiceError) -> [DBusValue] {
        let request = call.request
        let username: String
        if call.arguments.username.isEmpty {
            guard let own = Users.name(of: request.uid) else {
                throw ServiceError(.failed, "Failed to get information about user UID \(request.uid)")
            }
            username = own
        } else {
            username = call.arguments.username
        }
        guard claim == nil else { throw ServiceError(.busy, "Device was already claimed") }
        claim = Claim(sender: request.sender, username: username, uid: request.target)
        Log.info("fprintd device \(id) claimed by \(request.sender) (uid \(request.uid)) for \(username)")
        return []
    }

    func release(_ request: Request) async throws(ServiceError) -> [DBusValue] {
        _ = try currentClaim(request.sender)
        if let operation {
            operation.cancel()
            await operation.finished()
            self.operation = nil
        }
        claim = nil
        Log.info("fprintd device \(id) released by \(request.sender)")
        return []
    }

    func senderVanished(_ name: String) {
        guard let claim, claim.sender == name else { return }
        operation?.cancel()
        operation = nil
        self.claim = nil
        Log.info("fprintd device \(id): \(name) left the bus; released")
    }

    func stopAll() {
        operation?.cancel()
    }

    func readerGone() {
        isGone = true
        operation?.readerGone()
    }

    // MARK: Prints

    private func enrolled(_ uid: UInt32) -> [PrintStore.StoredPrint] {
        service.prints.prints(of: uid, for: identity)
    }

    func listEnrolledFingers(_ request: Request) throws(ServiceError) -> [DBusValue] {
        let fingers = enrolled(request.target).map(\.finger.rawValue)
        guard !fingers.isEmpty else { throw ServiceError(.notEnrolled, "Failed to discover prints") }
        return [.strings(fingers)]
    }

    func deleteEnrolledFingers(_ request: Request) async throws(ServiceError) -> [DBusValue] {
        guard operation == nil else { throw ServiceError(.busy, "Another operation is already in progress") }
        try await delete(nil, uid: request.target, record: request.record)
        return []
    }

    func deleteEnrolledFingers2(_ request: Request) async throws(ServiceError) -> [DBusValue] {
        let claim = try currentClaim(request.sender)
        guard operation == nil else { throw ServiceError(.busy, "Another operation is already in progress") }
        try await delete(nil, uid: claim.uid, record: request.record)
        return []
    }

    func deleteEnrolledFinger(_ call: Call<FingerNameArgument>) async throws(ServiceError) -> [DBusValue] {
        let request = call.request
        let claim = try currentClaim(request.sender)
        guard let finger = FingerName(rawValue: call.arguments.name) else {
            throw ServiceError(.invalidArgs, "Invalid finger name")
        }
        guard operation == nil else { throw ServiceError(.busy, "Another operation is already in progress") }
        try await delete(finger, uid: claim.uid, record: request.record)
        return []
    }

    /// The user's prints (one finger, or all) made on this reader, from both
    /// layouts: one print is one print, wherever it was enrolled.
    private func doomed(_ finger: FingerName?, uid: UInt32) throws(ServiceError) -> [PrintStore.StoredPrint] {
        let doomed = service.prints.allPrints(of: uid).filter { $0.reader == identity && (finger == nil || $0.finger == finger) }
        guard !doomed.isEmpty else {
            throw ServiceError(.notEnrolled, finger.map { "Fingerprint for finger \($0.rawValue) is not enrolled" }
                                                    ?? "No fingerprint enrolled")
        }
        return doomed
    }

    /// Deletes outside an operation: on a reader that keeps prints on its
    /// chip, the reader is taken for the delete as LocalAuth's delete takes it
    /// (`ReaderGate.withReader`: a turn in the queue, opened, given back),
    /// and each print leaves the chip before its file goes.
    private func delete(_ finger: FingerName?, uid: UInt32, record: CallRecord) async throws(ServiceError) {
        let doomed = try doomed(finger, uid: uid)
        guard reader.storesPrints else { return try removeFiles(doomed, finger: finger, uid: uid) }
        try await service.readerGate.withReader(identity, for: record, uid: uid, { device throws(ServiceError) in
            try await delete(finger, uid: uid, on: device)
        }, failedToOpen: { ServiceError(.readerPrintNotDeleted, "Failed to delete fingerprint from the reader: \($0.message)") })
    }

    /// Deletes with this reader held (`device`): from its chip first if it
    /// keeps prints (a file never goes while its slot stays taken), then the files.
    func delete(_ finger: FingerName?, uid: UInt32, on device: Readers.Reader) async throws(ServiceError) {
        let doomed = try doomed(finger, uid: uid)
        if device.storesPrints {
            for stored in doomed {
                do throws(GLibError) {
                    try await service.readers.deleteFromChip(stored.print, on: device)
                } catch {
                    if error.isDevice(FP_DEVICE_ERROR_REMOVED_VALUE) { service.readers.forget(device) }
                    throw ServiceError(.readerPrintNotDeleted, "Failed to delete fingerprint from the reader: \(error.message)")
                }
                Log.info("fprintd device \(id): deleted \(stored.finger.rawValue) of uid \(uid) from the chip of \(identity)")
            }
        }
        try removeFiles(doomed, finger: finger, uid: uid)
    }

    private func removeFiles(_ doomed: [PrintStore.StoredPrint], finger: FingerName?, uid: UInt32) throws(ServiceError) {
        // The user's LAEnvironment subscribers hear it when the call ends (FprintdServer).
        defer { service.environment.userChanged(uid) }
        for stored in doomed {
            do {
                try AtomicFile.remove(stored.path)
            } catch {
                throw ServiceError(.storageFailed, "Failed to delete fingerprint: \(error)")
            }
        }
        Log.info("fprintd device \(id): deleted \(finger?.rawValue ?? "every finger") of uid \(uid) on \(identity)")
    }

    // MARK: Properties

    /// The Device interface's properties (served by the router, FprintdContract.swift).
    var propertyValues: [String: DBusValue] {
        let device = reader.fpDevice
        // Read from the device itself: known whether or not the reader is open now.
        let stages = fp_device_get_nr_enroll_stages(device) + (supportsIdentify ? 1 : 0)
        return [
            FprintdBus.Property.name: .string(fp_device_get_name(device).map { String(cString: $0) } ?? ""),
            FprintdBus.Property.numEnrollStages: .int32(stages),
            FprintdBus.Property.scanType: .string(fp_device_get_scan_type(device) == FP_SCAN_TYPE_SWIPE ? "swipe" : "press"),
            FprintdBus.Property.fingerPresent: .boolean(fingerPresent),
            FprintdBus.Property.fingerNeeded: .boolean(fingerNeeded),
        ]
    }

    /// libfprint's finger-status, followed as fprintd follows it: each change
    /// of finger-present / finger-needed is a PropertiesChanged.
    private func followFingerStatus() {
        let me = Unmanaged.passUnretained(self).toOpaque()
        // The device object lives as long as the process (like the reader's own handlers).
        _ = Unmanaged.passRetained(self)
        _ = cfprint_connect_notify(reader.fpDevice, "notify::finger-status", { device, _, data in
            guard let device, let data else { return }
            let me = Unmanaged<FprintdDevice>.fromOpaque(data).takeUnretainedValue()
            let status = fp_device_get_finger_status(device).rawValue
            ServiceActor.assumeIsolated {
                me.fingerStatusChanged(present: status & FP_FINGER_STATUS_PRESENT.rawValue != 0,
                                       needed: status & FP_FINGER_STATUS_NEEDED.rawValue != 0)
            }
        }, me)
    }

    private func fingerStatusChanged(present: Bool, needed: Bool) {
        var changed: [String: DBusValue] = [:]
        if present != fingerPresent { changed[FprintdBus.Property.fingerPresent] = .boolean(present) }
        if needed != fingerNeeded { changed[FprintdBus.Property.fingerNeeded] = .boolean(needed) }
        fingerPresent = present
        fingerNeeded = needed
        guard !changed.isEmpty, !isGone else { return }
        try? service.bus.emit(path: ObjectPath(stringLiteral: path), interface: "org.freedesktop.DBus.Properties",
                              member: "PropertiesChanged",
                              arguments: [.string(FprintdBus.deviceInterface), .dictionary(changed), .array("s", [])])
    }

    /// A status signal of this device, to the claimer only (fprintd broadcasts
    /// them; whether someone's finger matched is nobody else's business).
    func emit(_ member: String, _ arguments: [DBusValue], to destination: String) {
        try? service.bus.emit(path: ObjectPath(stringLiteral: path), interface: FprintdBus.deviceInterface,
                              member: member, arguments: arguments, destination: destination)
    }
}
