internal import CGLib
internal import CLocalAuthInterface
import DBusCore
import LocalAuthShared

/// localauthd: the org.example.LocalAuth service, as a composition root.
///
/// This type makes the components, joins them through the adapters in each
/// folder's `…Wiring.swift`, and owns the service's life: `run()` starts
/// them, serves every call as a task of one group, and `stop()` (SIGTERM,
/// the idle exit, the bus lost) drains it. It decides nothing about a call:
/// Bus/ (the router: bounds, typed arguments, polkit, the method table),
/// Callers/ (who calls), Evaluation/ (preflight, policy 1 and 2, VerifyUser,
/// the lockout), Enrollment/, Rights/, Prompt/ (the sheet), Environment/
/// (sleep, the lid, LAEnvironment, the password after boot), Readers/
/// (libfprint, the reader queue and gate, reader choice), Fprintd/ (fprintd's
/// contract). docs/DESIGN.md draws them and follows one call through them.
@ServiceActor
public final class LocalAuthService: CallRouterHost {
    let configuration: Configuration
    let bus: BusConnection
    let readers = Readers()
    let authorizer = Authorizer()
    let queue = SensorQueue()
    /// A reader for one operation: the queue, opening, the errors (Readers/ReaderGate.swift).
    private(set) lazy var readerGate = ReaderGate(readers: readers, queue: queue, scanTimeout: configuration.scanTimeout)
    let prints: PrintStore
    /// The desktop sessions' prompt agents and the sheets they show (Prompt/).
    private(set) lazy var promptAgents = PromptAgents(seams: ServicePromptSeams(self))
    /// Rights and secrets: their storage and the authorizations in force (Rights/).
    private(set) lazy var rights = RightsService(
        stateDirectory: configuration.stateDirectory, keyBackend: configuration.keyBackend,
        authorizationSeconds: configuration.rightsAuthorizationTimeout, seams: ServiceRightsWiring(self).seams)
    /// The login secret that opens the login keyring (LoginSecret/, docs/KEYRING.md).
    private(set) lazy var loginSecrets = LoginSecrets(seams: ServiceLoginSecretWiring(self).seams)
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
    private(set) lazy var enroller = Enroller(seams: ServiceEnrollerSeams(self), prints: ServiceEnrollerPrints(self),
                                              scanTimeout: configuration.scanTimeout)
    /// Which reader serves whom, hotplug, the domain state (Readers/ReaderChoice.swift).
    private(set) lazy var readerChoice = ReaderChoice(configured: configuration.reader, seams: ServiceReaderChoiceSeams(self))
    /// `--fprintd`: fprintd's net.reactivated.Fprint on the same readers (Fprintd/).
    var fprintd: FprintdServer?

    /// Every call in flight, from arrival to answer (Bus/Requests.swift).
    let registry = CallRegistry()
    /// The wire: bounds, typed arguments, polkit, the method table (Bus/).
    private(set) lazy var router = CallRouter(host: self, registry: registry, callers: callers, authorizer: authorizer,
                                              methods: Self.methods, interfaceXML: Self.interfaceXML)
    /// Preflight, evaluations, VerifyUser and the lockout (Evaluation/).
    private(set) lazy var evaluator: Evaluator = {
        let wiring = ServiceEvaluatorWiring(self)
        return Evaluator(configuration: configuration, queue: queue, registry: registry,
                         seams: EvaluatorSeams(readers: wiring, prints: wiring, environment: wiring,
                                               ownerPassword: wiring, observers: wiring, clock: EventLoopClock()))
    }()
    /// The work the task group of `run()` runs: every call, and the readers'
    /// hotplug work. Finished by `stop()`, which ends `run()` once the last
    /// task has ended.
    private let work = WorkQueue<Work>()
    enum Work: Sendable {
        case call(RoutedCall)
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
        logind = Logind(bus: bus)
        callers = Callers(bus: bus, logind: logind)
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
        // What libdbus may hold of calls not yet released: all the calls the
        // registry admits at their largest body fit well below it.
        bus.limitBufferedIncoming(bytes: ServiceLimits.bufferedIncomingBytes)
        // The connection refuses a body past SaveRight's (the largest we take)
        // before the router runs; the router holds every other method to 16 KiB.
        bus.export(ObjectPath(stringLiteral: LocalAuthBus.objectPath),
                   maximumBodyBytes: RightsServiceLimits.saveRightBodyBytes,
                   oversized: { call in
                       call.fail(ServiceErrors.limit("the call's arguments are larger than \(RightsServiceLimits.saveRightBodyBytes) bytes").dbusError)
                   }) { call in
            ServiceActor.assumeIsolated { service.router.receive(call) }
        }
        // A caller that leaves the bus cancels what it started. Only the bus
        // driver can say so: the subscription checks the sender of every
        // signal, since anyone may send a forged one straight to us.
        try await bus.subscribe(sender: BusConnection.busDriver, interface: "org.freedesktop.DBus",
                                member: "NameOwnerChanged", extraMatch: ",arg2=''") { message in
            ServiceActor.assumeIsolated { service.nameOwnerChanged(message) }
        }
        // Each new connection's process and executable, read at once (Callers).
        try await service.callers.followNewConnections()
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
                case .call(let routed):
                    group.addImmediateTask { @ServiceActor in await self.router.serve(routed, on: self) }
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
        rights.callerVanished(name)
        fprintd?.senderVanished(name)
    }

    // MARK: The router's host

    var isStopping: Bool { stopping }

    var biometryType: BiometryKind { readers.isPresent ? .touchID : .none }

    func noteActivity() { lastActivity = .now }

    func schedule(_ call: RoutedCall) { work.yield(.call(call)) }

    func callEnded() {
        // Enrolled, deleted, locked out, the password given: that user's
        // subscribers hear it (Environment.userChanged); a call that changed
        // nothing costs nothing there.
        environment.callEnded()
    }
}
