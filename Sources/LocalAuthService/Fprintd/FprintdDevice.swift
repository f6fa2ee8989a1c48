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

    func serve(_ call: IncomingCall, _ spec: FprintdMethodSpec, caller: CallerRecord,
               record: CallRecord) async throws(DBusError) -> [DBusValue] {
        let uid = caller.uid
        try checkClaim(spec.claim, sender: call.sender)
        var username: String?
        if spec.takesUsername {
            username = try await authorizeUsername(record.arguments[0].string ?? "", uid: uid, sender: call.sender, record: record)
        }
        try await authorize(spec.actions, sender: call.sender, record: record)
        // Re-read after the awaits: the claim may have changed meanwhile, and
        // the caller may have left the bus while polkit answered (a claim set
        // for a name that is gone would hold the device for nobody, for ever).
        try checkClaim(spec.claim, sender: call.sender)
        try checkStillThere(record)
        return try await spec.handler(self, FprintdRequest(call: call, caller: caller, record: record, username: username))
    }

    /// The call ended (its caller left the bus, or SIGTERM): nothing may be
    /// set up for it any more.
    private func checkStillThere(_ record: CallRecord) throws(DBusError) {
        do throws(ServiceError) {
            try record.checkNotEnded()
        } catch {
            throw FprintdBus.Error.internal("the call ended: \(error.message)")
        }
    }

    private func checkClaim(_ rule: FprintdMethodSpec.ClaimRule, sender: String) throws(DBusError) {
        if isGone { throw FprintdBus.Error.internal("the reader \(identity) is gone") }
        switch rule {
        case .anytime:
            return
        case .unclaimed:
            if claim != nil { throw FprintdBus.Error.alreadyInUse("Device was already claimed") }
        case .claimedOrFree:
            if let claim, claim.sender != sender { throw FprintdBus.Error.alreadyInUse("Device already in use by another user") }
        case .claimed:
            guard let claim else { throw FprintdBus.Error.claimDevice("Device was not claimed before use") }
            if claim.sender != sender { throw FprintdBus.Error.alreadyInUse("Device already in use by another user") }
        }
    }

    /// The user a call is about: the caller for an empty name or their own;
    /// anyone else needs setusername (asked before the name is looked up).
    private func authorizeUsername(_ requested: String, uid: UInt32, sender: String,
                                   record: CallRecord) async throws(DBusError) -> String {
        guard let own = Users.name(of: uid) else {
            throw FprintdBus.Error.internal("Failed to get information about user UID \(uid)")
        }
        if requested.isEmpty || requested == own { return own }
        guard requested.utf8.count <= 256 else { throw FprintdBus.Error.internal("the user name is too long") }
        try await authorize([.setUsername], sender: sender, record: record)
        return requested
    }

    /// Any one of `actions` authorized by polkit (fprintd asks with user interaction allowed).
    private func authorize(_ actions: [FprintdBus.Action], sender: String, record: CallRecord) async throws(DBusError) {
        guard !actions.isEmpty else { return }
        for action in actions {
            let check = Cancellable()
            // SIGTERM or the caller leaving cancels the check (Requests.swift).
            record.authorization = check
            let decision = await service.authorizer.check(actionID: action.rawValue, busName: sender, interactive: true,
                                                          cancellable: check)
            record.authorization = nil
            if decision == .authorized { return }
            if record.interruption != nil { break }
        }
        throw FprintdBus.Error.permissionDenied("Not Authorized: \(actions.last!.rawValue)")
    }

    /// The uid of a username named in a call (fprintd keys prints by name; the
    /// lockout and our store by uid).
    private func uid(of username: String) throws(DBusError) -> UInt32 {
        guard let uid = Users.uid(of: username) else {
            throw FprintdBus.Error.internal("there is no user named \(ServiceErrors.echo(username))")
        }
        return uid
    }

    func currentClaim(_ sender: String) throws(DBusError) -> Claim {
        guard let claim else { throw FprintdBus.Error.claimDevice("Device was not claimed before use") }
        guard claim.sender == sender else { throw FprintdBus.Error.alreadyInUse("Device already in use by another user") }
        return claim
    }

    // MARK: Claim and Release

    func claim(_ request: FprintdRequest) async throws(DBusError) -> [DBusValue] {
        let username = request.username!
        let uid = try uid(of: username)
        guard claim == nil else { throw FprintdBus.Error.alreadyInUse("Device was already claimed") }
        try checkStillThere(request.record)
        claim = Claim(sender: request.sender, username: username, uid: uid)
        Log.info("fprintd device \(id) claimed by \(request.sender) (uid \(request.uid)) for \(username)")
        return []
    }

    func release(_ request: FprintdRequest) async throws(DBusError) -> [DBusValue] {
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

    func listEnrolledFingers(_ request: FprintdRequest) throws(DBusError) -> [DBusValue] {
        let fingers = enrolled(try uid(of: request.username!)).map(\.finger.rawValue)
        guard !fingers.isEmpty else { throw FprintdBus.Error.noEnrolledPrints("Failed to discover prints") }
        return [.strings(fingers)]
    }

    func deleteEnrolledFingers(_ request: FprintdRequest) async throws(DBusError) -> [DBusValue] {
        guard operation == nil else { throw FprintdBus.Error.alreadyInUse("Another operation is already in progress") }
        try await delete(nil, uid: try uid(of: request.username!), record: request.record)
        return []
    }

    func deleteEnrolledFingers2(_ request: FprintdRequest) async throws(DBusError) -> [DBusValue] {
        let claim = try currentClaim(request.sender)
        guard operation == nil else { throw FprintdBus.Error.alreadyInUse("Another operation is already in progress") }
        try await delete(nil, uid: claim.uid, record: request.record)
        return []
    }

    func deleteEnrolledFinger(_ request: FprintdRequest) async throws(DBusError) -> [DBusValue] {
        let claim = try currentClaim(request.sender)
        guard let name = request.arguments[0].string, let finger = FingerName(rawValue: name) else {
            throw FprintdBus.Error.invalidFingername("Invalid finger name")
        }
        guard operation == nil else { throw FprintdBus.Error.alreadyInUse("Another operation is already in progress") }
        try await delete(finger, uid: claim.uid, record: request.record)
        return []
    }

    /// The user's prints (one finger, or all) made on this reader, from both
    /// layouts: one print is one print, wherever it was enrolled.
    private func doomed(_ finger: FingerName?, uid: UInt32) throws(DBusError) -> [PrintStore.StoredPrint] {
        let doomed = service.prints.allPrints(of: uid).filter { $0.reader == identity && (finger == nil || $0.finger == finger) }
        guard !doomed.isEmpty else {
            throw FprintdBus.Error.noEnrolledPrints(finger.map { "Fingerprint for finger \($0.rawValue) is not enrolled" }
                                                    ?? "No fingerprint enrolled")
        }
        return doomed
    }

    /// Deletes outside an operation: on a reader that keeps prints on its
    /// chip, the reader is taken for the delete as main's delete takes it
    /// (Readers/ChipPrints.swift `withReader`: a turn in the queue, opened,
    /// given back), and each print leaves the chip before its file goes.
    private func delete(_ finger: FingerName?, uid: UInt32, record: CallRecord) async throws(DBusError) {
        let doomed = try doomed(finger, uid: uid)
        guard reader.storesPrints else { return try removeFiles(doomed, finger: finger, uid: uid) }
        do {
            try await service.readerGate.withReader(identity, for: record, uid: uid, { device throws(DBusError) in
                try await delete(finger, uid: uid, on: device)
            }, failedToOpen: { $0.dbusError })
        } catch where !error.name.rawValue.hasPrefix("net.reactivated.Fprint.Error.") {
            throw FprintdBus.Error.printsNotDeletedFromDevice("Failed to delete fingerprint from the reader: \(error.message)")
        }
    }

    /// Deletes with this reader held (`device`): from its chip first if it
    /// keeps prints (a file never goes while its slot stays taken), then the files.
    func delete(_ finger: FingerName?, uid: UInt32, on device: Readers.Reader) async throws(DBusError) {
        let doomed = try doomed(finger, uid: uid)
        if device.storesPrints {
            for stored in doomed {
                do throws(GLibError) {
                    try await service.readers.deleteFromChip(stored.print, on: device)
                } catch {
                    if error.isDevice(FP_DEVICE_ERROR_REMOVED_VALUE) { service.readers.forget(device) }
                    throw FprintdBus.Error.printsNotDeletedFromDevice("Failed to delete fingerprint from the reader: \(error.message)")
                }
                Log.info("fprintd device \(id): deleted \(stored.finger.rawValue) of uid \(uid) from the chip of \(identity)")
            }
        }
        try removeFiles(doomed, finger: finger, uid: uid)
    }

    private func removeFiles(_ doomed: [PrintStore.StoredPrint], finger: FingerName?, uid: UInt32) throws(DBusError) {
        // The user's LAEnvironment subscribers hear it when the call ends (FprintdServer).
        defer { service.environment.userChanged(uid) }
        for stored in doomed {
            do {
                try AtomicFile.remove(stored.path)
            } catch {
                throw FprintdBus.Error.printsNotDeleted("Failed to delete fingerprint: \(error)")
            }
        }
        Log.info("fprintd device \(id): deleted \(finger?.rawValue ?? "every finger") of uid \(uid) on \(identity)")
    }

    // MARK: Properties

    private var propertyValues: [String: DBusValue] {
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

    func properties(_ call: IncomingCall) {
        let arguments = call.arguments
        switch (call.member, call.signature) {
        case ("Get", "ss"):
            guard arguments[0].string == FprintdBus.deviceInterface else {
                return call.fail(DBusError(.unknownInterface, "no interface \(arguments[0].string ?? "")"))
            }
            guard let value = propertyValues[arguments[1].string ?? ""] else {
                return call.fail(DBusError(.unknownProperty, "no property \(arguments[1].string ?? "")"))
            }
            call.reply([.variant(value)])
        case ("GetAll", "s"):
            let ours = arguments[0].string == FprintdBus.deviceInterface || arguments[0].string == ""
            call.reply([.dictionary(ours ? propertyValues : [:])])
        case ("Set", "ssv"):
            call.fail(DBusError(.propertyReadOnly, "\(arguments[1].string ?? "") is read-only"))
        default:
            call.fail(DBusError(.unknownMethod, "Properties has no method \(call.member)(\(call.signature))"))
        }
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
