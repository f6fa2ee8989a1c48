internal import CGLib
internal import CLocalAuthInterface
import DBusCore
import LocalAuthShared

/// localauthd: the org.example.LocalAuth service.
///
/// Every call is answered: unknown members get UnknownMethod, bad arguments
/// InvalidArgs, and each method's polkit action is checked (table in
/// MethodTable.swift) before anything changes. State is re-read after every
/// await, since other calls may have run meanwhile.
@ServiceActor
public final class LocalAuthService {
    let configuration: Configuration
    let bus: BusConnection
    let sensor = Sensor()
    let authorizer = Authorizer()
    let queue = SensorQueue()
    let prints: PrintStore
    let lockout: LockoutStore

    /// uid of each caller seen, by unique bus name (names are never reused).
    private var uids: [String: UInt32] = [:]
    private var evaluations: [Evaluation] = []
    var enrollments: [String: Cancellable] = [:]
    private var lastSuccess: [UInt32: ContinuousClock.Instant] = [:]
    private var callsInFlight = 0
    private var idleTimer: EventLoop.Timer?
    private var stopping = false
    private var exitContinuation: CheckedContinuation<Void, Never>?

    static let interfaceXML = String(cString: clocalauth_interface_xml())

    private init(configuration: Configuration, bus: BusConnection) {
        self.configuration = configuration
        self.bus = bus
        prints = PrintStore(stateDirectory: configuration.stateDirectory, fprintdStore: configuration.fprintdStore)
        lockout = LockoutStore(stateDirectory: configuration.stateDirectory)
    }

    /// Connects to the system bus, opens the reader and takes the bus name.
    public static func start(_ configuration: Configuration) async throws -> LocalAuthService {
        try AtomicFile.makeDirectory(configuration.stateDirectory)
        let bus = try BusConnection.connect(to: .system, loop: EventLoop.processDefault)
        let service = LocalAuthService(configuration: configuration, bus: bus)
        await service.sensor.start()
        service.prepareStoreAndReaders()
        bus.export(ObjectPath(stringLiteral: LocalAuthBus.objectPath)) { call in
            ServiceActor.assumeIsolated { service.receive(call) }
        }
        // A caller that leaves the bus cancels what it started.
        try await bus.subscribe(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus",
                                member: "NameOwnerChanged", extraMatch: ",arg2=''") { message in
            ServiceActor.assumeIsolated { service.nameOwnerChanged(message) }
        }
        bus.onDisconnect {
            ServiceActor.assumeIsolated {
                Log.error("lost the system bus; exiting")
                service.stop()
            }
        }
        // Only now, with everything ready, do callers find us.
        switch try bus.requestName(LocalAuthBus.serviceName) {
        case .primaryOwner, .alreadyOwner: break
        case .taken: throw DBusError(.failed, "\(LocalAuthBus.serviceName) is owned by another process")
        }
        Log.info("serving \(LocalAuthBus.serviceName) as \(bus.uniqueName); state in \(configuration.stateDirectory)")
        service.restartIdleTimer()
        return service
    }

    /// Returns once the service has stopped (SIGTERM, idle timeout, bus lost).
    public func waitUntilStopped() async {
        if stopping && evaluations.isEmpty && enrollments.isEmpty { return }
        await withCheckedContinuation { exitContinuation = $0 }
    }

    /// Ends pending work with SystemCancel, answers every caller, then stops.
    public func stop() {
        guard !stopping else { return }
        stopping = true
        Log.info("stopping")
        idleTimer?.cancel()
        for evaluation in evaluations { evaluation.interrupt(.serviceStopping) }
        for enrollment in enrollments.values { enrollment.cancel() }
        finishIfStopped()
    }

    func finishIfStopped() {
        guard stopping, evaluations.isEmpty, enrollments.isEmpty, callsInFlight == 0 else { return }
        Task {
            await sensor.stop()
            bus.close()
            exitContinuation?.resume()
            exitContinuation = nil
        }
    }

    // MARK: Receiving calls

    private func receive(_ call: IncomingCall) {
        idleTimer?.cancel()
        switch call.interface {
        case LocalAuthBus.interface?, nil:
            guard let spec = Self.methods[call.member] else {
                call.fail(DBusError(.unknownMethod, "\(LocalAuthBus.interface) has no method \(call.member)"))
                return restartIdleTimer()
            }
            guard call.signature == spec.signature else {
                call.fail(DBusError(.invalidArgs,
                    "\(call.member) takes (\(spec.signature)), not (\(call.signature))"))
                return restartIdleTimer()
            }
            guard !stopping else {
                call.fail(ServiceErrors.la(.systemCancel, "the authentication service is stopping"))
                return
            }
            callsInFlight += 1
            // Started immediately, on this thread: a call that never has to wait
            // (a preflight) is answered within this dispatch, with no extra
            // trip through the loop; one that waits (polkit, the sensor)
            // suspends there and resumes on the loop.
            Task.immediate(executorPreference: EventLoop.processDefault) { await self.serve(call, spec) }
        case "org.freedesktop.DBus.Introspectable":
            if call.member == "Introspect", call.signature.isEmpty {
                call.reply([.string(Self.interfaceXML)])
            } else {
                call.fail(DBusError(.unknownMethod, "Introspectable has no method \(call.member)(\(call.signature))"))
            }
            restartIdleTimer()
        case "org.freedesktop.DBus.Properties":
            properties(call)
            restartIdleTimer()
        default:
            call.fail(DBusError(.unknownInterface, "no interface \(call.interface ?? "")"))
            restartIdleTimer()
        }
    }

    private func serve(_ call: IncomingCall, _ spec: MethodSpec) async {
        defer {
            callsInFlight -= 1
            restartIdleTimer()
            finishIfStopped()
        }
        do throws(DBusError) {
            let uid = try await callerUID(call.sender)
            // polkit first (the action may depend on a `user` option): Enrollment.swift.
            let request = try await authorize(call, spec, uid: uid)
            call.reply(try await spec.handler(self, request))
        } catch {
            call.fail(error)
        }
    }

    /// The caller's uid, from the bus (never from an argument).
    private func callerUID(_ sender: String) async throws(DBusError) -> UInt32 {
        if let uid = uids[sender] { return uid }
        let reply = try await bus.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                       interface: "org.freedesktop.DBus", member: "GetConnectionUnixUser",
                                       arguments: [.string(sender)])
        guard let uid = reply.first?.uint32 else { throw DBusError(.failed, "the bus did not say who the caller is") }
        uids[sender] = uid
        return uid
    }

    private func nameOwnerChanged(_ message: Message) {
        let arguments = message.arguments
        guard arguments.count == 3, let name = arguments[0].string, arguments[2].string == "" else { return }
        uids[name] = nil
        for evaluation in evaluations where evaluation.sender == name {
            evaluation.interrupt(.callerVanished)
        }
        enrollments[name]?.cancel()
    }

    private func restartIdleTimer() {
        idleTimer?.cancel()
        idleTimer = nil
        guard configuration.idleTimeout > 0, !stopping, callsInFlight == 0 else { return }
        idleTimer = EventLoopTimers.after(configuration.idleTimeout) { [weak self] in
            guard let self, self.callsInFlight == 0 else { return }
            Log.info("idle for \(Int(self.configuration.idleTimeout)) s; exiting")
            self.stop()
        }
    }

    // MARK: Properties

    private var biometryType: BiometryKind { sensor.isPresent ? .touchID : .none }

    private func properties(_ call: IncomingCall) {
        let arguments = call.arguments
        switch (call.member, call.signature) {
        case ("Get", "ss"):
            guard arguments[0].string == LocalAuthBus.interface else {
                return call.fail(DBusError(.unknownInterface, "no interface \(arguments[0].string ?? "")"))
            }
            guard arguments[1].string == LocalAuthBus.Property.biometryType else {
                return call.fail(DBusError(.unknownProperty, "no property \(arguments[1].string ?? "")"))
            }
            call.reply([.variant(.uint32(biometryType.rawValue))])
        case ("GetAll", "s"):
            guard arguments[0].string == LocalAuthBus.interface || arguments[0].string == "" else {
                return call.reply([.dictionary([:])])
            }
            call.reply([.dictionary([LocalAuthBus.Property.biometryType: .uint32(biometryType.rawValue)])])
        case ("Set", "ssv"):
            call.fail(DBusError(.propertyReadOnly, "\(arguments[1].string ?? "") is read-only"))
        default:
            call.fail(DBusError(.unknownMethod, "Properties has no method \(call.member)(\(call.signature))"))
        }
    }

    // MARK: Preflight

    private static func policy(_ value: DBusValue?) throws(DBusError) -> PolicyValue {
        guard let raw = value?.uint32, let policy = PolicyValue(rawValue: raw) else {
            throw ServiceErrors.invalidArgs("unknown policy \(value?.uint32.map(String.init) ?? "?"); "
                + "1 is deviceOwnerAuthenticationWithBiometrics, 2 deviceOwnerAuthentication")
        }
        return policy
    }

    /// The user's prints on the current reader, or why biometrics cannot be used.
    private func usablePrints(for uid: UInt32) throws(DBusError) -> [PrintStore.StoredPrint] {
        guard let identity = reader(for: uid) else { throw ServiceErrors.noReader }
        if lockout.isLockedOut(uid) {
            throw ServiceErrors.la(.biometryLockout, "biometry is locked after too many failed attempts")
        }
        let stored = prints.prints(of: uid, for: identity)
        guard !stored.isEmpty else {
            throw ServiceErrors.la(.biometryNotEnrolled, "no fingerprints are enrolled for this user")
        }
        return stored
    }

    func canEvaluatePolicy(_ request: Request) async throws(DBusError) -> [DBusValue] {
        switch try Self.policy(request.arguments[0]) {
        case .deviceOwnerAuthenticationWithBiometrics:
            _ = try usablePrints(for: request.uid)
        case .deviceOwnerAuthentication:
            // Biometrics, or else the account password.
            if (try? usablePrints(for: request.uid)) == nil, !Accounts.hasPassword(uid: request.uid) {
                throw ServiceErrors.la(.passcodeNotSet, "the account has no password, and biometrics cannot be used")
            }
        }
        return [.boolean(true)]
    }

    // MARK: Evaluation

    struct EvaluationOptions {
        var requestID: String?
        var reuseDuration: Double = 0
        var interactionNotAllowed = false
    }

    private static func evaluationOptions(_ value: DBusValue) throws(DBusError) -> EvaluationOptions {
        guard let entries = value.stringKeyedDictionary else { throw ServiceErrors.invalidArgs("options must be a{sv}") }
        var options = EvaluationOptions()
        for (key, value) in entries {
            switch key {
            case LocalAuthBus.Option.requestID:
                guard let id = value.string else { throw ServiceErrors.invalidArgs("request-id must be a string") }
                guard !id.isEmpty, id.utf8.count <= LocalAuthBus.maximumTextLength else {
                    throw ServiceErrors.invalidArgs("request-id must be 1 to \(LocalAuthBus.maximumTextLength) bytes")
                }
                options.requestID = id
            case LocalAuthBus.Option.fallbackTitle, LocalAuthBus.Option.cancelTitle:
                guard let title = value.string else { throw ServiceErrors.invalidArgs("\(key) must be a string") }
                guard title.utf8.count <= LocalAuthBus.maximumTextLength else {
                    throw ServiceErrors.invalidArgs("\(key) is longer than \(LocalAuthBus.maximumTextLength) bytes")
                }
            case LocalAuthBus.Option.reuseDuration:
                guard let seconds = value.double, seconds.isFinite, seconds >= 0 else {
                    throw ServiceErrors.invalidArgs("reuse-duration must be a non-negative double (seconds)")
                }
                options.reuseDuration = min(seconds, LocalAuthBus.maximumReuseDuration)
            case LocalAuthBus.Option.interactionNotAllowed:
                guard let flag = value.bool else { throw ServiceErrors.invalidArgs("interaction-not-allowed must be a boolean") }
                options.interactionNotAllowed = flag
            default:
                continue   // forward compatibility: unknown options are ignored
            }
        }
        return options
    }

    func evaluatePolicy(_ request: Request) async throws(DBusError) -> [DBusValue] {
        let arguments = request.arguments
        let policy = try Self.policy(arguments[0])
        guard let reason = arguments[1].string, !reason.trimmed.isEmpty else {
            throw ServiceErrors.invalidArgs("the localized reason must not be empty")
        }
        guard reason.utf8.count <= LocalAuthBus.maximumTextLength else {
            throw ServiceErrors.invalidArgs("the localized reason is longer than \(LocalAuthBus.maximumTextLength) bytes")
        }
        let options = try Self.evaluationOptions(arguments[2])
        let uid = request.uid
        if options.reuseDuration > 0, let last = lastSuccess[uid],
           ContinuousClock.now - last <= .seconds(options.reuseDuration), !lockout.isLockedOut(uid) {
            return [.boolean(true)]
        }
        // What this evaluation can use, decided before anything waits.
        let biometrics: DBusError?
        do {
            _ = try usablePrints(for: uid)
            biometrics = nil
        } catch {
            biometrics = error
        }
        if policy == .deviceOwnerAuthenticationWithBiometrics, let biometrics { throw biometrics }
        if policy == .deviceOwnerAuthentication, biometrics != nil, !Accounts.hasPassword(uid: uid) {
            throw ServiceErrors.la(.passcodeNotSet, "the account has no password, and biometrics cannot be used")
        }
        if options.interactionNotAllowed {
            throw ServiceErrors.la(.notInteractive, "authentication needs the user but interaction is not allowed")
        }

        let evaluation = Evaluation(requestID: options.requestID ?? Posix.randomID(), sender: request.sender,
                                    uid: uid, queue: queue)
        evaluations.append(evaluation)
        defer { evaluations.removeAll { $0 === evaluation } }

        let verified: Bool
        switch policy {
        case .deviceOwnerAuthenticationWithBiometrics:
            verified = try await fingerprint(evaluation)
        case .deviceOwnerAuthentication:
            verified = try await fingerprintOrPassword(evaluation, biometrics: biometrics == nil)
        }
        if verified { lastSuccess[uid] = .now }
        return [.boolean(verified)]
    }

    /// Waits for the reader, then scans.
    private func fingerprint(_ evaluation: Evaluation) async throws(DBusError) -> Bool {
        guard await queue.acquire(evaluation.ticket) else {
            throw evaluation.biometricInterruption?.error ?? ServiceErrors.la(.systemCancel, "cancelled while waiting")
        }
        defer { queue.release() }
        return try await scan(evaluation)
    }

    /// Policy 2: the fingerprint and the account password (through polkit's
    /// agent) are offered at the same time; the first to succeed wins, so nobody
    /// waits for a fingerprint timeout to type a password. The evaluation fails
    /// only when both ways have failed.
    private func fingerprintOrPassword(_ evaluation: Evaluation, biometrics: Bool) async throws(DBusError) -> Bool {
        let race = FirstSuccess(ways: biometrics ? 2 : 1)
        let outcome: Result<FirstSuccess.Way, DBusError> = await withCheckedContinuation { continuation in
            race.continuation = continuation
            if biometrics {
                Task {
                    do throws(DBusError) {
                        _ = try await self.fingerprint(evaluation)
                        race.report(.fingerprint, nil)
                    } catch {
                        race.report(.fingerprint, error)
                    }
                }
            }
            Task { race.report(.password, await self.password(evaluation)) }
        }
        if case .success = outcome {
            // The other way is no longer needed.
            evaluation.stopBiometrics(.superseded)
            evaluation.passwordCancellable.cancel()
        }
        switch outcome {
        case .success(.password):
            // The account password unlocks biometrics after a lockout (Apple's rule).
            lockout.reset(evaluation.uid)
            return true
        case .success(.fingerprint):
            return true
        case .failure(let error):
            throw evaluation.interruption?.error ?? error
        }
    }

    /// Policy 2's password, asked by the caller's polkit agent; nil on success.
    private func password(_ evaluation: Evaluation) async -> DBusError? {
        guard Accounts.hasPassword(uid: evaluation.uid) else {
            return ServiceErrors.la(.passcodeNotSet, "the account has no password")
        }
        let decision = await authorizer.check(.authenticateOwner, busName: evaluation.sender, interactive: true,
                                              timeout: configuration.passwordTimeout,
                                              cancellable: evaluation.passwordCancellable)
        switch decision {
        case .authorized: return nil
        case .dismissed: return ServiceErrors.la(.userCancel, "the user dismissed the password prompt")
        case .denied(let why):
            if let interruption = evaluation.interruption { return interruption.error }
            return ServiceErrors.la(.authenticationFailed, "the password was not accepted: \(why)")
        }
    }

    /// Holds the reader: scans until a match, too many failures, or an interruption.
    private func scan(_ evaluation: Evaluation) async throws(DBusError) -> Bool {
        if let interruption = evaluation.biometricInterruption { throw interruption.error }
        let timeout = EventLoopTimers.after(configuration.scanTimeout) { evaluation.stopBiometrics(.timedOut) }
        defer { timeout.cancel() }
        var failures = 0
        var scans = 0
        status(evaluation, .placeFinger)
        while true {
            // Re-read after every await: prints may have changed, the reader may be gone.
            let gallery = try usablePrints(for: evaluation.uid).map(\.print)
            // A reader that can only verify compares a scan with one print: each
            // new scan tries the next of the user's prints, so every enrolled
            // finger gets its turn within one evaluation.
            let offset = gallery.isEmpty ? 0 : scans % gallery.count
            scans += 1
            let result: Sensor.ScanResult
            do {
                result = try await sensor.identify(Array(gallery[offset...] + gallery[..<offset]),
                                                   cancellable: evaluation.cancellable)
            } catch {
                throw scanError(error, evaluation)
            }
            switch result {
            case .match:
                lockout.reset(evaluation.uid)
                return true
            case .noMatch:
                failures += 1
                if lockout.recordFailure(evaluation.uid) {
                    throw ServiceErrors.la(.biometryLockout, "too many failed attempts; biometry is locked")
                }
                if failures >= configuration.attemptsPerEvaluation {
                    throw ServiceErrors.la(.authenticationFailed, "the fingerprint did not match")
                }
                status(evaluation, .noMatch)
            case .retry(let kind):
                status(evaluation, kind.progress)
            }
        }
    }

    private func scanError(_ error: GLibError, _ evaluation: Evaluation) -> DBusError {
        if let interruption = evaluation.biometricInterruption { return interruption.error }
        if error.isDevice(FP_DEVICE_ERROR_REMOVED_VALUE) {
            sensor.forget()
            return Evaluation.Interruption.readerRemoved.error
        }
        if error.isDevice(FP_DEVICE_ERROR_TOO_HOT_VALUE) {
            return ServiceErrors.la(.systemCancel, "the fingerprint reader is cooling down; try again shortly")
        }
        Log.warning("scan failed: \(error)")
        return ServiceErrors.la(.systemCancel, "the fingerprint reader failed: \(error.message)")
    }

    private func status(_ evaluation: Evaluation, _ progress: EvaluationProgress) {
        try? bus.emit(path: ObjectPath(stringLiteral: LocalAuthBus.objectPath), interface: LocalAuthBus.interface,
                      member: LocalAuthBus.Signal.evaluationStatus,
                      arguments: [.string(evaluation.requestID), .string(progress.rawValue)],
                      destination: evaluation.sender)
    }

    func cancel(_ request: Request) throws(DBusError) -> [DBusValue] {
        guard let id = request.arguments[0].string else { throw ServiceErrors.invalidArgs("request id must be a string") }
        end(id, of: request.sender, .appCancelled)
        return []
    }

    /// EndEvaluation: the app ends an evaluation as the person's cancel or fallback.
    func endEvaluation(_ request: Request) throws(DBusError) -> [DBusValue] {
        guard let id = request.arguments[0].string, let reason = request.arguments[1].string else {
            throw ServiceErrors.invalidArgs("EndEvaluation takes (ss)")
        }
        let interruption: Evaluation.Interruption
        switch reason {
        case "user-cancel": interruption = .userCancelled
        case "user-fallback": interruption = .userFallback
        case "app-cancel": interruption = .appCancelled
        default: throw ServiceErrors.invalidArgs("unknown reason \(reason); use user-cancel, user-fallback or app-cancel")
        }
        end(id, of: request.sender, interruption)
        return []
    }

    /// ResetLockout: an administrator lifts a user's biometry lockout.
    func resetLockout(_ request: Request) throws(DBusError) -> [DBusValue] {
        guard let name = request.arguments[0].string else { throw ServiceErrors.invalidArgs("ResetLockout takes (s)") }
        let uid: UInt32
        if name.isEmpty {
            uid = request.uid
        } else {
            guard let found = Users.uid(of: name) else { throw ServiceErrors.invalidArgs("no user named \(name)") }
            uid = found
        }
        lockout.reset(uid)
        Log.info("biometry lockout of uid \(uid) reset by uid \(request.uid)")
        return []
    }

    /// Only the caller's own evaluations can be ended.
    private func end(_ requestID: String, of sender: String, _ reason: Evaluation.Interruption) {
        for evaluation in evaluations where evaluation.sender == sender && evaluation.requestID == requestID {
            evaluation.interrupt(reason)
        }
    }

}

/// The first of several ways to succeed, or all their failures.
@ServiceActor
private final class FirstSuccess {
    enum Way { case fingerprint, password }
    private var pending: Int
    private var failures: [Way: DBusError] = [:]
    var continuation: CheckedContinuation<Result<Way, DBusError>, Never>?

    init(ways: Int) { pending = ways }

    func report(_ way: Way, _ failure: DBusError?) {
        pending -= 1
        guard let continuation else { return }
        if failure == nil {
            self.continuation = nil
            continuation.resume(returning: .success(way))
            return
        }
        failures[way] = failure
        guard pending == 0 else { return }
        self.continuation = nil
        // Both failed: the password's verdict is the evaluation's.
        continuation.resume(returning: .failure(failures[.password] ?? failures[.fingerprint]!))
    }
}

extension RetryKind {
    var progress: EvaluationProgress {
        switch self {
        case .general: .retryScan
        case .tooShort: .swipeTooShort
        case .centerFinger: .fingerNotCentered
        case .removeFinger: .removeAndRetry
        }
    }

    var enrollProgress: EnrollProgress {
        switch self {
        case .general: .retryScan
        case .tooShort: .swipeTooShort
        case .centerFinger: .fingerNotCentered
        case .removeFinger: .removeAndRetry
        }
    }
}

/// SHA-256 through GLib's GChecksum (Foundation on Linux has no hashing).
enum Checksum {
    static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        let checksum = g_checksum_new(G_CHECKSUM_SHA256)!
        defer { g_checksum_free(checksum) }
        bytes.withUnsafeBufferPointer { g_checksum_update(checksum, $0.baseAddress, gssize($0.count)) }
        var digest = [UInt8](repeating: 0, count: 32)
        var length = gsize(32)
        g_checksum_get_digest(checksum, &digest, &length)
        return Array(digest.prefix(Int(length)))
    }
}
