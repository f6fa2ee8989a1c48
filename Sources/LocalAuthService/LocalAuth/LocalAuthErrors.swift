import DBusCore
import LocalAuthShared

extension ErrorTable {
    /// org.example.LocalAuth's names for the service's errors
    /// (dbus/org.example.LocalAuth.xml), as `.fprintd` is fprintd's
    /// (Fprintd/FprintdContract.swift). `ContractErrorTableTests` checks it
    /// against the XML.
    static let localAuth = ErrorTable { kind in
        switch kind {
        case .la(let code): code.dbusName
        case .invalidArgs, .noSuchUser: DBusError.Name.invalidArgs.rawValue
        // fprintd's claims and Stops have no counterpart in this contract.
        case .failed, .notClaimed, .nothingInProgress: DBusError.Name.failed.rawValue
        case .permissionDenied: LocalAuthServiceError.permissionDenied
        case .alreadyEnrolled: LocalAuthServiceError.alreadyEnrolled
        case .notEnrolled: LocalAuthServiceError.notEnrolled
        case .busy: LocalAuthServiceError.busy
        case .readOnly: LocalAuthServiceError.readOnly
        case .storageFailed, .readerPrintNotDeleted: LocalAuthServiceError.storageFailed
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
