import DBusCore
import LocalAuthShared

// Wiring only: the service's callers and bus as the Prompt component's
// seams, and the evaluation's hooks on the service, kept for
// Evaluations.swift (the integrator rewires them to the evaluator).

@ServiceActor
final class ServicePromptSeams: PromptSeams {
    /// The service outlives the component that alone holds this adapter
    /// (unowned(unsafe): a checked `unowned` load takes the side table's slow
    /// retain and release on every call; see ServiceEvaluatorWiring).
    private unowned(unsafe) let service: LocalAuthService

    init(_ service: LocalAuthService) { self.service = service }

    func session(of caller: CallerRecord) async -> LoginSession { await service.callers.session(caller) }
    func knownCaller(_ sender: String) -> CallerRecord? { service.callers.known(sender) }
    func program(of caller: CallerRecord) -> String? { service.callers.identity(caller).program }
    func send(to agent: PromptAgents.Agent, _ member: String, _ arguments: [DBusValue]) {
        guard
            let message = try? Message.methodCall(
                destination: agent.sender, path: agent.path,
                interface: LocalAuthPrompt.agentInterface, member: member,
                arguments: arguments)
        else { return }
        service.bus.send(message)
    }
}
