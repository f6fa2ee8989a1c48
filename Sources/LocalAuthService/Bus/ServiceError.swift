import DBusCore
import LocalAuthShared

/// What the service's components throw: an error of the contract by kind,
/// and a message for the caller. Components decide on `kind` (never on a
/// name or a message); only the router turns it into the wire's
/// `DBusError`, through the one table below (`Kind.contractName`), which
/// `ContractErrorTableTests` checks against dbus/org.example.LocalAuth.xml.
struct ServiceError: DomainError {
    enum Kind: Hashable, Sendable, CaseIterable {
        /// An LAError code: org.example.LocalAuth.Error.<Name> (LocalAuthShared's table).
        case la(LocalAuthErrorCode)
        /// A malformed call: org.freedesktop.DBus.Error.InvalidArgs.
        case invalidArgs
        /// Something below the contract failed (no random bytes, the bus did
        /// not answer): org.freedesktop.DBus.Error.Failed.
        case failed
        // The service's own errors (LocalAuthServiceError).
        case permissionDenied, alreadyEnrolled, notEnrolled, busy, readOnly, storageFailed, limitExceeded
        case readerCoolingDown, notAtTheReader, unprovenSandbox, readerInUse, duplicatePrint, readerStorageFull
        /// The system sheet: another agent already serves this session.
        case promptAgentExists
        // The rights methods' errors (LocalAuthRightsError).
        case rightNotFound, rightInvalidated, notAuthorized, noSecret, accountChanged, tpmNotResponding

        static let allCases: [Kind] =
            LocalAuthErrorCode.allCases.map { .la($0) } + [
                .invalidArgs, .failed,
                .permissionDenied, .alreadyEnrolled, .notEnrolled, .busy, .readOnly, .storageFailed, .limitExceeded,
                .readerCoolingDown, .notAtTheReader, .unprovenSandbox, .readerInUse, .duplicatePrint, .readerStorageFull,
                .promptAgentExists,
                .rightNotFound, .rightInvalidated, .notAuthorized, .noSecret, .accountChanged, .tpmNotResponding,
            ]

        /// The one table: each kind's error name on the wire.
        var contractName: String {
            switch self {
            case .la(let code): code.dbusName
            case .invalidArgs: DBusError.Name.invalidArgs.rawValue
            case .failed: DBusError.Name.failed.rawValue
            case .permissionDenied: LocalAuthServiceError.permissionDenied
            case .alreadyEnrolled: LocalAuthServiceError.alreadyEnrolled
            case .notEnrolled: LocalAuthServiceError.notEnrolled
            case .busy: LocalAuthServiceError.busy
            case .readOnly: LocalAuthServiceError.readOnly
            case .storageFailed: LocalAuthServiceError.storageFailed
            case .limitExceeded: LocalAuthServiceError.limitExceeded
            case .readerCoolingDown: LocalAuthServiceError.readerCoolingDown
            case .notAtTheReader: LocalAuthServiceError.notAtTheReader
            case .unprovenSandbox: LocalAuthServiceError.unprovenSandbox
            case .readerInUse: LocalAuthServiceError.readerInUse
            case .duplicatePrint: LocalAuthServiceError.duplicatePrint
            case .readerStorageFull: LocalAuthServiceError.readerStorageFull
            case .promptAgentExists: LocalAuthPrompt.agentExistsError
            case .rightNotFound: LocalAuthRightsError.rightNotFound
            case .rightInvalidated: LocalAuthRightsError.rightInvalidated
            case .notAuthorized: LocalAuthRightsError.notAuthorized
            case .noSecret: LocalAuthRightsError.noSecret
            case .accountChanged: LocalAuthRightsError.accountChanged
            case .tpmNotResponding: LocalAuthRightsError.tpmNotResponding
            }
        }
    }

    let kind: Kind
    let message: String

    init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// `DomainError`'s code: the name on the wire.
    var code: DBusError.Name { DBusError.Name(rawValue: kind.contractName) }

    /// The error as the caller receives it.
    var dbusError: DBusError { DBusError(code, message) }

    /// An error from the bus below the contract (a call the service made to
    /// logind or the bus driver): Failed, with what the bus said.
    init(bus error: DBusError) {
        // Callers.record's refusal (an exec since the connection was made).
        if error.name == .accessDenied {
            self.init(.permissionDenied, error.message)
            return
        }
        self.init(.failed, "\(error.name.rawValue): \(error.message)")
    }
}

/// The contract's errors, made the same way everywhere.
enum ServiceErrors {
    static func la(_ code: LocalAuthErrorCode, _ message: String) -> ServiceError { ServiceError(.la(code), message) }
    static func invalidArgs(_ message: String) -> ServiceError { ServiceError(.invalidArgs, message) }
    static func limit(_ message: String) -> ServiceError { ServiceError(.limitExceeded, message) }
    static func permissionDenied(_ message: String) -> ServiceError { ServiceError(.permissionDenied, message) }
    static let noReader = la(.biometryNotAvailable, "no fingerprint reader is available")

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
}
