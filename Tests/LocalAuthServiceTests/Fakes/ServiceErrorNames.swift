@testable import LocalAuthService

extension ServiceError {
    /// The error's name as a caller of org.example.LocalAuth receives it (the
    /// tests of components compare with those names; `code` is the kind's own
    /// name, for logs).
    var localAuthName: String { ErrorTable.localAuth.name(of: kind) }
}
