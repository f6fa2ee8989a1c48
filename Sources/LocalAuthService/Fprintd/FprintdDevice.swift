import DBusCore
import LocalAuthShared

/// One reader as fprintd's Device object: who claimed it, the operation in
/// progress, its properties, and the methods of net.reactivated.Fprint.Device
/// (its verify and enroll: FprintdOperations.swift; its prints:
/// FprintdDevicePrints.swift).
///
/// fprintd's rules: every call but ListEnrolledFingers needs the device
/// claimed by the caller (Claim needs it free: AlreadyInUse); Claim with an
/// empty name claims for the caller, another user's name needs polkit's
/// setusername; the claim ends with Release or when the claimer leaves the
/// bus. One operation (verify or enroll) at a time; it stays "current" after
/// its final status until VerifyStop / EnrollStop.
///
/// As fprintd, Claim opens the reader and the claim keeps it open until it
/// ends (`hold`); unlike fprintd's, the open reader is shared: the claim takes
/// no turn in the reader queue, so the service's own operations run on it
/// meanwhile, and a verify or enroll still takes its turn (docs/FPRINTD.md).
/// Sleep takes the hold back (the readers close before logind may suspend)
/// and resume gives it again.
///
/// It reaches the rest of the service only through its seams
/// (FprintdSeams.swift), so its rules run in unit tests over fakes.
@ServiceActor
final class FprintdDevice {
    let id: Int
    let reader: any FprintdReader
    var identity: Readers.Identity { reader.identity }
    let path: String
    let seams: any FprintdSeams
    /// The reader queue every operation of the service takes its turn in (the gate's).
    var queue: SensorQueue { seams.gate.queue }
    /// How long a verify or enroll waits for a finger (`--scan-timeout`).
    let scanTimeout: Double
    /// Runs work as a task of the service's group (SIGTERM waits for it).
    let spawn: @ServiceActor (@escaping @Sendable @ServiceActor () async -> Void) -> Void
    private(set) var isGone = false
    /// SIGTERM: no operation starts any more.
    private(set) var stopping = false

    struct Claim {
        let sender: String
        let username: String
        let uid: UInt32
        /// The claimer's connection: its uid, and whether it is still in
        /// front of the reader (an idle claim ends when it is not).
        let claimer: CallerRecord
        /// Its Claim still waits for the reader to open (fprintd's ACTION_OPEN).
        var opening = true
    }
    private(set) var claim: Claim?
    /// The reader kept open for the claim. Nil while there is none, while
    /// asleep, and when it could not be opened again after resume (each
    /// verify and enroll then opens the reader for itself).
    private var hold: (any FprintdHold)?
    /// The verify or enroll in progress (FprintdOperation.swift).
    var operation: FprintdOperation?

    /// Last values sent, for PropertiesChanged.
    private var fingerPresent = false
    private var fingerNeeded = false

    init(
        id: Int, reader: any FprintdReader, seams: any FprintdSeams, scanTimeout: Double,
        spawn: @escaping @ServiceActor (@escaping @Sendable @ServiceActor () async -> Void) -> Void
    ) {
        self.id = id
        self.reader = reader
        self.seams = seams
        self.scanTimeout = scanTimeout
        self.spawn = spawn
        path = FprintdBus.devicePath(id)
        reader.followFingerStatus { [weak self] present, needed in self?.fingerStatusChanged(present: present, needed: needed) }
    }

    var supportsIdentify: Bool { reader.supportsIdentify }

    // MARK: Checks, in fprintd's order

    /// The claim a method needs (its row's `ClaimRule`), checked by the
    /// router before polkit and again after it (FprintdContract.swift).
    func checkClaim(_ rule: ClaimRule, sender: String, callerUID: UInt32? = nil) throws(ServiceError) {
        if isGone { throw ServiceError(.failed, "the reader \(identity) is gone") }
        switch rule {
        case .anytime:
            return
        case .unclaimed:
            // A root PAM host may take an idle claim over (`claim`); it is judged there.
            if claim != nil, !(callerUID == 0 && claimIsIdleOfAnotherUID) {
                throw ServiceError(.busy, "Device was already claimed")
            }
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
        // The claimer's calls before its Claim answered: fprintd's words.
        guard !claim.opening else { throw ServiceError(.busy, "Claim already in progress") }
        return claim
    }

    // MARK: Claim and Release

    /// Claims for the caller, or for the user the call named (the router
    /// asked setusername and looked the name up: `request.target`), and
    /// opens the reader for the claim, as fprintd does: one attempt; if it
    /// fails, fprintd's Internal "Open failed with error: …" and no claim.
    func claim(_ call: Call<UsernameArgument>) async throws(ServiceError) -> [DBusValue] {
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
        if claim != nil { try await takeOverIdleClaim(for: request) }
        guard claim == nil else { throw ServiceError(.busy, "Device was already claimed") }
        guard !stopping else { throw ServiceError(.failed, "the service is stopping") }
        // Set before the open: a second Claim meanwhile is AlreadyInUse, as in fprintd.
        claim = Claim(sender: request.sender, username: username, uid: request.target, claimer: request.caller)
        let opened: (any FprintdHold)?
        do throws(ServiceError) {
            // Asleep: the claim holds nothing until resume (`readersOffered`).
            opened = seams.asleep ? nil : try await seams.hold(identity, cancellable: request.record.cancellable)
        } catch {
            if claim?.sender == request.sender { claim = nil }
            Log.notice("fprintd device \(id): Claim by \(request.sender) could not open the reader: \(error.message)")
            throw ServiceError(.failed, "Open failed with error: \(error.message)")
        }
        // Released (the claimer left), unplugged or stopped while it opened: nothing is kept.
        guard claim?.sender == request.sender, !isGone, !stopping else {
            opened?.release()
            throw ServiceError(.failed, "the claim ended while the reader opened")
        }
        keep(opened)
        claim?.opening = false
        Log.info("fprintd device \(id) claimed by \(request.sender) (uid \(request.uid)) for \(username)")
        return []
    }

    /// The claim's hold of the reader, unless sleep began meanwhile: then the
    /// readers must close, and resume gives the claim a hold again.
    private func keep(_ opened: (any FprintdHold)?) {
        guard let opened else { return }
        if seams.asleep || hold != nil {
            opened.release()
        } else {
            hold = opened
        }
    }

    /// The claim ended (or the readers must close): the reader goes back, and
    /// closes after the linger once no operation holds it.
    private func giveBackHold() {
        hold?.release()
        hold = nil
    }

    func release(_ request: Request) async throws(ServiceError) -> [DBusValue] {
        _ = try currentClaim(request.sender)
        if let operation {
            operation.cancel()
            await operation.finished()
            self.operation = nil
        }
        claim = nil
        giveBackHold()
        Log.info("fprintd device \(id) released by \(request.sender)")
        return []
    }

    // MARK: Claims and the person in front (docs/FPRINTD.md, "Claims")

    /// A claim with no verify or enroll running (none started, or its final
    /// status sent), made by a connection of a uid other than root's.
    var claimIsIdleOfAnotherUID: Bool {
        guard let claim, !claim.opening, claim.claimer.uid != 0 else { return false }
        return operation?.isFinished ?? true
    }

    /// fprintd keeps a claim until its claimer releases it or leaves the bus,
    /// so a program that claims and sits (GNOME Settings left open, a stuck
    /// client) leaves the next person's greeter, lock screen and sudo with
    /// AlreadyInUse. Here a root PAM host at the reader (the greeter's
    /// worker, the lock screen's PAM, sudo of the person in front) takes an
    /// idle claim of another uid over: the old claim ends, logged.
    private func takeOverIdleClaim(for request: Request) async throws(ServiceError) {
        guard request.uid == 0, claimIsIdleOfAnotherUID, let held = claim else { return }
        let presence = await seams.presence(of: request.caller)
        if let refusal = Presence.refusal(presence) {
            throw ServiceError(.busy, "Device was already claimed (\(refusal.message))")
        }
        // Still that claim, still idle, after the await.
        guard claim?.sender == held.sender, claimIsIdleOfAnotherUID else { return }
        endClaim("taken over by \(request.sender) (uid 0, at the reader)")
    }

    /// The session in front may have changed (logind): an idle claim whose
    /// claimer is no longer at the reader ends, so that the person now in
    /// front can claim the reader. A claim with an operation running waits
    /// for its final status (a verify ends with the switch: Evaluation/
    /// Verification.swift), then is judged again.
    func frontChanged() async {
        guard let held = claim, !held.opening else { return }
        let presence = await seams.presence(of: held.claimer)
        guard let refusal = Presence.refusal(presence), claim?.sender == held.sender else { return }
        if let operation, !operation.isFinished {
            await operation.finished()
            return await frontChanged()
        }
        endClaim("its claimer \(held.sender) (uid \(held.claimer.uid)) is no longer at the reader: \(refusal.message)")
    }

    /// Ends the claim now; its claimer's next call hears "not claimed".
    private func endClaim(_ why: String) {
        guard let claim else { return }
        operation?.cancel()
        operation = nil
        self.claim = nil
        giveBackHold()
        Log.notice("fprintd device \(id): the claim for \(claim.username) ended: \(why)")
    }

    func senderVanished(_ name: String) {
        guard let claim, claim.sender == name else { return }
        operation?.cancel()
        operation = nil
        self.claim = nil
        giveBackHold()
        Log.info("fprintd device \(id): \(name) left the bus; released")
    }

    func stopAll() {
        stopping = true
        // Cancelled as by a Stop: fprintd's final statuses (verify-no-match, enroll-failed).
        operation?.cancel()
        // The readers close before the service exits (Readers.closeAll waits for every holder).
        giveBackHold()
    }

    func readerGone() {
        isGone = true
        operation?.readerGone()
        giveBackHold()
    }

    /// Sleep begins: the readers close before logind may suspend
    /// (Readers.closeAll waits for every holder), so the claim gives its
    /// hold back; the claim itself stays, as fprintd's does. An operation
    /// ends through its queue ticket (FprintdOperation.swift).
    func sleepBegan() {
        giveBackHold()
    }

    /// After resume: the claim has its reader opened again (one attempt; if
    /// it fails, each verify or enroll opens the reader for itself).
    func readersOffered() {
        guard let claim, !claim.opening, hold == nil, !isGone, !stopping else { return }
        spawn { [self] in
            let opened: (any FprintdHold)?
            do throws(ServiceError) {
                opened = try await seams.hold(identity, cancellable: Cancellable())
            } catch {
                Log.notice("fprintd device \(id): the claimed reader could not be opened again after resume: \(error.message)")
                return
            }
            // The same claim still, and nothing ended it meanwhile.
            guard self.claim?.sender == claim.sender, !isGone, !stopping else {
                opened?.release()
                return
            }
            keep(opened)
        }
    }

    // MARK: Properties

    /// The Device interface's properties (served by the router, FprintdContract.swift).
    var propertyValues: [String: DBusValue] {
        // A reader that identifies runs fprintd's duplicate check as a stage of its own.
        let stages = reader.enrollStages + (supportsIdentify ? 1 : 0)
        return [
            FprintdBus.Property.name: .string(reader.name),
            FprintdBus.Property.numEnrollStages: .int32(Int32(stages)),
            FprintdBus.Property.scanType: .string(reader.scanType),
            FprintdBus.Property.fingerPresent: .boolean(fingerPresent),
            FprintdBus.Property.fingerNeeded: .boolean(fingerNeeded),
        ]
    }

    /// libfprint's finger-status, followed as fprintd follows it: each change
    /// of finger-present / finger-needed is a PropertiesChanged.
    func fingerStatusChanged(present: Bool, needed: Bool) {
        var changed: [String: DBusValue] = [:]
        if present != fingerPresent { changed[FprintdBus.Property.fingerPresent] = .boolean(present) }
        if needed != fingerNeeded { changed[FprintdBus.Property.fingerNeeded] = .boolean(needed) }
        fingerPresent = present
        fingerNeeded = needed
        guard !changed.isEmpty, !isGone else { return }
        seams.emit("PropertiesChanged", [.string(FprintdBus.deviceInterface), .dictionary(changed), .array("s", [])],
                   from: path, interface: "org.freedesktop.DBus.Properties", to: nil)
    }

    /// A status signal of this device, to the claimer only (fprintd broadcasts
    /// them; whether someone's finger matched is nobody else's business).
    func emit(_ member: String, _ arguments: [DBusValue], to destination: String) {
        seams.emit(member, arguments, from: path, interface: FprintdBus.deviceInterface, to: destination)
    }
}
