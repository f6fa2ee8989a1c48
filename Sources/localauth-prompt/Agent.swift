import DBusCore
import Glibc
import LocalAuthShared

/// The agent's side of org.example.LocalAuth.PromptAgent
/// (dbus/org.example.LocalAuth.PromptAgent.xml): registers with the service
/// on the system bus (again whenever the service starts anew), shows each
/// ShowPrompt as a `PromptWindow`, and answers the person's choice with the
/// service's PromptAnswer. Calls are accepted only from the connection that
/// owns org.example.LocalAuth: anyone else could show a forged sheet.
@AgentActor
final class PromptAgent {
    let bus: BusConnection
    let path: ObjectPath = ObjectPath(stringLiteral: LocalAuthPrompt.agentObjectPath)
    private var windows: [String: PromptWindow] = [:]
    private var registeredWith: String?
    private var everRegistered = false

    init(bus: BusConnection) { self.bus = bus }

    func start() async {
        // ShowPrompt carries a few texts of at most 1 KiB: anything larger is
        // refused by the connection before it is decoded (and is not the service).
        bus.export(path, maximumBodyBytes: ServiceLimits.maximumBodyBytes) { call in
            AgentActor.assumeIsolated { self.handle(call) }
        }
        do {
            // Who owns the service's name, believed only from the bus driver.
            try await bus.followOwner(of: LocalAuthBus.serviceName)
            try await bus.subscribe(sender: BusConnection.busDriver, interface: BusConnection.busDriver,
                                    member: "NameOwnerChanged",
                                    extraMatch: ",arg0='\(LocalAuthBus.serviceName)'") { message in
                AgentActor.assumeIsolated { self.serviceOwnerChanged(message) }
            }
        } catch {
            Output.line("cannot follow \(LocalAuthBus.serviceName): \(error)")
            exit(1)
        }
        bus.onDisconnect {
            AgentActor.assumeIsolated {
                Output.line("lost the system bus; exiting")
                exit(1)
            }
        }
        await register()
    }

    /// Registers with the service (which the call starts if it is installed
    /// for bus activation); a service that is not running is waited for.
    func register() async {
        do {
            _ = try await bus.call(destination: LocalAuthBus.serviceName, path: ObjectPath(stringLiteral: LocalAuthBus.objectPath),
                                   interface: LocalAuthBus.interface,
                                   member: LocalAuthPrompt.ServiceMethod.registerPromptAgent,
                                   arguments: [.objectPath(path)])
            let owner = bus.owner(of: LocalAuthBus.serviceName) ?? "?"
            guard registeredWith != owner else { return }
            registeredWith = owner
            everRegistered = true
            Output.line("registered with \(owner) as \(bus.uniqueName)")
        } catch where error.name == .serviceUnknown || error.name == .nameHasNoOwner {
            Output.line("waiting for \(LocalAuthBus.serviceName)")
        } catch where error.name.rawValue == LocalAuthPrompt.agentExistsError && registeredWith == nil && !everRegistered {
            // Started twice for one session (the autostart entry and the user
            // unit): the session has its sheet already.
            Output.line("not registered: \(error.name.rawValue): \(error.message); exiting")
            exit(0)
        } catch {
            // PermissionDenied (no login session), …: tried again when the service restarts.
            Output.line("not registered: \(error.name.rawValue): \(error.message)")
        }
    }

    private func serviceOwnerChanged(_ message: Message) {
        let arguments = message.arguments
        guard message.sender == BusConnection.busDriver, arguments.count == 3,
              arguments[0].string == LocalAuthBus.serviceName, let newOwner = arguments[2].string else { return }
        // The service that showed our windows is gone: they are stale.
        for window in windows.values { window.finish(LocalAuthPrompt.Outcome.cancelled.rawValue) }
        windows.removeAll()
        registeredWith = nil
        if !newOwner.isEmpty { Task { await self.register() } }
    }

    // MARK: Calls from the service

    private func handle(_ call: IncomingCall) {
        guard let service = bus.owner(of: LocalAuthBus.serviceName), call.sender == service else {
            return call.fail(DBusError(.accessDenied, "only \(LocalAuthBus.serviceName) may show prompts here"))
        }
        let arguments = call.arguments
        switch (call.interface, call.member, call.signature) {
        case (LocalAuthPrompt.agentInterface?, LocalAuthPrompt.AgentMethod.showPrompt, "sa{sv}"):
            guard let id = arguments[0].string, let details = arguments[1].stringKeyedDictionary else { break }
            call.reply()
            show(id, details)
            return
        case (LocalAuthPrompt.agentInterface?, LocalAuthPrompt.AgentMethod.updatePrompt, "ss"):
            guard let id = arguments[0].string, let status = arguments[1].string else { break }
            call.reply()
            Output.line("update \(id) \(status)")
            windows[id]?.update(status)
            return
        case (LocalAuthPrompt.agentInterface?, LocalAuthPrompt.AgentMethod.closePrompt, "ss"):
            guard let id = arguments[0].string, let outcome = arguments[1].string else { break }
            call.reply()
            Output.line("close \(id) \(outcome)")
            windows.removeValue(forKey: id)?.finish(outcome)
            return
        case ("org.freedesktop.DBus.Introspectable"?, "Introspect", ""):
            return call.reply([.string(Self.introspection)])
        default:
            break
        }
        call.fail(DBusError(.unknownMethod, "no method \(call.member)(\(call.signature)) here"))
    }

    private func show(_ id: String, _ details: [String: DBusValue]) {
        let sheet = PromptWindow.Sheet(details)
        Output.line("show \(id) program=\(sheet.program ?? "") app-name=\(sheet.appName ?? "") reason=\(sheet.reason)")
        Output.line("headline \(id) \(sheet.headline)")
        windows.removeValue(forKey: id)?.finish(LocalAuthPrompt.Outcome.cancelled.rawValue)
        windows[id] = PromptWindow(id: id, sheet: sheet) { [weak self] answer in
            self?.answer(id, answer)
        }
    }

    /// The person's choice goes to the service; the window closes at once.
    private func answer(_ id: String, _ answer: LocalAuthPrompt.Answer) {
        Output.line("answer \(id) \(answer.rawValue)")
        windows.removeValue(forKey: id)?.finish(LocalAuthPrompt.Outcome.cancelled.rawValue)
        Task {
            do throws(DBusError) {
                _ = try await bus.call(destination: LocalAuthBus.serviceName, path: ObjectPath(stringLiteral: LocalAuthBus.objectPath),
                                       interface: LocalAuthBus.interface, member: LocalAuthPrompt.ServiceMethod.promptAnswer,
                                       arguments: [.string(id), .string(answer.rawValue)])
            } catch {
                Output.line("answer \(id) refused: \(error.name.rawValue): \(error.message)")
            }
        }
    }

    static let introspection = """
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
        <node>
          <interface name="org.example.LocalAuth.PromptAgent">
            <method name="ShowPrompt"><arg name="prompt_id" type="s" direction="in"/><arg name="details" type="a{sv}" direction="in"/></method>
            <method name="UpdatePrompt"><arg name="prompt_id" type="s" direction="in"/><arg name="status" type="s" direction="in"/></method>
            <method name="ClosePrompt"><arg name="prompt_id" type="s" direction="in"/><arg name="outcome" type="s" direction="in"/></method>
          </interface>
        </node>
        """
}

/// One line per event on stdout, flushed at once (the tests and the journal read it).
enum Output {
    static func line(_ text: String) {
        let oneLine = String(text.map { $0 == "\n" ? " " : $0 })
        write(1, "localauth-prompt: " + oneLine + "\n")
    }

    static func error(_ text: String) {
        write(2, "localauth-prompt: " + text + "\n")
    }

    private static func write(_ fd: Int32, _ text: String) {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if written <= 0 { return }
            offset += written
        }
    }
}
