import DBusCore
import LocalAuthShared

/// What the service's components throw: an error by kind, and a message for
/// the caller. Components decide on `kind` (never on a name or a message);
/// only the router turns one into the wire's `DBusError`, through the error
/// table of the contract the call came through (`ErrorTable`: one per
/// contract, `.localAuth` in LocalAuth/LocalAuthErrors.swift, `.fprintd` in
/// Fprintd/FprintdContract.swift).
/// `ContractErrorTableTests` checks both against their XML.
struct ServiceError: DomainError {
    enum Kind: Hashable, Sendable, CaseIterable {
        /// An LAError code: org.example.LocalAuth.Error.<Name> (LocalAuthShared's table).
        case la(LocalAuthErrorCode)
        /// A malformed argument of the method (the router answers a wrong
        /// signature or file descriptors itself, with D-Bus's InvalidArgs).
        case invalidArgs
        /// Something below the contract failed (no random bytes, the bus did
        /// not answer).
        case failed
        // The service's own errors (each contract names them in its table).
        case permissionDenied, alreadyEnrolled, notEnrolled, busy, readOnly, storageFailed, limitExceeded
        case readerCoolingDown, notAtTheReader, unprovenSandbox, readerInUse, duplicatePrint, readerStorageFull
        /// The system sheet: another agent already serves this session.
        case promptAgentExists
        // The rights methods' errors.
        case rightNotFound, rightInvalidated, notAuthorized, noSecret, accountChanged, tpmNotResponding
        /// A call names a user who does not exist (looked up only after polkit said yes).
        case noSuchUser
        /// A print could not be deleted from the reader's own storage (its chip).
        case readerPrintNotDeleted
        /// A device operation needs a claim the caller does not hold (fprintd's Claim).
        case notClaimed
        /// A Stop with no operation in progress (fprintd's VerifyStop, EnrollStop).
        case nothingInProgress

        /// Every kind, derived from `Case` (a mirror whose `allCases` the
        /// compiler writes): a new kind breaks the switch in `case` until it
        /// has a `Case` of its own, and then the switch in `kinds(of:)` until
        /// it is listed, so no kind escapes the tables' tests.
        static let allCases: [Kind] = Case.allCases.flatMap(kinds(of:))

        /// The kinds without their associated values.
        enum Case: CaseIterable {
            case la, invalidArgs, failed
            case permissionDenied, alreadyEnrolled, notEnrolled, busy, readOnly, storageFailed, limitExceeded
            case readerCoolingDown, notAtTheReader, unprovenSandbox, readerInUse, duplicatePrint, readerStorageFull
            case promptAgentExists
            case rightNotFound, rightInvalidated, notAuthorized, noSecret, accountChanged, tpmNotResponding
            case noSuchUser, readerPrintNotDeleted, notClaimed, nothingInProgress
        }

        var `case`: Case {
            switch self {
            case .la: .la
            case .invalidArgs: .invalidArgs
            case .failed: .failed
            case .permissionDenied: .permissionDenied
            case .alreadyEnrolled: .alreadyEnrolled
            case .notEnrolled: .notEnrolled
            case .busy: .busy
            case .readOnly: .readOnly
            case .storageFailed: .storageFailed
            case .limitExceeded: .limitExceeded
            case .readerCoolingDown: .readerCoolingDown
            case .notAtTheReader: .notAtTheReader
            case .unprovenSandbox: .unprovenSandbox
            case .readerInUse: .readerInUse
            case .duplicatePrint: .duplicatePrint
            case .readerStorageFull: .readerStorageFull
            case .promptAgentExists: .promptAgentExists
            case .rightNotFound: .rightNotFound
            case .rightInvalidated: .rightInvalidated
            case .notAuthorized: .notAuthorized
            case .noSecret: .noSecret
            case .accountChanged: .accountChanged
            case .tpmNotResponding: .tpmNotResponding
            case .noSuchUser: .noSuchUser
            case .readerPrintNotDeleted: .readerPrintNotDeleted
            case .notClaimed: .notClaimed
            case .nothingInProgress: .nothingInProgress
            }
        }

        /// Its name in logs: the LAError code's, or the kind's own.
        var name: String {
            if case .la(let code) = self { return "LAError.\(code)" }
            return "\(self.case)"
        }

        /// The kinds of one `Case`: every value of its associated value.
        static func kinds(of kindCase: Case) -> [Kind] {
            switch kindCase {
            case .la: LocalAuthErrorCode.allCases.map { .la($0) }
            case .invalidArgs: [.invalidArgs]
            case .failed: [.failed]
            case .permissionDenied: [.permissionDenied]
            case .alreadyEnrolled: [.alreadyEnrolled]
            case .notEnrolled: [.notEnrolled]
            case .busy: [.busy]
            case .readOnly: [.readOnly]
            case .storageFailed: [.storageFailed]
            case .limitExceeded: [.limitExceeded]
            case .readerCoolingDown: [.readerCoolingDown]
            case .notAtTheReader: [.notAtTheReader]
            case .unprovenSandbox: [.unprovenSandbox]
            case .readerInUse: [.readerInUse]
            case .duplicatePrint: [.duplicatePrint]
            case .readerStorageFull: [.readerStorageFull]
            case .promptAgentExists: [.promptAgentExists]
            case .rightNotFound: [.rightNotFound]
            case .rightInvalidated: [.rightInvalidated]
            case .notAuthorized: [.notAuthorized]
            case .noSecret: [.noSecret]
            case .accountChanged: [.accountChanged]
            case .tpmNotResponding: [.tpmNotResponding]
            case .noSuchUser: [.noSuchUser]
            case .readerPrintNotDeleted: [.readerPrintNotDeleted]
            case .notClaimed: [.notClaimed]
            case .nothingInProgress: [.nothingInProgress]
            }
        }
    }

    let kind: Kind
    let message: String

    init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// `DomainError`'s code, for logs: the kind's own name, in no contract's
    /// words ("LAError.systemCancel", "permissionDenied"). A caller gets
    /// `dbusError(_:)`, in the words of the contract it called.
    var code: Code { Code(rawValue: kind.name) }

    /// A kind's name in logs (`code`).
    struct Code: ErrorCode {
        let rawValue: String
        init(rawValue: String) { self.rawValue = rawValue }
    }

    /// The error as a caller of `contract` receives it.
    func dbusError(_ contract: ErrorTable) -> DBusError { DBusError(DBusError.Name(rawValue: contract.name(of: kind)), message) }

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

/// How one contract names the service's errors on the wire: a total function
/// of `ServiceError.Kind` (an exhaustive switch, so a new kind does not
/// compile until every contract names it). Several kinds may share a name
/// (fprintd has ten); a kind a contract never produces still gets the
/// nearest name (`ContractErrorTableTests`).
struct ErrorTable: Sendable {
    let name: @Sendable (ServiceError.Kind) -> String

    func name(of kind: ServiceError.Kind) -> String { name(kind) }
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
