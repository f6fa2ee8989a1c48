import DBusCore
import LocalAuthShared

/// What the Prompt component asks and tells (PromptAgents.swift): the
/// callers and their logind sessions, and the agents over the bus. The
/// service gives the real ones (PromptWiring.swift); the unit tests give fakes.
@ServiceActor
protocol PromptSeams {
    /// The logind session that stands for the connection (Callers.session).
    func session(of caller: CallerRecord) async -> LoginSession
    /// The record of a connection that has called, if it is still known.
    func knownCaller(_ sender: String) -> CallerRecord?
    /// The trusted program the caller runs, as the service proved it (nil: unknown).
    func program(of caller: CallerRecord) -> String?
    /// A method call to `agent`, sent without waiting for the reply; calls to
    /// one agent arrive in the order they were sent.
    func send(to agent: PromptAgents.Agent, _ member: String, _ arguments: [DBusValue])
}
