import DBusCore
@testable import LocalAuthService
import LocalAuthShared

/// Callers, their logind sessions and the agents on the bus, as the Prompt
/// component sees them: what a test sets, and a log of what it sent whom.
@ServiceActor
final class FakePromptSeams: PromptSeams {
    /// The logind session standing for each connection (default: none).
    var sessions: [String: LoginSession] = [:]
    /// The connections that have called (evaluations' callers).
    var callers: [String: CallerRecord] = [:]
    private(set) var sent: [(agent: String, member: String, arguments: [DBusValue])] = []

    func session(of caller: CallerRecord) async -> LoginSession { sessions[caller.sender] ?? .none }
    func knownCaller(_ sender: String) -> CallerRecord? { callers[sender] }
    func program(of caller: CallerRecord) -> String? { "/usr/bin/app-of-\(caller.sender)" }
    func send(to agent: PromptAgents.Agent, _ member: String, _ arguments: [DBusValue]) {
        sent.append((agent.sender, member, arguments))
    }

    /// What `agent` was sent, by member.
    func members(sentTo agent: String) -> [String] { sent.filter { $0.agent == agent }.map(\.member) }
    /// The prompt ids `agent` was asked to show.
    func shown(on agent: String) -> [String] {
        sent.filter { $0.agent == agent && $0.member == LocalAuthPrompt.AgentMethod.showPrompt }
            .compactMap { $0.arguments.first?.string }
    }
}
