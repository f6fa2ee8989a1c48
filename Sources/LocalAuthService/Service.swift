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
///
/// This file: start, stop, and routing each call from the wire to its
/// handler, with its registration (Requests.swift) from arrival to answer.
/// The rest, one concern a file: Callers/ (who calls: one record per
/// connection, its app and presence), Authorization.swift (may they),
/// Evaluations.swift (preflight, policy 1, the scan loop, lockout, reuse),
/// OwnerPolicy.swift (policy 2), Enrollment/ (enroll, list, delete),
/// Readers/ReaderChoice.swift (which reader serves whom, hotplug, domain
/// state), Environment/ (sleep, the lid, LAEnvironment), Prompt/ (the sheet),
/// Readers.swift (libfprint), Authorizer.swift (polkit). docs/DESIGN.md
/// follows a call through them.
@ServiceActor
public final class LocalAuthService {
    let configuration: Configuration
    let bus: BusConnection
    let readers = Readers()
    let authorizer = Authorizer()
    let queue = SensorQueue()
    let prints: PrintStore
    let lockout: LockoutStore
    /// The desktop sessions' prompt agents and the sheets they show (Prompt/).
    private(set) lazy var promptAgents = PromptAgents(seams: ServicePromptSeams(self))
    /// Rights and secrets: their storage and the authorizations in force (Rights.swift).
    let rights: RightsState
    /// logind and UPower: sleep and the lid (Logind.swift).
    let logind: Logind
    /// One record per calling connection: uid, process, app, presence (Callers/).
    let callers: Callers
    /// Sleep and resume, the lid, LAEnvironment's subscribers, the password
    /// after boot (Environment/).
    private(set) lazy var environment = Environment(
        passwords: PasswordStore(stateDirectory: configuration.stateDirectory),
        passwordRequirement: configuration.passwordRequirement,
        seams: ServiceEnvironmentSeams(self), sleepSeams: ServiceSleepSeams(self)) { [work] body in
        work.yield(.sleepCycle(body))
    }
    /// Enrolling, listing and deleting prints, and the prints on chips (Enrollment/).
    private(set) lazy var enroller = Enroller(seams: ServiceEnrollerSeams(self), prints: prints,
                                              scanTimeout: configuration.scanTimeout)
    /// Which reader serves whom, hotplug, the domain state (Readers/ReaderChoice.swift).
    private(set) lazy var readerChoice = ReaderChoice(configured: configuration.reader, seams: ServiceReaderChoiceSeams(self))
    /// `--fprintd`: fprintd's net.reactivated.Fprint on the same readers (Fprintd/).
    var fprintd: FprintdServer?

    /// Every call in flight, from arrival to answer (Requests.swift).
    let registry = CallRegistry()
    /// The last fingerprint match of each user, with the enrolled set it was
    /// made against: what `reuse-duration` may accept (docs/SECURITY.md).
    var lastFingerprintMatch: [UInt32: EvaluationPlan.LastMatch] = [:]
    /// The finger each user matched with last: a verify-only reader tries it first.
    let lastFinger: LastFingerStore
    /// Who has kept the warm reader waiting lately (ReaderFairness.swift).
    var fairness = ReaderFairness()
    /// The work the task group of `run()` runs: every call, and the readers'
    /// hotplug work. Finished by `stop()`, which ends `run()` once the last
    /// task has ended.
    private let work = WorkQueue<Work>()
    enum Work: Sendable {
        case call(IncomingCall, MethodSpec, CallRecord)
        case reader(Readers.Work)
        /// The sleep cycle's actions, run in order (SleepCoordinator).
        case sleepCycle(@Sendable @ServiceActor () async -> Void)
        /// A component's own work (fprintd's scans and calls: Fprintd/).
        case task(@Sendable @ServiceActor () async -> Void)
    }
    /// Runs `body` as a task of the service's task group (SIGTERM waits for it).
    func spawn(_ body: @escaping @Sendable @ServiceActor () async -> Void) { work.yield(.task(body)) }
    /// When the service last did anything: the idle exit waits for quiet.
    private var lastActivity = ContinuousClock.now
    private var idleTimer: EventLoop.Timer?
    /// After SIGTERM: when the calls still running are abandoned.
    private var shutdownDeadline: EventLoop.Timer?
    /// The shutdown gave up on operations a reader never ended: do not close it.
    private var readersStuck = false
    private(set) var stopping = false

    static let interfaceXML = String(cString: clocalauth_interface_xml())

    private init(configuration: Configuration, bus: BusConnection) {
        self.configuration = configuration
        self.bus = bus
        prints = PrintStore(stateDirectory: configuration.stateDirectory, fprintdStore: configuration.fprintdStore)
        lockout = LockoutStore(stateDirectory: configuration.stateDirectory)
        lastFinger = LastFingerStore(stateDirectory: configuration.stateDirectory)
        logind = Logind(bus: bus)
        callers = Callers(bus: bus, logind: logind)
        rights = RightsState(stateDirectory: configuration.stateDirectory, keyBackend: configuration.keyBackend)
    }

    /// Runs the service until it stops (one of `stopSignals`, the idle
    /// timeout, the bus lost): connects to the system bus, finds the readers,
    /// takes the bus name, serves, and returns once every call is answered
    /// and the readers are closed. Throws only if it could not start.
    public static func run(_ configuration: Configuration, stopSignals: [Int32]) async throws {
        let service = try await start(configuration)
        for signal in stopSignals {
            EventLoop.processDefault.onSignal(signal) { ServiceActor.assumeIsolated { service.stop() } }
        }
        await service.serveUntilStopped()
    }

    private static func start(_ configuration: Configuration) async throws -> LocalAuthService {
        try AtomicFile.makeDirectory(configuration.stateDirectory)
        let bus = try BusConnection.connect(to: .system, loop: EventLoop.processDefault)
        let service = LocalAuthService(configuration: configuration, bus: bus)
        service.readers.schedule = { [work = service.work] in work.yield(.reader($0)) }
        service.readers.builtInOverrides = configuration.builtInReaders
        service.readers.externalOverrides = configuration.externalReaders
        service.readers.lingerSeconds = configuration.readerLinger
        // Enumeration only: a reader opens when an operation needs it.
        service.readers.start()
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
        // Sleep, the lid and the callers' sessions (docs/SECURITY.md).
        await service.startFollowingLogind()
        bus.onDisconnect {
            ServiceActor.assumeIsolated {
                Log.error("lost the system bus; exiting")
                service.stop()
            }
        }
        if configuration.fprintd {
            service.prints.fprintdLayout = true
            service.prints.moveOwnPrintsToFprintdLayout()
            let fprintd = FprintdServer(service: service)
            service.fprintd = fprintd
            try fprintd.start()
        }
        // Only now, with everything ready, do callers find us.
        switch try bus.requestName(LocalAuthBus.serviceName) {
        case .primaryOwner, .alreadyOwner: break
        case .taken: throw DBusError(.failed, "\(LocalAuthBus.serviceName) is owned by another process")
        }
        Log.info("serving \(LocalAuthBus.serviceName) as \(bus.uniqueName); state in \(configuration.stateDirectory)")
        service.armIdleTimer(after: configuration.idleTimeout)
        return service
    }

    /// The service's one task group: each call is a child task, started
    /// immediately on the loop (a preflight is answered without waiting for
    /// another turn of the loop after this one), and so is the readers'
    /// hotplug work. Child tasks inherit the loop as their executor
    /// preference (SE-0417), so everything the service awaits resumes on the
    /// loop. Returns once `stop()` ended the work stream and every child ended.
    private func serveUntilStopped() async {
        await withDiscardingTaskGroup { group in
            while let item = await work.next() {
                switch item {
                case .call(let call, let spec, let record):
                    group.addImmediateTask { @ServiceActor in await self.serve(call, spec, record) }
                case .reader(let job):
                    group.addTask { [readers] in await readers.perform(job) }
                case .sleepCycle(let actions):
                    group.addImmediateTask { @ServiceActor in await actions() }
                case .task(let body):
                    group.addImmediateTask { @ServiceActor in await body() }
                }
            }
        }
        shutdownDeadline?.cancel()
        if !readersStuck { await readers.closeAll() }
        logind.releaseInhibitor()
        bus.close()
        Log.info("stopped")
    }

    /// Ends pending work with SystemCancel, answers every caller; `run()`
    /// returns once the last call has been answered.
    public func stop() {
        guard !stopping else { return }
        stopping = true
        Log.info("stopping")
        idleTimer?.cancel()
        work.finish()
        // Every call, wherever it waits (the uid lookup, polkit, the reader,
        // the password), ends now with SystemCancel.
        registry.stopAll()
        fprintd?.stop()
        guard !registry.isEmpty else { return }
        // Calls end as soon as what they wait on is cancelled; a reader that
        // ignores its cancellation would keep the service alive for ever.
        shutdownDeadline = EventLoopTimers.after(ServiceLimits.shutdownGrace) { [weak self] in
            self?.abandonStuckCalls()
        }
    }

    /// The shutdown grace is over: answer what is left, give up on the
    /// operations that never ended, and exit without closing the readers (an
    /// operation still runs on one; closing would wait for it).
    private func abandonStuckCalls() {
        guard stopping, !registry.isEmpty else { return }
        let count = registry.abandonAll(answering: Evaluation.Interruption.serviceStopping.error)
        Log.warning("\(count) call(s) still waited \(Int(ServiceLimits.shutdownGrace)) s after SIGTERM "
                    + "(a reader ignored its cancellation); answered them and exiting")
        readersStuck = true
        PendingGLibCalls.abandonAll()
    }

    // MARK: Idle exit

    /// The one idle rule: no call registered, and nothing received for the
    /// idle timeout. Checked when the timer fires; activity only moves
    /// `lastActivity`, so a busy service arms no timers.
    private var isIdle: Bool {
        // Environment subscribers do not keep it alive (one subscriber of any
        // uid would keep it running for ever): the library subscribes again
        // when the service is next started (docs/SECURITY.md, "Limits").
        // An fprintd claim does: its claimer holds the device between calls.
        registry.isEmpty && !(fprintd?.keepsServiceAlive ?? false)
            && ContinuousClock.now - lastActivity >= .seconds(configuration.idleTimeout)
    }

    private func armIdleTimer(after seconds: Double) {
        guard configuration.idleTimeout > 0, !stopping else { return }
        idleTimer = EventLoopTimers.after(max(seconds, 0.05)) { [weak self] in
            guard let self, !self.stopping else { return }
            if self.isIdle {
                Log.info("idle for \(Int(self.configuration.idleTimeout)) s; exiting")
                self.stop()
            } else {
                let quiet = ContinuousClock.now - self.lastActivity
                let quietSeconds = Double(quiet.components.seconds) + Double(quiet.components.attoseconds) / 1e18
                self.armIdleTimer(after: self.configuration.idleTimeout - quietSeconds)
            }
        }
    }

    // MARK: Receiving calls

    func receive(_ call: IncomingCall) {
        lastActivity = .now
        // Bounds first, before anything is decoded or kept (docs/SECURITY.md).
        // A refused call is dropped here, and with it any fds it carried.
        if call.message.carriesFileDescriptors {
            call.fail(ServiceErrors.invalidArgs("\(LocalAuthBus.interface) takes no file descriptors"))
            return
        }
        // SaveRight alone may carry a secret of up to 64 KiB (docs/RIGHTS.md).
        let bodyLimit = call.member == LocalAuthRightsBus.Method.saveRight
            ? RightsServiceLimits.saveRightBodyBytes : ServiceLimits.maximumBodyBytes
        if call.message.approximateBodySize > bodyLimit {
            call.fail(ServiceErrors.limit("the call's arguments are larger than \(bodyLimit) bytes"))
            return
        }
        switch call.interface {
        case LocalAuthBus.interface?, nil:
            guard let spec = Self.methods[call.member] else {
                call.fail(DBusError(.unknownMethod, "\(LocalAuthBus.interface) has no method \(call.member)"))
                return
            }
            guard call.signature == spec.signature else {
                call.fail(DBusError(.invalidArgs,
                    "\(call.member) takes (\(spec.signature)), not (\(call.signature))"))
                return
            }
            guard !stopping else {
                call.fail(ServiceErrors.la(.systemCancel, "the authentication service is stopping"))
                return
            }
            // Registered now, before anything awaits: from here on a vanish,
            // Cancel or SIGTERM ends it wherever it waits.
            let arguments = call.arguments
            let record = CallRecord(sender: call.sender,
                                    requestID: Self.requestID(of: call.member, arguments),
                                    arguments: arguments, call: call)
            do throws(DBusError) {
                try registry.register(record)
            } catch {
                call.fail(error)
                return
            }
            // Served by a task of the service's task group (`serveUntilStopped`).
            work.yield(.call(call, spec, record))
        case "org.freedesktop.DBus.Introspectable":
            if call.member == "Introspect", call.signature.isEmpty {
                call.reply([.string(Self.interfaceXML)])
            } else {
                call.fail(DBusError(.unknownMethod, "Introspectable has no method \(call.member)(\(call.signature))"))
            }
        case "org.freedesktop.DBus.Properties":
            properties(call)
        default:
            call.fail(DBusError(.unknownInterface, "no interface \(call.interface ?? "")"))
        }
    }

    func serve(_ call: IncomingCall, _ spec: MethodSpec, _ record: CallRecord) async {
        defer {
            registry.remove(record)
            lastActivity = .now
            // Enrolled, deleted, locked out, the password given: subscribers hear it.
            environmentMayHaveChanged()
        }
        do throws(DBusError) {
            let caller = try await callers.record(for: record.sender)
            ServiceActor.assertOnLoop()
            try record.checkNotEnded()
            try registry.admit(record, uid: caller.uid)
            // polkit first (the action may depend on a `user` option): Enrollment/EnrollmentArguments.swift.
            let request = try await authorize(call, spec, caller: caller, record: record)
            ServiceActor.assertOnLoop()
            try record.checkNotEnded()
            let answer = try await spec.handler(self, request)
            guard !record.abandoned else { return }
            call.reply(answer)
        } catch {
            // A call a stuck shutdown answered already is not answered twice.
            guard !record.abandoned else { return }
            call.fail(record.interruption?.error ?? error)
        }
    }

    /// EvaluatePolicy's request id, read leniently at arrival (the options
    /// are validated in full later): it names the call for an early Cancel.
    static func requestID(of member: String, _ arguments: [DBusValue]) -> String? {
        switch member {
        case LocalAuthBus.Method.evaluatePolicy: requestID(in: arguments[2])
        case LocalAuthBus.Method.verifyUser: requestID(in: arguments[1])
        case LocalAuthRightsBus.Method.authorizeRight: requestID(in: arguments[2])
        default: nil
        }
    }

    static func requestID(in options: DBusValue) -> String? {
        guard case .array(_, let entries) = options else { return nil }
        for case .dictEntry(.string(LocalAuthBus.Option.requestID), .variant(.string(let id))) in entries {
            return id
        }
        return nil
    }

    func nameOwnerChanged(_ message: Message) {
        // The subscription already checked this; a forged "caller left" would
        // cancel someone else's evaluation, so it is checked again here.
        guard message.sender == BusConnection.busDriver else { return }
        let arguments = message.arguments
        guard arguments.count == 3, let name = arguments[0].string, arguments[2].string == "" else { return }
        registry.senderVanished(name)
        promptAgents.agentVanished(name)
        callers.forget(name)
        environment.unsubscribe(name)
        rightsCallerVanished(name)
        fprintd?.senderVanished(name)
    }

    // MARK: Properties

    private var biometryType: BiometryKind { readers.isPresent ? .touchID : .none }

    func properties(_ call: IncomingCall) {
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
}
