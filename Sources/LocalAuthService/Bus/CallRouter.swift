import DBusCore
import LocalAuthShared

/// What the router needs from the service that owns it.
@ServiceActor
protocol CallRouterHost: AnyObject {
    /// SIGTERM arrived: new calls are refused with SystemCancel.
    var isStopping: Bool { get }
    /// BiometryType, for org.freedesktop.DBus.Properties.
    var biometryType: BiometryKind { get }
    /// Something arrived or ended: the idle exit waits for quiet.
    func noteActivity()
    /// Runs a registered call as a task of the service's task group.
    func schedule(_ call: RoutedCall)
    /// A call was answered: enrolled, deleted, locked out, the password given… subscribers may hear of it.
    func callEnded()
}

/// A call that passed the router's checks, on its way to its handler.
struct RoutedCall: Sendable {
    let call: IncomingCall
    let spec: MethodSpec
    let arguments: any CallArguments
    let record: CallRecord
}

/// The wire side of org.example.LocalAuth: every message to our object is
/// bounded, decoded once into its typed arguments (validated in full),
/// registered, then served: the caller's record (Callers/), polkit
/// (Authorization.swift), the row's handler, the answer. The method table
/// (MethodTable.swift) is the only place that pairs a method with its
/// signature, its polkit action and its handler.
@ServiceActor
final class CallRouter {
    /// The service, which owns the router and outlives it (unowned(unsafe):
    /// a checked load would take the side table's slow path on every call).
    private unowned(unsafe) let host: any CallRouterHost
    private let registry: CallRegistry
    private let callers: Callers
    let authorizer: Authorizer
    private let methods: [String: MethodSpec]
    private let interfaceXML: String

    init(
        host: any CallRouterHost, registry: CallRegistry, callers: Callers, authorizer: Authorizer,
        methods: [String: MethodSpec], interfaceXML: String
    ) {
        self.host = host
        self.registry = registry
        self.callers = callers
        self.authorizer = authorizer
        self.methods = methods
        self.interfaceXML = interfaceXML
    }

    func receive(_ call: IncomingCall) {
        host.noteActivity()
        // Bounds first, before anything is decoded or kept (docs/SECURITY.md).
        // A refused call is dropped here, and with it any fds it carried.
        if call.message.carriesFileDescriptors {
            return call.fail(ServiceErrors.invalidArgs("\(LocalAuthBus.interface) takes no file descriptors").dbusError)
        }
        // SaveRight alone may carry a secret of up to 64 KiB (docs/RIGHTS.md).
        let bodyLimit =
            call.member == LocalAuthRightsBus.Method.saveRight
            ? RightsServiceLimits.saveRightBodyBytes : ServiceLimits.maximumBodyBytes
        if call.message.approximateBodySize > bodyLimit {
            return call.fail(ServiceErrors.limit("the call's arguments are larger than \(bodyLimit) bytes").dbusError)
        }
        switch call.interface {
        case LocalAuthBus.interface?, nil:
            guard let spec = methods[call.member] else {
                return call.fail(DBusError(.unknownMethod, "\(LocalAuthBus.interface) has no method \(call.member)"))
            }
            guard call.signature == spec.signature else {
                return call.fail(DBusError(.invalidArgs, "\(call.member) takes (\(spec.signature)), not (\(call.signature))"))
            }
            guard !host.isStopping else {
                return call.fail(ServiceErrors.la(.systemCancel, "the authentication service is stopping").dbusError)
            }
            // Decoded once, validated in full: a bad argument is answered
            // now, before the caller is looked up or polkit is asked.
            let values = call.arguments
            let arguments: any CallArguments
            do throws(ServiceError) {
                arguments = try spec.decode(values)
            } catch {
                return call.fail(error.dbusError)
            }
            // Registered now, before anything awaits: from here on a vanish,
            // Cancel or SIGTERM ends it wherever it waits.
            let record = CallRecord(
                sender: call.sender,
                requestID: arguments.callRequestID,
                arguments: values, call: call)
            do throws(ServiceError) {
                try registry.register(record)
            } catch {
                return call.fail(error.dbusError)
            }
            // Only the sender's own calls: no polkit action guards Cancel.
            if let ended = arguments.endsCall { registry.end(requestID: ended.requestID, of: call.sender, ended.reason) }
            host.schedule(RoutedCall(call: call, spec: spec, arguments: arguments, record: record))
        case "org.freedesktop.DBus.Introspectable":
            if call.member == "Introspect", call.signature.isEmpty {
                call.reply([.string(interfaceXML)])
            } else {
                call.fail(DBusError(.unknownMethod, "Introspectable has no method \(call.member)(\(call.signature))"))
            }
        case "org.freedesktop.DBus.Properties":
            properties(call)
        default:
            call.fail(DBusError(.unknownInterface, "no interface \(call.interface ?? "")"))
        }
    }

    /// Serves a registered call on `service`: who calls, may they, the
    /// handler; answers it unless a stuck shutdown answered it already.
    func serve(_ routed: RoutedCall, on service: LocalAuthService) async {
        let (call, spec, record) = (routed.call, routed.spec, routed.record)
        defer {
            registry.remove(record)
            host.noteActivity()
            host.callEnded()
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
            let request = try await authorize(call, spec, routed.arguments, caller: caller, record: record)
            ServiceActor.assertOnLoop()
            try record.checkNotEnded()
            let answer = try await spec.handler(service, request, routed.arguments)
            guard !record.abandoned else { return }
            call.reply(answer)
        } catch {
            // A call a stuck shutdown answered already is not answered twice.
            guard !record.abandoned else { return }
            call.fail((record.interruption?.error ?? error).dbusError)
        }
    }

    // MARK: Properties

    private func properties(_ call: IncomingCall) {
        let arguments = call.arguments
        let biometryType = host.biometryType
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
