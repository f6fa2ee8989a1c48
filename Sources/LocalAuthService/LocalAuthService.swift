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
    /// Every call in flight, from arrival to answer (Requests.swift).
    let registry = CallRegistry()
    var enrollments: [String: Cancellable] = [:]
    /// The last fingerprint match of each user, with the enrolled set it was
    /// made against: what `reuse-duration` may accept (docs/SECURITY.md).
    private var lastFingerprintMatch: [UInt32: (time: ContinuousClock.Instant, enrolledSet: [UInt8])] = [:]
    /// Who has kept the warm reader waiting lately (ReaderFairness.swift).
    var fairness = ReaderFairness()
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
        // A caller that leaves the bus cancels what it started. Only the bus
        // driver can say so: the subscription checks the sender of every
        // signal, since anyone may send a forged one straight to us.
        try await bus.subscribe(sender: BusConnection.busDriver, interface: "org.freedesktop.DBus",
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
        if stopping && registry.isEmpty { return }
        await withCheckedContinuation { exitContinuation = $0 }
    }

    /// Ends pending work with SystemCancel, answers every caller, then stops.
    public func stop() {
        guard !stopping else { return }
        stopping = true
        Log.info("stopping")
        idleTimer?.cancel()
        // Every call, wherever it waits (the uid lookup, polkit, the reader,
        // the password), ends now with SystemCancel.
        registry.stopAll()
        finishIfStopped()
    }

    func finishIfStopped() {
        guard stopping, registry.isEmpty else { return }
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
        // Bounds first, before anything is decoded or kept (docs/SECURITY.md).
        // A refused call is dropped here, and with it any fds it carried.
        if call.message.carriesFileDescriptors {
            call.fail(ServiceErrors.invalidArgs("\(LocalAuthBus.interface) takes no file descriptors"))
            return restartIdleTimer()
        }
        if call.message.approximateBodySize > ServiceLimits.maximumBodyBytes {
            call.fail(ServiceErrors.limit("the call's arguments are larger than \(ServiceLimits.maximumBodyBytes) bytes"))
            return restartIdleTimer()
        }
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
            // Registered now, before anything awaits: from here on a vanish,
            // Cancel or SIGTERM ends it wherever it waits.
            let record = CallRecord(sender: call.sender, member: call.member,
                                    requestID: call.member == LocalAuthBus.Method.evaluatePolicy
                                        ? Self.requestID(in: call.arguments[2]) : nil)
            do throws(DBusError) {
                try registry.register(record)
            } catch {
                call.fail(error)
                return restartIdleTimer()
            }
            // Started immediately, on this thread: a call that never has to wait
            // (a preflight) is answered within this dispatch, with no extra
            // trip through the loop; one that waits (polkit, the sensor)
            // suspends there and resumes on the loop.
            Task.immediate(executorPreference: EventLoop.processDefault) { await self.serve(call, spec, record) }
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

    private func serve(_ call: IncomingCall, _ spec: MethodSpec, _ record: CallRecord) async {
        defer {
            registry.remove(record)
            restartIdleTimer()
            finishIfStopped()
        }
        do throws(DBusError) {
            let uid = try await callerUID(call.sender)
            try record.checkNotEnded()
            try registry.admit(record, uid: uid)
            // polkit first (the action may depend on a `user` option): Enrollment.swift.
            let request = try await authorize(call, spec, uid: uid, record: record)
            try record.checkNotEnded()
            call.reply(try await spec.handler(self, request))
        } catch {
            call.fail(record.interruption?.error ?? error)
        }
    }

    /// EvaluatePolicy's request id, read leniently at arrival (the options
    /// are validated in full later): it names the call for an early Cancel.
    private static func requestID(in options: DBusValue) -> String? {
        guard case .array(_, let entries) = options else { return nil }
        for case .dictEntry(.string(LocalAuthBus.Option.requestID), .variant(.string(let id))) in entries {
            return id
        }
        return nil
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

    /// The executable behind a bus caller, as the kernel names it (the bus
    /// gives its pid; /proc gives the file): what a prompt shows as the
    /// program that asks, since an app cannot choose it. nil if unknown.
    func callerProgram(_ sender: String) async -> String? {
        guard let reply = try? await bus.call(destination: BusConnection.busDriver, path: "/org/freedesktop/DBus",
                                              interface: BusConnection.busDriver, member: "GetConnectionUnixProcessID",
                                              arguments: [.string(sender)]),
              let pid = reply.first?.uint32 else { return nil }
        guard let path = Posix.readLink("/proc/\(pid)/exe") else { return nil }
        return String(path.split(separator: "/").last ?? Substring(path))
    }

    private func nameOwnerChanged(_ message: Message) {
        // The subscription already checked this; a forged "caller left" would
        // cancel someone else's evaluation, so it is checked again here.
        guard message.sender == BusConnection.busDriver else { return }
        let arguments = message.arguments
        guard arguments.count == 3, let name = arguments[0].string, arguments[2].string == "" else { return }
        uids[name] = nil
        registry.senderVanished(name)
    }

    private func restartIdleTimer() {
        idleTimer?.cancel()
        idleTimer = nil
        guard configuration.idleTimeout > 0, !stopping, registry.isEmpty else { return }
        idleTimer = EventLoopTimers.after(configuration.idleTimeout) { [weak self] in
            guard let self, self.registry.isEmpty else { return }
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

    static func policy(_ value: DBusValue?) throws(DBusError) -> PolicyValue {
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
        /// The app's prompt labels, kept with the evaluation for a prompt to show.
        var fallbackTitle: String?
        var cancelTitle: String?
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
                if key == LocalAuthBus.Option.fallbackTitle { options.fallbackTitle = title } else { options.cancelTitle = title }
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
        // What this evaluation can use, decided before anything waits.
        let biometrics: DBusError?
        do {
            _ = try usablePrints(for: uid)
            try refuseWhileCooling(uid)
            biometrics = nil
        } catch {
            biometrics = error
        }
        // Both policies accept a fingerprint, so a recent fingerprint match
        // may stand in for a new scan; never a password (policy 1 must mean
        // a finger), never once biometrics cannot be used (no reader, no
        // prints, locked out), never after the enrolled set changed.
        if options.reuseDuration > 0, biometrics == nil, let last = lastFingerprintMatch[uid],
           ContinuousClock.now - last.time <= .seconds(options.reuseDuration),
           let reader = reader(for: uid), last.enrolledSet == enrolledSetHash(uid: uid, reader: reader) {
            return [.boolean(true)]
        }
        if policy == .deviceOwnerAuthenticationWithBiometrics, let biometrics { throw biometrics }
        if policy == .deviceOwnerAuthentication, biometrics != nil, !Accounts.hasPassword(uid: uid) {
            throw ServiceErrors.la(.passcodeNotSet, "the account has no password, and biometrics cannot be used")
        }
        if options.interactionNotAllowed {
            throw ServiceErrors.la(.notInteractive, "authentication needs the user but interaction is not allowed")
        }

        let evaluation = Evaluation(requestID: options.requestID ?? Posix.randomID(), sender: request.sender,
                                    uid: uid, queue: queue,
                                    prompt: .init(reason: reason, fallbackTitle: options.fallbackTitle,
                                                  cancelTitle: options.cancelTitle))
        // An evaluation whose call already ended (Cancel right after the
        // call, the caller gone) is interrupted here and never touches the reader.
        request.record.evaluation = evaluation
        try request.record.checkNotEnded()

        let way: FirstSuccess.Way
        switch policy {
        case .deviceOwnerAuthenticationWithBiometrics:
            way = try await fingerprint(evaluation)
        case .deviceOwnerAuthentication:
            way = try await fingerprintOrPassword(evaluation, biometrics: biometrics == nil)
        }
        if way == .fingerprint, let reader = reader(for: uid) {
            lastFingerprintMatch[uid] = (.now, enrolledSetHash(uid: uid, reader: reader))
        }
        return [.boolean(true)]
    }

    /// Waits for the reader (at most `readerQueueWait`), then scans.
    private func fingerprint(_ evaluation: Evaluation) async throws(DBusError) -> FirstSuccess.Way {
        let waitLimit = EventLoopTimers.after(ServiceLimits.readerQueueWait) { evaluation.stopBiometrics(.queueTimedOut) }
        let acquired = await queue.acquire(evaluation.ticket)
        waitLimit.cancel()
        guard acquired else {
            throw evaluation.biometricInterruption?.error ?? ServiceErrors.la(.systemCancel, "cancelled while waiting")
        }
        defer { queue.release() }
        // The evaluation may have ended while it waited.
        if let interruption = evaluation.biometricInterruption { throw interruption.error }
        _ = try await scan(evaluation)
        return .fingerprint
    }

    /// Policy 2: the fingerprint and the account password (through polkit's
    /// agent) are offered at the same time; the first to succeed wins, so nobody
    /// waits for a fingerprint timeout to type a password. The evaluation fails
    /// only when both ways have failed.
    private func fingerprintOrPassword(_ evaluation: Evaluation, biometrics: Bool) async throws(DBusError) -> FirstSuccess.Way {
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
            try? lockout.reset(evaluation.uid)   // logged; the count stays (fails closed)
            return .password
        case .success(.fingerprint):
            return .fingerprint
        case .failure(let error):
            throw evaluation.interruption?.error ?? error
        }
    }

    /// Policy 2's password, asked by the caller's polkit agent; nil on success.
    private func password(_ evaluation: Evaluation) async -> DBusError? {
        guard Accounts.hasPassword(uid: evaluation.uid) else {
            return ServiceErrors.la(.passcodeNotSet, "the account has no password")
        }
        // The person's password dialog says who asks and why: the program the
        // service sees (not a name the app chose) and the app's reason.
        let program = await callerProgram(evaluation.sender) ?? "An application"
        if let interruption = evaluation.interruption { return interruption.error }
        let message = "\(program) asks you to confirm that you are the owner of this account: \(evaluation.prompt.reason)"
        let decision = await authorizer.check(.authenticateOwner, busName: evaluation.sender, interactive: true,
                                              details: ["polkit.message": message,
                                                        "org.example.LocalAuth.program": program,
                                                        "org.example.LocalAuth.reason": evaluation.prompt.reason],
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
        let timeout = EventLoopTimers.after(configuration.scanTimeout) { [weak self] in
            evaluation.stopBiometrics(.timedOut)
            // A wait that timed out on a warm reader: this user waits before the next one.
            if let self {
                let warm = self.reader(for: evaluation.uid).map(self.sensor.isWarm) ?? false
                self.fairness.waitTimedOut(evaluation.uid, at: .now, readerWarm: warm)
            }
        }
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
                fairness.scanJudged(evaluation.uid)
                try? lockout.reset(evaluation.uid)   // logged; the count stays (fails closed)
                return true
            case .noMatch:
                failures += 1
                fairness.scanJudged(evaluation.uid)
                // A completed no-match always counts, whatever ends the
                // evaluation next; one that cannot be written ends it.
                let lockedOut: Bool
                do {
                    lockedOut = try lockout.recordFailure(evaluation.uid)
                } catch {
                    throw ServiceErrors.named(LocalAuthServiceError.storageFailed,
                                              "the failed attempt could not be recorded; try again later")
                }
                let reader = gallery.first.map { "\(PrintCodec.driver(of: $0))/\(PrintCodec.deviceID(of: $0))" } ?? "?"
                Log.notice("failed fingerprint match for uid \(evaluation.uid) on \(reader) "
                           + "(\(lockout.failures(of: evaluation.uid)) of \(LockoutStore.limit) in a row)")
                if lockedOut {
                    Log.warning("biometry locked out for uid \(evaluation.uid) after \(LockoutStore.limit) failed matches")
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

    /// The reader-fairness rule (ReaderFairness.swift): a user whose waits for
    /// a finger keep timing out on a warm reader waits before the next one.
    /// The password of policy 2 is never held back.
    func refuseWhileCooling(_ uid: UInt32) throws(DBusError) {
        let warm = reader(for: uid).map(sensor.isWarm) ?? false
        let remaining = fairness.remaining(uid, at: .now, readerWarm: warm)
        guard remaining > 0 else { return }
        throw ServiceErrors.named(LocalAuthServiceError.readerCoolingDown,
                                  "the fingerprint reader is cooling down; try again in about \(Int(remaining.rounded(.up))) s")
    }

    func cancel(_ request: Request) throws(DBusError) -> [DBusValue] {
        guard let id = request.arguments[0].string else { throw ServiceErrors.invalidArgs("request id must be a string") }
        registry.end(requestID: id, of: request.sender, .appCancelled)
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
        default:
            throw ServiceErrors.invalidArgs("unknown reason \(ServiceErrors.echo(reason)); "
                                            + "use user-cancel, user-fallback or app-cancel")
        }
        registry.end(requestID: id, of: request.sender, interruption)
        return []
    }

    /// ResetLockout: an administrator lifts a user's biometry lockout.
    func resetLockout(_ request: Request) throws(DBusError) -> [DBusValue] {
        guard let name = request.arguments[0].string else { throw ServiceErrors.invalidArgs("ResetLockout takes (s)") }
        let uid: UInt32
        if name.isEmpty {
            uid = request.uid
        } else {
            guard let found = Users.uid(of: name) else {
                throw ServiceErrors.invalidArgs("no user named \(ServiceErrors.echo(name))")
            }
            uid = found
        }
        do {
            try lockout.reset(uid)
        } catch {
            throw ServiceErrors.named(LocalAuthServiceError.storageFailed, "could not save the lockout count")
        }
        Log.info("biometry lockout of uid \(uid) reset by uid \(request.uid)")
        return []
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
