// localauthctl policy: where the fingerprint is enough (docs/POLICY.md).
import Foundation
import LocalAuthentication

let policyHelp = """
          policy show [--user NAME]   where your fingerprint is enough: per context (login,
                                      lock-screen, terminal, admin, apps, app-secrets) what
                                      the machine allows (/etc/localauth/policy.conf), what
                                      you chose, and the result
          policy set CONTEXT on|off [--user NAME]
                                      off: the finger is not asked for there (the password
                                      is); on: undo your own off. Never looser than the
                                      machine allows. --user: root, for another account
    """

func policy(_ arguments: ArraySlice<String>) async -> Int32 {
    var arguments = arguments
    guard let verb = arguments.popFirst() else { usageError("policy needs show or set") }
    var user: String?
    var words: [String] = []
    while let argument = arguments.popFirst() {
        switch argument {
        case "--user":
            guard let name = arguments.popFirst(), !name.isEmpty else { usageError("--user needs a user name") }
            user = name
        case _ where argument.hasPrefix("-"):
            usageError("unknown option \(argument)")
        default:
            words.append(argument)
        }
    }
    do {
        switch verb {
        case "show":
            guard words.isEmpty else { usageError("policy show takes no arguments") }
            say("context      machine  yours  fingerprint")
            for context in try await LAContextPolicy.contexts(user: user) {
                let column = { (on: Bool) in on ? "on " : "off" }
                say(
                    context.name.padding(toLength: 13, withPad: " ", startingAt: 0)
                        + column(context.machine) + "      " + column(context.account) + "    "
                        + (context.allowed ? "asked" : "not asked (password)"))
            }
        case "set":
            guard words.count == 2 else { usageError("policy set needs CONTEXT and on or off") }
            guard words[1] == "on" || words[1] == "off" else { usageError("policy set CONTEXT takes on or off, not \(words[1])") }
            try await LAContextPolicy.set(words[0], allowed: words[1] == "on", user: user)
            if words[1] == "on", let context = try await LAContextPolicy.contexts(user: user).first(where: { $0.name == words[0] }),
                !context.machine
            {
                complain("\(words[0]): this machine's policy keeps the fingerprint off there")
            }
        default:
            usageError("unknown policy command \(verb)")
        }
        return Exit.success
    } catch {
        return report(error)
    }
}
