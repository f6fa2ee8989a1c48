/// The names of the D-Bus contract (dbus/org.example.LocalAuth.xml): stable,
/// because tests, scripts and other implementations depend on them.
public enum LocalAuthBus {
    public static let serviceName = "org.example.LocalAuth"
    public static let interface = "org.example.LocalAuth"
    public static let objectPath = "/org/example/LocalAuth"
    public static let errorPrefix = "org.example.LocalAuth.Error."

    public enum Method {
        public static let canEvaluatePolicy = "CanEvaluatePolicy"
        public static let evaluatePolicy = "EvaluatePolicy"
        public static let cancel = "Cancel"
        public static let endEvaluation = "EndEvaluation"
        public static let resetLockout = "ResetLockout"
        public static let getDomainState = "GetDomainState"
        public static let enroll = "Enroll"
        public static let listEnrolledFingers = "ListEnrolledFingers"
        public static let deleteEnrolledFinger = "DeleteEnrolledFinger"
        public static let deleteEnrolledFingers = "DeleteEnrolledFingers"
        // With an `a{sv}` of options (EnrollOption): another user's prints, replacing.
        public static let enrollWithOptions = "EnrollWithOptions"
        public static let listEnrolledPrints = "ListEnrolledPrints"
        public static let deleteEnrolledFingerWithOptions = "DeleteEnrolledFingerWithOptions"
        public static let deleteEnrolledFingersWithOptions = "DeleteEnrolledFingersWithOptions"
        // Apple's LAEnvironment: the caller's state, and changes to it as EnvironmentChanged.
        public static let getEnvironment = "GetEnvironment"
        public static let subscribeEnvironment = "SubscribeEnvironment"
        public static let unsubscribeEnvironment = "UnsubscribeEnvironment"
        // The PAM module's: a user's fingerprint, for a root caller.
        public static let verifyUser = "VerifyUser"
        // Administrators: the prints on the readers' chips, and the orphans' removal.
        public static let listReaderPrints = "ListReaderPrints"
        public static let removeOrphanPrints = "RemoveOrphanPrints"
        // Where the finger is enough (docs/POLICY.md).
        public static let getContextPolicy = "GetContextPolicy"
        public static let setContextPolicy = "SetContextPolicy"
    }

    public enum Signal {
        public static let evaluationStatus = "EvaluationStatus"
        public static let enrollStatus = "EnrollStatus"
        public static let environmentChanged = "EnvironmentChanged"
    }

    /// Keys of the `a{sv}` of GetEnvironment and EnvironmentChanged (Apple's
    /// LAEnvironment.State). Unknown keys may appear later; ignore them.
    public enum EnvironmentKey {
        /// (u) LABiometryType of the hardware: 1 while a reader is present, else 0.
        public static let biometryType = "biometry-type"
        /// (b) the caller's user has prints on the reader that serves them.
        public static let biometryEnrolled = "biometry-enrolled"
        /// (b) biometrics are locked out (failed matches, or the password is
        /// required after boot / the configured period).
        public static let biometryLockedOut = "biometry-locked-out"
        /// (ay) the domain state for this caller's app: changes exactly when
        /// the enrolled set does; differs between apps. Empty without a reader.
        public static let biometryStateHash = "biometry-state-hash"
        /// (b) the built-in reader cannot be touched now (the lid is closed),
        /// or the system is going to sleep.
        public static let builtInSensorInaccessible = "built-in-sensor-inaccessible"
        /// (b) biometrics can be used by this caller now.
        public static let biometryUsable = "biometry-usable"
        /// (b) the account has a password.
        public static let passwordSet = "password-set"
    }

    public enum Property {
        public static let biometryType = "BiometryType"
    }

    /// Keys of EvaluatePolicy's `a{sv}` options.
    public enum Option {
        public static let requestID = "request-id"
        public static let fallbackTitle = "fallback-title"
        public static let cancelTitle = "cancel-title"
        public static let reuseDuration = "reuse-duration"
        public static let interactionNotAllowed = "interaction-not-allowed"
        /// (s) VerifyUser only: the PAM service the module runs in (PAM_SERVICE), for the context policy (docs/POLICY.md) and the history (docs/HISTORY.md).
        public static let pamService = "pam-service"
    }

    /// Keys of the options of EnrollWithOptions, ListEnrolledPrints and
    /// Delete…WithOptions.
    public enum PrintOption {
        /// (s) whose prints: a user name; absent or the caller's own name means the caller.
        public static let user = "user"
        /// (b) EnrollWithOptions: replace a print of that finger instead of refusing.
        public static let replace = "replace"
    }

    /// Keys of each `a{sv}` that ListEnrolledPrints returns.
    public enum PrintKey {
        public static let finger = "finger"          // s
        public static let source = "source"          // s: PrintSource
        public static let driver = "driver"          // s: libfprint driver id
        public static let deviceID = "device-id"     // s: libfprint device id
        public static let created = "created"        // x: Unix seconds (absent when unknown)
        public static let inUse = "in-use"           // b: offered by the reader the service uses for this user
        public static let owned = "owned"            // b: ListReaderPrints: an enrolled record owns this print on the chip
        public static let readOnly = "read-only"     // b: the service does not change this print (fprintd's, without --fprintd)
    }

    /// Longest localized reason, request id or title accepted, in UTF-8 bytes.
    public static let maximumTextLength = 1024
    /// Apple's LATouchIDAuthenticationMaximumAllowableReuseDuration.
    public static let maximumReuseDuration = 300.0
}

/// Apple's LAPolicy raw values, as the service receives them.
public enum PolicyValue: UInt32, Sendable, CaseIterable {
    case deviceOwnerAuthenticationWithBiometrics = 1
    case deviceOwnerAuthentication = 2
}

/// Apple's LABiometryType raw values, as BiometryType reports them.
public enum BiometryKind: UInt32, Sendable {
    case none = 0
    case touchID = 1
    case faceID = 2
    case opticID = 4
}

/// Values of EvaluationStatus's `status` argument: what a prompt should say now.
public enum EvaluationProgress: String, Sendable, CaseIterable {
    case placeFinger = "place-finger"
    case retryScan = "retry-scan"
    case swipeTooShort = "swipe-too-short"
    case fingerNotCentered = "finger-not-centered"
    case removeAndRetry = "remove-and-retry"
    /// The finger moved or touched too fast (libfprint 1.94.7 and later).
    case tooFast = "too-fast"
    case noMatch = "no-match"
    /// Another program (fprintd, the lock screen) holds the reader: the
    /// service tries again until the scan timeout.
    case readerBusy = "reader-busy"
}

/// Values of EnrollStatus's `status` argument.
public enum EnrollProgress: String, Sendable, CaseIterable {
    /// The reader is ready: present the finger (stage 0 of stages).
    case placeFinger = "enroll-place-finger"
    case stagePassed = "enroll-stage-passed"
    case retryScan = "enroll-retry-scan"
    case swipeTooShort = "enroll-swipe-too-short"
    case fingerNotCentered = "enroll-finger-not-centered"
    case removeAndRetry = "enroll-remove-and-retry"
    case tooFast = "enroll-too-fast"
    case completed = "enroll-completed"
    case failed = "enroll-failed"
    case duplicate = "enroll-duplicate"
    case dataFull = "enroll-data-full"
    /// Another program holds the reader; the service tries again.
    case readerBusy = "enroll-reader-busy"
}

/// Where an enrolled print is stored (ListEnrolledPrints' `source`).
public enum PrintSource: String, Sendable, CaseIterable {
    /// localauthd's own store (read-write).
    case localauth = "localauth"
    /// fprintd's store (read-only for localauthd).
    case fprintd = "fprintd"
}

/// The polkit actions (polkit/org.example.LocalAuth.policy; the rights ones
/// in polkit/org.example.LocalAuth.rights.policy).
public enum PolkitAction: String, Sendable, CaseIterable {
    case evaluate = "org.example.LocalAuth.evaluate"
    case authenticateOwner = "org.example.LocalAuth.authenticate-owner"
    case enroll = "org.example.LocalAuth.enroll"
    case manage = "org.example.LocalAuth.manage"
    case verifyUser = "org.example.LocalAuth.verify-user"
    /// Changing the caller's own fingerprint policy (SetContextPolicy, docs/POLICY.md).
    case contextPolicy = "org.example.LocalAuth.context-policy"
    // Rights and secrets (docs/RIGHTS.md).
    /// Authorizing the caller's own rights (AuthorizeRight).
    case rightsUse = "org.example.LocalAuth.rights.use"
    /// Saving and removing the caller's own rights.
    case rightsManage = "org.example.LocalAuth.rights.manage"
    // The login secret (docs/KEYRING.md).
    /// Turning the caller's own login secret on and off.
    case keyring = "org.example.LocalAuth.keyring"
    /// The PAM host's side: uid 0 only.
    case loginSecret = "org.example.LocalAuth.login-secret"
}

/// Finger names as fprintd spells them, in libfprint's FpFinger order (1…10).
public enum FingerName: String, Sendable, CaseIterable {
    case leftThumb = "left-thumb"
    case leftIndex = "left-index-finger"
    case leftMiddle = "left-middle-finger"
    case leftRing = "left-ring-finger"
    case leftLittle = "left-little-finger"
    case rightThumb = "right-thumb"
    case rightIndex = "right-index-finger"
    case rightMiddle = "right-middle-finger"
    case rightRing = "right-ring-finger"
    case rightLittle = "right-little-finger"

    /// libfprint's FpFinger value.
    public var fpFinger: UInt32 { UInt32(order) + 1 }

    /// The case's place in FpFinger order. Equality and hashing use it:
    /// RawRepresentable's defaults compare and hash the raw text, which made
    /// the print store's dictionaries by finger cost a preflight ~3,000
    /// instructions (BENCHMARKS.md, issue 25).
    private var order: UInt8 {
        switch self {
        case .leftThumb: 0
        case .leftIndex: 1
        case .leftMiddle: 2
        case .leftRing: 3
        case .leftLittle: 4
        case .rightThumb: 5
        case .rightIndex: 6
        case .rightMiddle: 7
        case .rightRing: 8
        case .rightLittle: 9
        }
    }

    public static func == (left: FingerName, right: FingerName) -> Bool { left.order == right.order }
    public func hash(into hasher: inout Hasher) { hasher.combine(order) }

    public init?(fpFinger: UInt32) {
        guard fpFinger >= 1, fpFinger <= 10 else { return nil }
        self = FingerName.allCases[Int(fpFinger) - 1]
    }
}
