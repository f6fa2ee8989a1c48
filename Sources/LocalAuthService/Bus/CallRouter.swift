import DBusCore
import LocalAuthShared

/// The wire side of every contract the service serves (org.example.LocalAuth,
/// and with `--fprintd` fprintd's Manager and Devices): each message to an
/// exported object is bounded, decoded once into its row's typed arguments
/// (validated in full), registered, then served: the caller's record
/// (Callers/), polkit (Authorization.swift), the row's handler, the answer in
/// the contract's words (its `ErrorTable`). A contract's method table
/// (`BusContract`) is the only place that pairs its methods with their
/// signatures, polkit actions and handlers; Introspect and Properties are
/// answered here too, for every contract alike.
@ServiceActor
final class CallRouter {
    private let registry: CallRegistry
    private let callers: any CallerLookup
    let authorizer: any PolkitCheck
    /// Runs a registered call as a task of the service's task group.
    private let schedule: @ServiceActor (any RoutedCall) -> Void
    /// A call was answered: enrolled, deleted, locked out, the password given… subscribers may hear of it.
    private let callEnded: @ServiceActor () -> Void
    /// SIGTERM arrived: new calls are refused with SystemCancel (`stop()`).
    private(set) var isStopping = false
    /// When a call last arrived or ended: the idle exit waits for quiet.
    private(set) var lastActivity = ContinuousClock.now

    init(
        registry: CallRegistry, callers: any CallerLookup, authorizer: any PolkitCheck,
        schedule: @escaping @ServiceActor (any RoutedCall) -> Void, callEnded: @escaping @ServiceActor () -> Void
    ) {
        self.registry = registry
        self.callers = callers
        self.authorizer = authorizer
        self.schedule = schedule
        self.callEnded = callEnded
    }

    /// New calls are refused from now on (those registered end through the registry).
    func stop() { isStopping = true }

    /// Serves `contract` on `target` at `path` of `bus`. The router lives as
    /// long as the process; held strongly, never weakly: an object with a
    /// weak reference pays a slower retain on every call (BENCHMARKS.md).
    /// The connection itself refuses a body past the contract's largest
    /// row's bound before anything runs (answered in the contract's words);
    /// `receive` then holds each call to its own row's bound.
    func export<Target>(_ path: String, _ contract: BusContract<Target>, on target: Target, bus: BusConnection) {
        let largest = contract.largestBody
        let errors = contract.errors
        bus.export(
            ObjectPath(stringLiteral: path), maximumBodyBytes: largest,
            oversized: { call in
                call.fail(ServiceErrors.limit("the call's arguments are larger than \(largest) bytes").dbusError(errors))
            }
        ) { [self] call in
            ServiceActor.assumeIsolated { receive(call, contract, target) }
        }
    }

    /// `path` is served no more (an unplugged reader's Device).
    func unexport(_ path: String, bus: BusConnection) { bus.unexport(ObjectPath(stringLiteral: path)) }

    func receive<Target>(_ call: IncomingCall, _ contract: BusContract<Target>, _ target: Target) {
        receive(call as any WireCall, contract, target)
    }

    /// `receive` for any call on the wire (the unit tests give their own).
    func receive<Target>(_ call: any WireCall, _ contract: BusContract<Target>, _ target: Target) {
        lastActivity = .now
        // Bounds first, before anything is decoded or kept (docs/SECURITY.md).
        // A refused call is dropped here, and with it any fds it carried.
        if call.carriesFileDescriptors {
            return call.fail(DBusError(.invalidArgs, "\(contract.interface) takes no file descriptors"))
        }
        // Every message, whatever its interface (Properties and Introspect
        // included), before its body is decoded: its row's bound, else 16 KiB.
        let ours = call.interface == contract.interface || call.interface == nil
        let row = ours ? contract.methods[call.member] : nil
        let bodyLimit = row?.maximumBodyBytes ?? ServiceLimits.maximumBodyBytes
        if call.approximateBodySize > bodyLimit {
            return call.fail(ServiceErrors.limit("the call's arguments are larger than \(bodyLimit) bytes").dbusError(contract.errors))
        }
        switch call.interface {
        case contract.interface?, nil:
            guard let spec = row else {
                return call.fail(DBusError(.unknownMethod, "\(contract.interface) has no method \(ServiceErrors.echo(call.member))"))
            }
            guard call.signature == spec.signature else {
                return call.fail(DBusError(.invalidArgs, "\(call.member) takes (\(spec.signature)), not (\(ServiceErrors.echo(call.signature)))"))
            }
            guard !isStopping else {
                return call.fail(ServiceErrors.la(.systemCancel, "the authentication service is stopping").dbusError(contract.errors))
            }
            // Decoded once, validated in full: a bad argument is answered
            // now, before the caller is looked up or polkit is asked.
            let arguments: any CallArguments
            do throws(ServiceError) {
                arguments = try spec.decode(call.arguments)
            } catch {
                return call.fail(error.dbusError(contract.errors))
            }
            // Registered now, before anything awaits: from here on a vanish,
            // Cancel or SIGTERM ends it wherever it waits.
            let record = CallRecord(
                sender: call.sender, requestID: arguments.callRequestID, errors: contract.errors, scans: spec.scans, call: call)
            do throws(ServiceError) {
                try registry.register(record)
            } catch {
                return call.fail(error.dbusError(contract.errors))
            }
            // Only the sender's own calls: no polkit action guards Cancel.
            if let ended = arguments.endsCall { registry.end(requestID: ended.requestID, of: call.sender, ended.reason) }
            schedule(Routed(call: call, contract: contract, spec: spec, target: target, arguments: arguments, record: record))
        case "org.freedesktop.DBus.Introspectable":
            if call.member == "Introspect", call.signature.isEmpty {
                call.reply([.string(contract.introspection)])
            } else {
                call.fail(DBusError(.unknownMethod, "Introspectable has no method \(ServiceErrors.echo(call.member))(\(ServiceErrors.echo(call.signature)))"))
            }
        case "org.freedesktop.DBus.Properties":
            properties(call, contract, target)
        default:
            call.fail(DBusError(.unknownInterface, "no interface \(ServiceErrors.echo(call.interface ?? ""))"))
        }
    }

    /// Serves a registered call: who calls, may they, the handler; answers
    /// it unless a stuck shutdown answered it already.
    func serve<Target>(_ routed: Routed<Target>) async {
        let (call, spec, record, errors) = (routed.call, routed.spec, routed.record, routed.contract.errors)
        defer {
            registry.remove(record)
            lastActivity = .now
            callEnded()
        }
        do throws(ServiceError) {
            let caller: CallerRecord
            do throws(DBusError) {
                caller = try await callers.record(for: record.sender)
            } catch {
                throw ServiceError(bus: error)
            }
            ServiceActor.assertOnLoop()
            try record.checkNotEnded()
            try registry.admit(record, uid: caller.uid)
            let asked = Request(caller: caller, record: record)
            try spec.admits?(routed.target, asked)
            let request = try await authorize(routed, caller: caller)
            ServiceActor.assertOnLoop()
            try record.checkNotEnded()
            // Re-read after the awaits: a claim may have changed meanwhile.
            try spec.admits?(routed.target, request)
            // The contract's watch (org.example.LocalAuth: the history of approvals) sees how it ended.
            let answer: [DBusValue]
            if let watch = routed.contract.answers {
                answer = try await watch(call.member, request, routed.arguments, errors) { () async throws(ServiceError) in
                    try await spec.handler(routed.target, request, routed.arguments)
                }
            } else {
                answer = try await spec.handler(routed.target, request, routed.arguments)
            }
            guard !record.abandoned else { return }
            call.reply(answer)
        } catch {
            // A call a stuck shutdown answered already is not answered twice.
            guard !record.abandoned else { return }
            call.fail((record.interruption?.error ?? error).dbusError(errors))
        }
    }

    // MARK: Properties

    /// org.freedesktop.DBus.Properties for every contract: its properties are
    /// read-only, and an unknown name is echoed bounded.
    private func properties<Target>(_ call: any WireCall, _ contract: BusContract<Target>, _ target: Target) {
        let arguments = call.arguments
        let values = { contract.properties?(target) ?? [:] }
        switch (call.member, call.signature) {
        case ("Get", "ss"):
            guard arguments[0].string == contract.interface else {
                return call.fail(DBusError(.unknownInterface, "no interface \(ServiceErrors.echo(arguments[0].string ?? ""))"))
            }
            guard let value = values()[arguments[1].string ?? ""] else {
                return call.fail(DBusError(.unknownProperty, "no property \(ServiceErrors.echo(arguments[1].string ?? ""))"))
            }
            call.reply([.variant(value)])
        case ("GetAll", "s"):
            let ours = arguments[0].string == contract.interface || arguments[0].string == ""
            call.reply([.dictionary(ours ? values() : [:])])
        case ("Set", "ssv"):
            call.fail(DBusError(.propertyReadOnly, "\(ServiceErrors.echo(arguments[1].string ?? "")) is read-only"))
        default:
            call.fail(DBusError(.unknownMethod, "Properties has no method \(ServiceErrors.echo(call.member))(\(ServiceErrors.echo(call.signature)))"))
        }
    }
}

// The router's seams: what it needs of the wire, the bus driver and polkit,
// served by DBusCore, Callers/ and the Authorizer, and in the unit tests by fakes.

/// A method call on the wire, answered exactly once.
@ServiceActor
protocol WireCall: Sendable {
    var sender: String { get }
    var interface: String? { get }
    var member: String { get }
    var signature: String { get }
    /// The body, decoded (each access decodes it again: the router reads it once).
    var arguments: [DBusValue] { get }
    var carriesFileDescriptors: Bool { get }
    var approximateBodySize: Int { get }
    func reply(_ values: [DBusValue])
    func fail(_ error: DBusError)
}

extension IncomingCall: WireCall {
    var carriesFileDescriptors: Bool { message.carriesFileDescriptors }
    var approximateBodySize: Int { message.approximateBodySize }
}

/// Who a connection is: its record, asked of the bus driver once (Callers/).
@ServiceActor
protocol CallerLookup: AnyObject {
    func record(for sender: String) async throws(DBusError) -> CallerRecord
}


/// polkit's verdict on one action for one bus name (Authorizer.swift).
@ServiceActor
protocol PolkitCheck: AnyObject {
    func check(actionID: String, busName: String, interactive: Bool, cancellable: Cancellable) async -> Authorizer.Decision
}

extension Authorizer: PolkitCheck {
    func check(actionID: String, busName: String, interactive: Bool, cancellable: Cancellable) async -> Decision {
        await check(actionID: actionID, busName: busName, interactive: interactive, details: [:], cancellable: cancellable)
    }
}
