import DBusCore
import LocalAuthShared

/// The contract's errors as `DBusError`s.
enum ServiceErrors {
    static func la(_ code: LocalAuthErrorCode, _ message: String) -> DBusError {
        DBusError(DBusError.Name(rawValue: code.dbusName), message)
    }
    static func named(_ name: String, _ message: String) -> DBusError {
        DBusError(DBusError.Name(rawValue: name), message)
    }
    static func invalidArgs(_ message: String) -> DBusError { DBusError(.invalidArgs, message) }
    static func limit(_ message: String) -> DBusError { named(LocalAuthServiceError.limitExceeded, message) }

    /// A caller's argument as it may appear in an error message: at most
    /// `echoedArgumentBytes`, so a 1 MiB argument never becomes a 1 MiB reply.
    static func echo(_ argument: String) -> String {
        guard argument.utf8.count > ServiceLimits.echoedArgumentBytes else { return argument }
        var kept = ""
        for character in argument {
            guard kept.utf8.count + String(character).utf8.count <= ServiceLimits.echoedArgumentBytes else { break }
            kept.append(character)
        }
        return kept + "… (\(argument.utf8.count) bytes)"
    }
    static func permissionDenied(_ message: String) -> DBusError {
        named(LocalAuthServiceError.permissionDenied, message)
    }
    static let noReader = la(.biometryNotAvailable, "no fingerprint reader is available")
}
