internal import CGLib
import DBusCore
import LocalAuthShared

/// localauthd: the org.example.LocalAuth service, as a composition root.
///
/// This type makes the components, joins them through the adapters in each
/// folder's `…Wiring.swift`, and owns the service's life: `run()` starts
/// them, serves every call as a task of one group, and `stop()` (SIGTERM,
/// the idle exit, the bus lost) drains it. It decides nothing about a call:
/// the components do, one folder each. docs/DESIGN.md says where each is
/// ("Layout", "The service, one file at a time"), draws them and follows one
/// call through them.
@ServiceActor
public final class LocalAuthService {
    let configuration: Configuration
    let bus: BusConnection
    /// The work the task group of `run()` runs: every call, and the readers'
    /// hotplug work. Finished by `stop()`, which ends `run()` once the last
    /// task has ended.
    private let work = WorkQueue<Work>()
    enum Work: Sendable {
        case call(any RoutedCall)
        case reader(Readers.Work)
        /// The sleep cycle's actions, run in order (SleepCoordinator).
        case sleepCycle(@Sendable @ServiceActor () async -> Void)
        /// A component's own work (fprintd's scans: Fprintd/).
        case task(@Sendable @ServiceActor () async -> Void)
    }

    // The components, made in dependency order in `init`, each given what it
    // uses (docs/DESIGN.md, "Wired once"); kept here only those the service's
    // life still needs after (start, stop, a caller leaving the bus).
    /// libfprint: the readers, opened on demand (Readers/).
    let readers: Readers
    /// The enrolled prints on disk (Prints/).
    let prints: PrintStore
    /// logind and UPower: sleep and the lid (Logind.swift).
    let logind: Logind
    /// One record per calling connection: uid, process, app, presence (Callers/).
    let callers: Callers
    /// Every call in flight, from arrival to answer (Bus/CallRecord.swift).
    let registry = CallRegistry()
    /// Which reader serves whom, hotplug, the domain state (Readers/ReaderChoice.swift).
    let readerChoice: ReaderChoice
    /// The desktop sessions' prompt agents and the sheets they show (Prompt/).
    let promptAgents: PromptAgents
    /// The lid, LAEnvironment's subscribers, the sleep cycle's owner (Environment/).
    let environment: Environment
    /// Rights and secrets: their storage and the authorizations in force (Rights/).
    let rights: RightsService
    /// org.example.LocalAuth's object: the components its rows reach (LocalAuth/LocalAuthContract.swift).
    let object: LocalAuthObject
    /// The wire of every contract: bounds, typed arguments, polkit, the method tables (Bus/).
    let router: CallRouter
    /// `--fprintd`: fprintd's net.reactivated.Fprint on the same readers (Fprintd/).
    let fprintd: FprintdServer?

    private var idleTimer: EventLoop.Timer?
    /// After SIGTERM: when the calls still running are abandoned.
    private var shutdownDeadline: EventLoop.Timer?
    /// The shutdown gave up on operations a reader never ended: do not close it.
    private var readersStuck = false
    private(set) var stopping = false

    /// Makes every component once, in dependency order; nothing is set on
    /// one after it is made.
    private init(configuration: Configuration, bus: BusConnection) {
        self.configuration = configuration
        self.bus = bus
        readers = Readers(
            lingerSeconds: configuration.readerLinger, builtIn: configuration.builtInReaders,
            external: configuration.externalReaders, schedule: { [work] in work.yield(.reader($0)) })
        let queue = SensorQueue()
        let readerGate = ReaderGate(
            queue: queue, opener: LibfprintOpener(readers: readers, scanTimeout: configuration.scanTimeout))
        prints = PrintStore(stateDirectory: configuration.stateDirectory, fprintdStore: configuration.fprintdStore,
                            fprintdLayout: configuration.fprintd)
        logind = Logind(bus: bus)
        callers = Callers(bus: bus, logind: logind)
        // Where the finger is enough (ContextPolicy/): the hooks reach it through `current`.
        ContextPolicy.current = ContextPolicy(
            machineFile: configuration.policyFile, stateDirectory: configuration.stateDirectory,
            identify: { [callers] in callers.identity($0) })
        let authorizer = Authorizer()
        let events = ServiceEvents()
        let passwords = PasswordStore(stateDirectory: configuration.stateDirectory, requirement: configuration.passwordRequirement)
        let sleepCycle = SleepCoordinator(
            seams: ServiceSleepSeams(queue: queue, registry: registry, readers: readers, logind: logind, events: events),
            spawn: { [work] body in work.yield(.sleepCycle(body)) })
        readerChoice = ReaderChoice(
            configured: configuration.reader,
            seams: ServiceReaderChoiceSeams(
                readers: readers, sleepCycle: sleepCycle, logind: logind, prints: prints, callers: callers, events: events,
                bus: bus))
        promptAgents = PromptAgents(seams: ServicePromptSeams(callers: callers, bus: bus))
        let wiring = ServiceEvaluatorWiring(
            readers: readers, readerChoice: readerChoice, prints: prints, callers: callers,
            passwords: passwords, events: events, authorizer: authorizer, promptAgents: promptAgents, bus: bus)
        // The one verify operation, both contracts' (Evaluation/Verifier.swift).
        let verifier = Verifier(
            stateDirectory: configuration.stateDirectory, gate: readerGate, readers: wiring, prints: wiring,
            environment: wiring, clock: EventLoopClock())
        let evaluator = Evaluator(
            configuration: configuration, registry: registry, verifier: verifier, ownerPassword: wiring, observers: wiring)
        environment = Environment(
            passwords: passwords,
            seams: ServiceEnvironmentSeams(
                readers: readers, logind: logind, readerChoice: readerChoice, prints: prints, queue: queue,
                evaluator: evaluator, callers: callers, bus: bus),
            sleepCycle: sleepCycle, events: events)
        // Both enrollments' duplicate checks (ours on a chip, fprintd's on a
        // reader that identifies) share one budget and count into one lockout.
        let duplicateChecks = DuplicateCheckBudget(
            stateDirectory: configuration.stateDirectory,
            countFailedMatch: { [verifier] uid in _ = try? verifier.scanDidNotMatch(uid) })
        // The one enroll operation, both contracts' (Enrollment/Enrollment.swift).
        let enrollment = Enrollment(
            gate: readerGate, readers: readerChoice,
            duplicateChecks: duplicateChecks, stages: { [readers] in readers.enrollStages(on: $0) })
        let enroller = Enroller(
            seams: ServiceEnrollerSeams(readerChoice: readerChoice, readers: readers, gate: readerGate, bus: bus),
            prints: ServiceEnrollerPrints(prints: prints, events: events), enrollment: enrollment,
            scanTimeout: configuration.scanTimeout, duplicateChecks: duplicateChecks)
        rights = RightsService(
            stateDirectory: configuration.stateDirectory, keyBackend: configuration.keyBackend,
            authorizationSeconds: configuration.rightsAuthorizationTimeout,
            seams: ServiceRightsWiring(evaluator: evaluator, readerChoice: readerChoice, prints: prints, callers: callers).seams)
        let loginSecrets = LoginSecrets(seams: ServiceLoginSecretWiring(
                rights: rights, stateDirectory: configuration.stateDirectory, keyBackend: configuration.keyBackend
            ).seams)
        object = LocalAuthObject(
            evaluator: evaluator, enroller: enroller, rights: rights, promptAgents: promptAgents, environment: environment,
            readerChoice: readerChoice, readers: readers, loginSecrets: loginSecrets)
        router = CallRouter(
            registry: registry, callers: callers, authorizer: authorizer,
            schedule: { [work] in work.yield(.call($0)) },
            // Enrolled, deleted, locked out, the password given: that user's
            // subscribers hear it (Environment.userChanged); a call that changed
            // nothing costs nothing there.
            callEnded: { [environment] in environment.callEnded() })
        // Every decision about a finger, to the journal (History/, docs/HISTORY.md).
        ApprovalHistory.current = ApprovalHistory(
            identity: { [callers] in callers.identity($0) }, reader: { [readerChoice] in readerChoice.reader(for: $0) })
        fprintd = configuration.fprintd
            ? FprintdServer(
                seams: ServiceFprintdWiring(
                    readers: readers, gate: readerGate, prints: prints, readerChoice: readerChoice, verifier: verifier,
                    environment: environment, callers: callers, duplicateChecks: duplicateChecks, enrollment: enrollment,
                    bus: bus, loginSecrets: loginSecrets),
                router: router, bus: bus, scanTimeout: configuration.fprintdScanTimeout, events: events,
                spawn: { [work] body in work.yield(.task(body)) })
            : nil
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
        // SIGHUP (the unit's ExecReload): the administrator's policy is read again (docs/POLICY.md).
        EventLoop.processDefault.onSignal(SIGHUP) { ServiceActor.assumeIsolated { ContextPolicy.current?.reload() } }
        await service.serveUntilStopped()
    }

    private static func start(_ configuration: Configuration) async throws -> LocalAuthService {
        try AtomicFile.makeDirectory(configuration.stateDirectory)
        // A large message, once refused, leaves nothing resident and costs
        // its two copies at most, however many come (mapLargeBuffersApart).
        BusConnection.mapLargeBuffersApart()
        let bus = try BusConnection.connect(to: .system, loop: EventLoop.processDefault)
        let service = LocalAuthService(configuration: configuration, bus: bus)
        // Enumeration only: a reader opens when an operation needs it.
        service.readers.start()
        // Clears what interrupted writes left; follows reader hotplug, so
        // that BiometryType (PropertiesChanged) and preflight follow.
        service.prints.removeTemporaries()
        service.readerChoice.startFollowingHotplug()
        service.readers.observe { [readerChoice = service.readerChoice] in readerChoice.readersChanged() }
        // What libdbus may hold of calls not yet released: all the calls the
        // registry admits at their largest body fit well below it.
        bus.limitBufferedIncoming(bytes: ServiceLimits.bufferedIncomingBytes)
        service.router.export(LocalAuthBus.objectPath, LocalAuthContract.contract, on: service.object, bus: bus)
        // A caller that leaves the bus cancels what it started. Only the bus
        // driver can say so: the subscription checks the sender of every
        // signal, since anyone may send a forged one straight to us.
        try await bus.subscribe(sender: BusConnection.busDriver, interface: "org.freedesktop.DBus",
                                member: "NameOwnerChanged", extraMatch: ",arg2=''") { message in
            ServiceActor.assumeIsolated { service.nameOwnerChanged(message) }
        }
        // Each new connection's process and executable, read at once (Callers).
        try await service.callers.followNewConnections()
        // Sleep, the lid and the callers' sessions (docs/SECURITY.md), to the Environment.
        let environment = service.environment
        // Held strongly (both live as long as the process): a weak reference
        // would make every retain of the Environment slower (BENCHMARKS.md).
        service.logind.onSleep = { sleeping in environment.prepareForSleep(sleeping) }
        service.logind.onLidChange = { environment.lidChanged() }
        // A switch of the session in front also ends the fingerprint verifies
        // of callers no longer there (Evaluation/Verification.swift), and the
        // idle claims of fprintd's contract (Fprintd/FprintdDevice.swift).
        let verifier = service.object.evaluator.verifier
        let fprintd = service.fprintd
        service.logind.onSessionChange = { [work = service.work] in
            environment.sessionsChanged()
            work.yield(.task { await verifier.frontChanged() })
            if let fprintd { work.yield(.task { await fprintd.frontChanged() }) }
        }
        await service.logind.start()
        bus.onDisconnect {
            ServiceActor.assumeIsolated {
                Log.error("lost the system bus; exiting")
                service.stop()
            }
        }
        if let fprintd = service.fprintd {
            service.prints.moveOwnPrintsToFprintdLayout()
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
    /// another turn of the loop after this one; built with Swift 6.0, at the
    /// next turn: `addTaskStartingOnLoop`), and so is the readers' hotplug
    /// work. Child tasks inherit the loop as their executor preference
    /// (SE-0417), so everything the service awaits resumes on the loop.
    /// Returns once `stop()` ended the work stream and every child ended.
    private func serveUntilStopped() async {
        await withDiscardingTaskGroup { group in
            while let item = await work.next() {
                switch item {
                case .call(let routed):
                    group.addTaskStartingOnLoop { @ServiceActor in await routed.serve(on: self.router) }
                case .reader(let job):
                    group.addTask { [readers] in await readers.perform(job) }
                case .sleepCycle(let actions):
                    group.addTaskStartingOnLoop { @ServiceActor in await actions() }
                case .task(let body):
                    group.addTaskStartingOnLoop { @ServiceActor in await body() }
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
        router.stop()
        // Every call, wherever it waits (the uid lookup, polkit, the reader,
        // the password), ends now with SystemCancel.
        registry.stopAll()
        environment.stop()
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
        let count = registry.abandonAll(answering: Interruption.serviceStopping.error)
        Log.warning("\(count) call(s) still waited \(Int(ServiceLimits.shutdownGrace)) s after SIGTERM "
                    + "(a reader ignored its cancellation); answered them and exiting")
        readersStuck = true
        PendingGLibCalls.abandonAll()
    }

    // MARK: Idle exit

    /// The one idle rule: no call registered, and nothing received for the
    /// idle timeout. Checked when the timer fires; activity only moves
    /// the router's `lastActivity`, so a busy service arms no timers.
    private var isIdle: Bool {
        // Environment subscribers do not keep it alive (one subscriber of any
        // uid would keep it running for ever): the library subscribes again
        // when the service is next started (docs/SECURITY.md, "Limits").
        // An fprintd claim does: its claimer holds the device between calls.
        registry.isEmpty && !(fprintd?.keepsServiceAlive ?? false)
            && ContinuousClock.now - router.lastActivity >= .seconds(configuration.idleTimeout)
    }

    private func armIdleTimer(after seconds: Double) {
        guard configuration.idleTimeout > 0, !stopping else { return }
        idleTimer = EventLoopTimers.after(max(seconds, 0.05)) { [weak self] in
            guard let self, !self.stopping else { return }
            if self.isIdle {
                Log.info("idle for \(Int(self.configuration.idleTimeout)) s; exiting")
                self.stop()
            } else {
                let quiet = ContinuousClock.now - self.router.lastActivity
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
}
