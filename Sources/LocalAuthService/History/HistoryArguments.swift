import DBusCore
import LocalAuthShared

extension ApprovalHistory {
    /// VerifyUser's `pam-service` option: the PAM service pam_localauth runs
    /// in (a root caller's word, recorded as such). Bounded like every text
    /// of the contract; anything but a string is InvalidArgs.
    nonisolated static func pamService(_ options: DBusValue) throws(ServiceError) -> String? {
        guard let value = options.stringKeyedDictionary?[LocalAuthBus.Option.pamService] else { return nil }
        guard let service = value.string, !service.isEmpty, service.utf8.count <= LocalAuthBus.maximumTextLength else {
            throw ServiceErrors.invalidArgs("\(LocalAuthBus.Option.pamService) must be a string of 1 to \(LocalAuthBus.maximumTextLength) bytes")
        }
        return service
    }
}
