/// One row per LAError.Code: its Apple raw value and its D-Bus error name.
/// This one table is the mapping both ways; nothing else spells these names.
public enum LocalAuthErrorCode: Int, Sendable, CaseIterable {
    case authenticationFailed = -1
    case userCancel = -2
    case userFallback = -3
    case systemCancel = -4
    case passcodeNotSet = -5
    case biometryNotAvailable = -6
    case biometryNotEnrolled = -7
    case biometryLockout = -8
    case appCancel = -9
    case invalidContext = -10
    case notInteractive = -1004

    /// The last component of the D-Bus error name.
    public var dbusSuffix: String {
        switch self {
        case .authenticationFailed: "AuthenticationFailed"
        case .userCancel: "UserCancel"
        case .userFallback: "UserFallback"
        case .systemCancel: "SystemCancel"
        case .passcodeNotSet: "PasscodeNotSet"
        case .biometryNotAvailable: "BiometryNotAvailable"
        case .biometryNotEnrolled: "BiometryNotEnrolled"
        case .biometryLockout: "BiometryLockout"
        case .appCancel: "AppCancel"
        case .invalidContext: "InvalidContext"
        case .notInteractive: "NotInteractive"
        }
    }

    /// `org.example.LocalAuth.Error.<Name>`.
    public var dbusName: String { LocalAuthBus.errorPrefix + dbusSuffix }

    /// The code for a D-Bus error name, if it is one of ours.
    public init?(dbusName: String) {
        guard dbusName.hasPrefix(LocalAuthBus.errorPrefix) else { return nil }
        let suffix = dbusName.dropFirst(LocalAuthBus.errorPrefix.count)
        guard let code = LocalAuthErrorCode.allCases.first(where: { $0.dbusSuffix == suffix }) else { return nil }
        self = code
    }
}

/// Errors of the contract that are not LAError codes.
public enum LocalAuthServiceError {
    /// polkit said no (or could not be asked).
    public static let permissionDenied = LocalAuthBus.errorPrefix + "PermissionDenied"
    /// Enrollment: the finger is already enrolled and replacing was not asked for.
    public static let alreadyEnrolled = LocalAuthBus.errorPrefix + "AlreadyEnrolled"
    /// Delete: no such print.
    public static let notEnrolled = LocalAuthBus.errorPrefix + "NotEnrolled"
    /// The reader is busy with another enrollment.
    public static let busy = LocalAuthBus.errorPrefix + "Busy"
    /// Delete: the print belongs to a store localauthd only reads (fprintd's).
    public static let readOnly = LocalAuthBus.errorPrefix + "ReadOnly"
    /// Storage failed (disk full, permissions).
    public static let storageFailed = LocalAuthBus.errorPrefix + "StorageFailed"
}
