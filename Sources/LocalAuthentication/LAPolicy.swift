/// The kinds of authentication an app can ask for (Apple's `LAPolicy`, same raw values).
public enum LAPolicy: Int, Sendable, CaseIterable {
    /// The owner, by fingerprint. Fails when no finger is enrolled or biometry is locked.
    case deviceOwnerAuthenticationWithBiometrics = 1
    /// The owner, by fingerprint or by the account password as the fallback.
    case deviceOwnerAuthentication = 2
    /// Apple Watch policies: there is no watch on Linux; they fail with `watchNotAvailable`.
    case deviceOwnerAuthenticationWithWatch = 3
    case deviceOwnerAuthenticationWithBiometricsOrWatch = 4
    /// watchOS only; fails with `watchNotAvailable`.
    case deviceOwnerAuthenticationWithWristDetection = 5
}

/// The kind of biometry the device has (Apple's `LABiometryType`, same raw values).
public enum LABiometryType: Int, Sendable, CaseIterable {
    case none = 0
    /// A fingerprint reader (Apple's name for it).
    case touchID = 1
    case faceID = 2
    case opticID = 4

    @available(*, deprecated, renamed: "none")
    public static var LABiometryNone: LABiometryType { .none }
}

/// Apple's maximum for `touchIDAuthenticationAllowableReuseDuration`: 300 seconds.
public let LATouchIDAuthenticationMaximumAllowableReuseDuration: Double = 300
