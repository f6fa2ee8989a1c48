internal import CGLib
internal import CLocalAuthInterface
import DBusCore
import Foundation
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
        prints = PrintStore(stateDirectory: configuration.stateDirectory)
        lockout = LockoutStore(stateDirectory: configuration.stateDirectory)
    }

    /// Connects to the system bus, opens the reader and takes the bus name.
    public static func start(_ configuration: Configuration) async throws -> LocalAuthService {
        try AtomicFile.makeDirectory(configuration.stateDirectory)
        let bus = try BusConnection.connect(to: .system, loop: EventLoop.processDefault)
        let service = LocalAuthService(configuration: configuration, bus: bus)
        await service.sensor.start()
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
            Task(executorPreference: EventLoop.processDefault) { await self.serve(call, spec) }
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
            if let action = spec.action {
                let decision = await authorizer.check(action, busName: call.sender, interactive: spec.interactive)
                if case .denied(let why) = decision { throw ServiceErrors.permissionDenied(why) }
            }
            call.reply(try await spec.handler(self, Request(call: call, uid: uid)))
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
        guard sensor.isPresent, let identity = sensor.identity else { throw ServiceErrors.noReader }
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
        _ = try Self.policy(request.arguments[0])
        _ = try usablePrints(for: request.uid)
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
        _ = try Self.policy(arguments[0])
        guard let reason = arguments[1].string, !reason.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
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
        _ = try usablePrints(for: uid)
        if options.interactionNotAllowed {
            throw ServiceErrors.la(.notInteractive, "a fingerprint scan is needed but interaction is not allowed")
        }

        let evaluation = Evaluation(requestID: options.requestID ?? UUID().uuidString, sender: request.sender,
                                    uid: uid, queue: queue)
        evaluations.append(evaluation)
        defer { evaluations.removeAll { $0 === evaluation } }

        guard await queue.acquire(evaluation.ticket) else {
            throw evaluation.interruption?.error ?? ServiceErrors.la(.systemCancel, "cancelled while waiting")
        }
        defer { queue.release() }
        return [.boolean(try await scan(evaluation))]
    }

    /// Holds the reader: scans until a match, too many failures, or an interruption.
    private func scan(_ evaluation: Evaluation) async throws(DBusError) -> Bool {
        if let interruption = evaluation.interruption { throw interruption.error }
        let timeout = EventLoopTimers.after(configuration.scanTimeout) { evaluation.interrupt(.timedOut) }
        defer { timeout.cancel() }
        var failures = 0
        status(evaluation, .placeFinger)
        while true {
            // Re-read after every await: prints may have changed, the reader may be gone.
            let gallery = try usablePrints(for: evaluation.uid)
            let result: Sensor.ScanResult
            do {
                result = try await sensor.identify(gallery.map(\.print), cancellable: evaluation.cancellable)
            } catch {
                throw scanError(error, evaluation)
            }
            switch result {
            case .match:
                lockout.reset(evaluation.uid)
                lastSuccess[evaluation.uid] = .now
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
        if let interruption = evaluation.interruption { return interruption.error }
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
        for evaluation in evaluations where evaluation.sender == request.sender && evaluation.requestID == id {
            evaluation.interrupt(.appCancelled)
        }
        return []
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
