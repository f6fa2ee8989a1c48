internal import CLocalAuthInterface
import DBusCore
import LocalAuthShared

/// `localauthd --fprintd`: fprintd 1.94's `net.reactivated.Fprint` on the
/// same readers, prints and lockout as org.example.LocalAuth (docs/FPRINTD.md).
///
/// This file: the Manager object, one `FprintdDevice` per reader (ids given in
/// the order readers appear, never reused, as fprintd numbers them), routing
/// of calls to them, and the hooks the service calls (a caller left, stop).
/// FprintdDevice.swift: claims and the methods; FprintdOperations.swift: the
/// scans; FprintdPrints.swift: prints in fprintd's layout.
@ServiceActor
final class FprintdServer {
    unowned let service: LocalAuthService
    private(set) var devices: [FprintdDevice] = []
    private var nextID = 0
    private(set) var stopping = false

    nonisolated static let managerXML = String(cString: clocalauth_fprintd_manager_xml())
    nonisolated static let deviceXML = String(cString: clocalauth_fprintd_device_xml())

    init(service: LocalAuthService) {
        self.service = service
    }

    /// Exports the objects, follows the readers, and takes the bus name.
    func start() throws(DBusError) {
        // fprintd's calls are small (a finger name, a user name): the same
        // 16 KiB bound as org.example.LocalAuth's, checked by the connection
        // before anything (Properties included) is decoded.
        service.bus.export(ObjectPath(stringLiteral: FprintdBus.managerPath),
                           maximumBodyBytes: ServiceLimits.maximumBodyBytes) { [weak self] call in
            ServiceActor.assumeIsolated { self?.receiveManagerCall(call) }
        }
        refreshDevices()
        let previous = service.readers.onChange
        service.readers.onChange = { [weak self] in
            previous?()
            self?.refreshDevices()
        }
        switch try service.bus.requestName(FprintdBus.serviceName) {
        case .primaryOwner, .alreadyOwner: break
        case .taken: throw DBusError(.failed, "\(FprintdBus.serviceName) is owned by another process (is fprintd running?)")
        }
        Log.info("serving \(FprintdBus.serviceName) (fprintd's contract) on \(devices.count) reader(s); "
                 + "prints in fprintd's layout under \(service.prints.fprintdRoot)")
    }

    /// Whether claims or calls should keep the service from its idle exit.
    var keepsServiceAlive: Bool {
        devices.contains { $0.claim != nil || $0.operation != nil }
    }

    /// One Device object per reader libfprint has (open or not: a reader closed
    /// for sleep keeps its object and its claim, as in fprintd; sleep ends an
    /// operation through its queue ticket, FprintdOperations.swift); a reader that
    /// was unplugged loses its object (an operation on it ends with
    /// verify-/enroll-disconnected), one plugged in gets a new one.
    func refreshDevices() {
        let present = service.readers.devices.filter { !$0.removed }
        for device in devices {
            if !present.contains(where: { $0 === device.reader }) { device.readerGone() }
        }
        devices.removeAll { $0.isGone }
        for reader in present where !devices.contains(where: { $0.reader === reader }) {
            let device = FprintdDevice(id: nextID, reader: reader, server: self)
            nextID += 1
            devices.append(device)
            service.bus.export(ObjectPath(stringLiteral: device.path),
                               maximumBodyBytes: ServiceLimits.maximumBodyBytes) { [weak self] call in
                ServiceActor.assumeIsolated { self?.receiveDeviceCall(call) }
            }
            Log.info("fprintd device \(device.path) is reader \(reader.identity)")
        }
    }

    /// A bus name left: its claims are released and its operations stopped.
    func senderVanished(_ name: String) {
        for device in devices { device.senderVanished(name) }
    }

    /// SIGTERM: every operation ends now (calls, polkit included, end through the registry).
    func stop() {
        stopping = true
        for device in devices { device.stopAll() }
    }

    // MARK: Routing

    private func receiveManagerCall(_ call: IncomingCall) {
        switch (call.interface, call.member, call.signature) {
        case (FprintdBus.managerInterface?, "GetDevices", ""), (nil, "GetDevices", ""):
            call.reply([.array("o", devices.map { .objectPath(ObjectPath(stringLiteral: $0.path)) })])
        case (FprintdBus.managerInterface?, "GetDefaultDevice", ""), (nil, "GetDefaultDevice", ""):
            guard let record = register(call) else { return }
            service.spawn { [self] in
                defer { service.registry.remove(record) }
                do throws(DBusError) {
                    call.reply([.objectPath(ObjectPath(stringLiteral: try await defaultDevice(for: call.sender).path))])
                } catch {
                    call.fail(error)
                }
            }
        case ("org.freedesktop.DBus.Introspectable"?, "Introspect", ""):
            call.reply([.string(Self.managerXML)])
        case (FprintdBus.managerInterface?, _, _), (nil, _, _):
            call.fail(DBusError(.unknownMethod, "\(FprintdBus.managerInterface) has no method \(call.member)(\(call.signature))"))
        case ("org.freedesktop.DBus.Properties"?, "GetAll", "s"):
            call.reply([.dictionary([:])])
        default:
            call.fail(DBusError(.unknownInterface, "no interface \(call.interface ?? "") at \(call.path)"))
        }
    }

    /// The reader that serves the caller's LAContext evaluations (ReaderChoice.swift),
    /// so that fprintd's clients and apps use the same one.
    private func defaultDevice(for sender: String) async throws(DBusError) -> FprintdDevice {
        guard !devices.isEmpty else { throw FprintdBus.Error.noSuchDevice("No devices available") }
        if devices.count > 1, let uid = try? await service.callers.record(for: sender).uid, let chosen = service.readerChoice.reader(for: uid),
           let device = devices.first(where: { $0.identity == chosen }) {
            return device
        }
        return devices[0]
    }

    /// Every call is registered as org.example.LocalAuth's are (Requests.swift):
    /// the same bounds per connection, per uid and in total, the same idle
    /// rule, and SIGTERM ends it wherever it waits.
    private func register(_ call: IncomingCall) -> CallRecord? {
        let record = CallRecord(sender: call.sender, requestID: nil, arguments: call.arguments, call: call)
        do throws(ServiceError) {
            try service.registry.register(record)
        } catch {
            call.fail(DBusError(.limitsExceeded, error.message))
            return nil
        }
        return record
    }

    private func receiveDeviceCall(_ call: IncomingCall) {
        guard let device = devices.first(where: { $0.path == call.path }) else {
            return call.fail(DBusError(.unknownObject, "no device at \(call.path)"))
        }
        switch call.interface {
        case FprintdBus.deviceInterface?, nil:
            guard let spec = FprintdDevice.methods[call.member] else {
                return call.fail(DBusError(.unknownMethod, "\(FprintdBus.deviceInterface) has no method \(call.member)"))
            }
            guard call.signature == spec.signature else {
                return call.fail(DBusError(.invalidArgs, "\(call.member) takes (\(spec.signature)), not (\(call.signature))"))
            }
            guard !call.message.carriesFileDescriptors else {
                return call.fail(DBusError(.invalidArgs, "\(FprintdBus.deviceInterface) takes no file descriptors"))
            }
            guard !stopping else { return call.fail(FprintdBus.Error.internal("the service is stopping")) }
            guard let record = register(call) else { return }
            service.spawn { [self] in
                defer {
                    service.registry.remove(record)
                    // A delete: the user's LAEnvironment subscribers hear it now.
                    service.environment.callEnded()
                }
                do throws(DBusError) {
                    // One caller record per connection (Callers/), as org.example.LocalAuth's calls have.
                    let caller: CallerRecord
                    do throws(DBusError) {
                        caller = try await service.callers.record(for: call.sender)
                    } catch {
                        throw FprintdBus.Error.internal("Could not get connection unix user ID: \(error.message)")
                    }
                    do throws(ServiceError) {
                        try service.registry.admit(record, uid: caller.uid)
                    } catch {
                        throw error.dbusError
                    }
                    call.reply(try await device.serve(call, spec, caller: caller, record: record))
                } catch {
                    call.fail(error)
                }
            }
        case "org.freedesktop.DBus.Introspectable":
            guard call.member == "Introspect", call.signature.isEmpty else {
                return call.fail(DBusError(.unknownMethod, "Introspectable has no method \(call.member)(\(call.signature))"))
            }
            call.reply([.string(Self.deviceXML)])
        case "org.freedesktop.DBus.Properties":
            device.properties(call)
        default:
            call.fail(DBusError(.unknownInterface, "no interface \(call.interface ?? "")"))
        }
    }
}
