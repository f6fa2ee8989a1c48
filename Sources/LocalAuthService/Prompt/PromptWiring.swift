import DBusCore
import LocalAuthShared

// Wiring only: the callers and the bus as the Prompt component's seams.

@ServiceActor
struct ServicePromptSeams: PromptSeams {
    let callers: Callers
    let bus: BusConnection

    func session(of caller: CallerRecord) async -> LoginSession { await callers.session(caller) }
    func knownCaller(_ sender: String) -> CallerRecord? { callers.known(sender) }
    func program(of caller: CallerRecord) -> String? { callers.identity(caller).program }
    func send(to agent: PromptAgents.Agent, _ member: String, _ arguments: [DBusValue]) {
        guard
            let message = try? Message.methodCall(
                destination: agent.sender, path: agent.path,
                interface: LocalAuthPrompt.agentInterface, member: member,
                arguments: arguments)
        else { return }
        bus.send(message)
    }
}
