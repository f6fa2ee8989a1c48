import DBusCore
import LocalAuthShared

// The arguments of the methods prompt agents call, decoded and validated
// once at arrival (one struct per shape of arguments).

/// RegisterPromptAgent(o agent_path), UnregisterPromptAgent(o agent_path).
struct PromptAgentPathArguments: CallArguments {
    let path: ObjectPath

    init(_ arguments: [DBusValue]) throws(ServiceError) {
        guard arguments.count == 1, case .objectPath(let path) = arguments[0] else {
            throw ServiceErrors.invalidArgs("the method takes (o agent_path)")
        }
        self.path = path
    }
}
typealias RegisterPromptAgentArguments = PromptAgentPathArguments
typealias UnregisterPromptAgentArguments = PromptAgentPathArguments

/// PromptAnswer(s prompt_id, s answer): `answer` is user-cancel or user-fallback.
struct PromptAnswerArguments: CallArguments {
    let promptID: String
    let answer: LocalAuthPrompt.Answer

    init(_ arguments: [DBusValue]) throws(ServiceError) {
        guard arguments.count == 2, let id = arguments[0].string, let text = arguments[1].string else {
            throw ServiceErrors.invalidArgs("PromptAnswer takes (ss)")
        }
        guard let answer = LocalAuthPrompt.Answer(rawValue: text) else {
            throw ServiceErrors.invalidArgs("unknown answer \(ServiceErrors.echo(text)); use user-cancel or user-fallback")
        }
        promptID = id
        self.answer = answer
    }
}
