/// The rights and secrets part of the contract (dbus/org.example.LocalAuth.xml,
/// "Rights"): Apple's LARight / LARightStore / LAPersistedRight over D-Bus.
/// Kept apart from Contract.swift so that the two grow without colliding.
public enum LocalAuthRightsBus {
    public enum Method {
        public static let saveRight = "SaveRight"
        public static let removeRight = "RemoveRight"
        public static let removeAllRights = "RemoveAllRights"
        public static let listRights = "ListRights"
        public static let getPublicKey = "GetPublicKey"
        public static let canAuthorizeRight = "CanAuthorizeRight"
        public static let authorizeRight = "AuthorizeRight"
        public static let deauthorize = "Deauthorize"
        public static let loadSecret = "LoadSecret"
        public static let sign = "Sign"
        public static let decrypt = "Decrypt"
        public static let exchangeKeys = "ExchangeKeys"
    }

    /// Keys of the rights methods' `a{sv}` options.
    public enum Option {
        /// (s) the app's own id, for a caller outside a sandbox (a sandboxed
        /// caller's id comes from its sandbox and this is ignored).
        public static let appID = "app-id"
        /// (ay) SaveRight: the secret kept with the right.
        public static let secret = "secret"
        /// (u) ExchangeKeys: bytes to derive (the X9.63 algorithms).
        public static let requestedSize = "requested-size"
        /// (ay) ExchangeKeys: the KDF's shared info (the X9.63 algorithms).
        public static let sharedInfo = "shared-info"
    }

    /// Keys of each `a{sv}` ListRights returns.
    public enum RightKey {
        public static let identifier = "identifier"   // s
        public static let requirement = "requirement" // s: RightRequirementName
        public static let created = "created"         // x: Unix seconds
        public static let publicKey = "public-key"    // ay: 04 ‖ X ‖ Y
        public static let hasSecret = "has-secret"     // b
    }
}

/// SaveRight's `requirement` argument: Apple's LAAuthenticationRequirement.
public enum RightRequirementName: String, Sendable, CaseIterable {
    /// `.default`: a fingerprint or the account password.
    case `default` = "default"
    /// `.biometry`: a fingerprint.
    case biometry = "biometry"
    /// `.biometryCurrentSet`: a fingerprint of the set enrolled at save time;
    /// once the enrolled set changes the right is dead for good.
    case biometryCurrentSet = "biometry-current-set"
    /// `.biometry(fallback: .devicePasscode)`: a fingerprint or the account password.
    case biometryOrPassword = "biometry-or-password"
}

/// Errors of the rights methods that are not LAError codes.
public enum LocalAuthRightsError {
    /// No right of this user and app has that identifier.
    public static let rightNotFound = LocalAuthBus.errorPrefix + "RightNotFound"
    /// A `.biometryCurrentSet` right whose enrolled set changed: dead for good.
    public static let rightInvalidated = LocalAuthBus.errorPrefix + "RightInvalidated"
    /// The authorization handle is unknown, expired, deauthorized, of another
    /// caller, or its right was removed or replaced.
    public static let notAuthorized = LocalAuthBus.errorPrefix + "NotAuthorized"
    /// LoadSecret of a right that was saved without a secret.
    public static let noSecret = LocalAuthBus.errorPrefix + "NoSecret"
    /// The caller's uid has rights saved by another account (deleted, its
    /// uid given to a new one): they are never opened for the new account.
    public static let accountChanged = LocalAuthBus.errorPrefix + "AccountChanged"

    /// A TPM command did not answer within `RightsServiceLimits.tpmCommandSeconds`,
    /// or an earlier one still has not: the TPM is stuck; nothing was changed.
    public static let tpmNotResponding = LocalAuthBus.errorPrefix + "TPMNotResponding"
}

/// What rights cost a caller, beyond `ServiceLimits` (docs/RIGHTS.md, "Limits").
public enum RightsServiceLimits {
    /// SaveRight's body may be this large (a 64 KiB secret, an identifier,
    /// an app id); every other method keeps `ServiceLimits.maximumBodyBytes`.
    public static let saveRightBodyBytes = 64 * 1024 + 4 * 1024
    /// An authorization lasts at most this long (seconds) after AuthorizeRight.
    public static let authorizationSeconds = 300.0
    /// Authorizations one bus connection may hold at once (the oldest is dropped).
    public static let authorizationsPerConnection = 32
    /// Authorizations all connections of one uid may hold at once (LimitExceeded).
    public static let authorizationsPerUser = 256
    /// Authorizations held in all.
    public static let authorizationsInTotal = 4096
    /// Verified rights the service keeps in memory for one uid, and their
    /// bytes (sealed parts included): past either, that uid's oldest go.
    public static let verifiedPerUser = 64
    public static let verifiedBytesPerUser = 1024 * 1024
    /// Verified rights kept in all, and their bytes: past either, the oldest go.
    public static let verifiedInTotal = 1024
    public static let verifiedBytesInTotal = 16 * 1024 * 1024
    /// Longest wait for one TPM command (seconds): then TPMNotResponding.
    public static let tpmCommandSeconds = 10.0
    /// Longest input to Sign, Decrypt (bytes).
    public static let keyOperationInputBytes = 8 * 1024
}
