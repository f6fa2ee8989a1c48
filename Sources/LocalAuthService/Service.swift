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
/// The rest, one concern a file: Callers.swift (who calls, may they),
/// Evaluations.swift (preflight, policy 1, the scan loop, lockout, reuse),
/// OwnerPolicy.swift (policy 2), Enrollment.swift (enroll, list, delete),
/// ReaderChoice.swift (which reader serves whom, hotplug, domain state),
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
    /// The desktop sessions' prompt agents and the sheets they show (PromptAgents.swift).
    let promptAgents = PromptAgents()

    /// Every call in flight, from arrival to answer (Requests.swift).
    let registry = CallRegistry()
    var enrollments: [String: Cancellable] = [:]
    /// The last fingerprint match of each user, with the enrolled set it was
    /// made against: what `reuse-duration` may accept (docs/SECURITY.md).
    var lastFingerprintMatch: [UInt32: EvaluationPlan.LastMatch] = [:]
    /// Who has kept the warm reader waiting lately (ReaderFairness.swift).
    var fairness = ReaderFairness()
    private var idleTimer: EventLoop.Timer?
    /// After SIGTERM: when the calls still running are abandoned.
    private var shutdownDeadline: EventLoop.Timer?
    private var finishing = false
    private var readersStuck = false
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
        await service.readers.start()
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
        guard !registry.isEmpty else { return }
        // Calls end as soon as what they wait on is cancelled; a reader that
        // ignores its cancellation would keep the service alive for ever.
        shutdownDeadline = EventLoopTimers.after(ServiceLimits.shutdownGrace) { [weak self] in
            self?.abandonStuckCalls()
        }
    }

    /// The shutdown grace is over: answer what is left and exit without
    /// closing the readers (an operation still runs on one; closing waits for it).
    private func abandonStuckCalls() {
        guard stopping, !registry.isEmpty else { return }
        let count = registry.abandonAll(answering: Evaluation.Interruption.serviceStopping.error)
        Log.warning("\(count) call(s) still waited \(Int(ServiceLimits.shutdownGrace)) s after SIGTERM "
                    + "(a reader ignored its cancellation); answered them and exiting")
        readersStuck = true
        finishIfStopped()
    }

    func finishIfStopped() {
        guard stopping, registry.isEmpty, !finishing else { return }
        finishing = true
        shutdownDeadline?.cancel()
        Task {
            if !readersStuck { await readers.stop() }
            bus.close()
            exitContinuation?.resume()
            exitContinuation = nil
        }
    }

    // MARK: Receiving calls

    func receive(_ call: IncomingCall) {
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
            let arguments = call.arguments
            let record = CallRecord(sender: call.sender,
                                    requestID: call.member == LocalAuthBus.Method.evaluatePolicy
                                        ? Self.requestID(in: arguments[2]) : nil,
                                    arguments: arguments, call: call)
            do throws(DBusError) {
                try registry.register(record)
            } catch {
                call.fail(error)
                return restartIdleTimer()
            }
            // Started immediately, on this thread: a call that never has to wait
            // (a preflight) is answered within this dispatch, with no extra
            // trip through the loop; one that waits (polkit, the readers)
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

    func serve(_ call: IncomingCall, _ spec: MethodSpec, _ record: CallRecord) async {
        defer {
            registry.remove(record)
            restartIdleTimer()
            finishIfStopped()
        }
        do throws(DBusError) {
            let uid = try await callerUID(record)
            ServiceActor.assertOnLoop()
            try record.checkNotEnded()
            try registry.admit(record, uid: uid)
            // polkit first (the action may depend on a `user` option): Enrollment.swift.
            let request = try await authorize(call, spec, uid: uid, record: record)
            ServiceActor.assertOnLoop()
            try record.checkNotEnded()
            call.reply(try await spec.handler(self, request))
        } catch {
            call.fail(record.interruption?.error ?? error)
        }
    }

    /// EvaluatePolicy's request id, read leniently at arrival (the options
    /// are validated in full later): it names the call for an early Cancel.
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
        promptAgentVanished(name)
    }

    func restartIdleTimer() {
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
