// localauthctl secret: rights and secrets (docs/RIGHTS.md) from the shell.
import Foundation
import Glibc
import LocalAuthentication

let secretHelp = """
      secret store ID [--requirement R] [--app-id ID]
                                  keep the secret read from stdin (at most 64 KiB) as
                                  right ID; R: default (finger or password), biometry,
                                  biometry-current-set, biometry-or-password
      secret load ID [--reason TEXT] [--app-id ID]
                                  after your fingerprint (or password), write the
                                  secret to stdout
      secret list [--app-id ID]   the identifiers of the rights
      secret remove ID [--app-id ID]
                                  remove a right and its secret
                                  (rights belong to an app: --app-id, else
                                  LOCALAUTH_APP_ID, else "localauthctl")
"""

func secret(_ arguments: ArraySlice<String>) async -> Int32 {
    var arguments = arguments
    guard let verb = arguments.popFirst() else { usageError("secret needs store, load, list or remove") }
    var identifier: String?
    var requirement = LAAuthenticationRequirement.default
    var reason = "Unlock a secret"
    while let argument = arguments.popFirst() {
        switch argument {
        case "--app-id":
            guard let id = arguments.popFirst() else { usageError("--app-id needs an id") }
            setenv("LOCALAUTH_APP_ID", id, 1)
        case "--reason":
            guard let text = arguments.popFirst() else { usageError("--reason needs a text") }
            reason = text
        case "--requirement" where verb == "store":
            switch arguments.popFirst() {
            case "default": requirement = .default
            case "biometry": requirement = .biometry
            case "biometry-current-set": requirement = .biometryCurrentSet
            case "biometry-or-password": requirement = .biometry(fallback: .devicePasscode)
            default: usageError("--requirement is default, biometry, biometry-current-set or biometry-or-password")
            }
        case let id where identifier == nil && !id.hasPrefix("--") && verb != "list":
            identifier = id
        default:
            usageError("unexpected argument \(argument)")
        }
    }
    let store = LARightStore.shared
    do {
        switch verb {
        case "store":
            guard let identifier else { usageError("secret store needs an ID") }
            let secret = FileHandle.standardInput.readDataToEndOfFile()
            _ = try await store.saveRight(LARight(requirement: requirement), identifier: identifier, secret: secret)
            complain("stored \(secret.count) bytes as \(identifier)")
        case "load":
            guard let identifier else { usageError("secret load needs an ID") }
            let right = try await store.right(forIdentifier: identifier)
            try await right.authorize(localizedReason: reason)
            let data = try await right.secret.loadData()
            await right.deauthorize()
            FileHandle.standardOutput.write(data)
        case "list":
            for id in try await store.identifiers() { say(id) }
        case "remove":
            guard let identifier else { usageError("secret remove needs an ID") }
            try await store.removeRight(forIdentifier: identifier)
        default:
            usageError("unknown secret command \(verb)")
        }
        return Exit.success
    } catch {
        return report(error)
    }
}
