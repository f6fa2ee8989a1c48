/// The LAError codes the service sends, one case each, named as Apple names
/// the code, and their D-Bus error names: this one table is the mapping both
/// ways; nothing else spells these names. The wire carries names only: Apple's
/// numbers (the contract's XML quotes them) are stated once, in the client
/// library's `LAError.Code` (Apple's public API), whose
/// `init(_: LocalAuthErrorCode)` is an exhaustive switch, so a case added
/// here does not build until the library maps it.
public enum LocalAuthErrorCode: Sendable, CaseIterable {
    case authenticationFailed
    case userCancel
    case userFallback
    case systemCancel
    case passcodeNotSet
    case biometryNotAvailable
    case biometryNotEnrolled
    case biometryLockout
    case appCancel
    case invalidContext
    case notInteractive

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
    /// Storage failed (disk full, permissions); also an evaluation whose
    /// failed match could not be written to the lockout counter.
    public static let storageFailed = LocalAuthBus.errorPrefix + "StorageFailed"
    /// A limit of `ServiceLimits` was reached (the message says which).
    public static let limitExceeded = LocalAuthBus.errorPrefix + "LimitExceeded"
    /// The reader is warm and this user's last wait for a finger timed out
    /// recently: their next wait must come later (the message says when).
    public static let readerCoolingDown = LocalAuthBus.errorPrefix + "ReaderCoolingDown"
    /// The caller cannot be the person at the reader: its logind session (or
    /// its user's display session) is remote (SSH), has no seat, or is not the
    /// active one on its seat. Biometrics are not offered; policy 2
    /// takes the password alone. The library maps it to biometryNotAvailable.
    public static let notAtTheReader = LocalAuthBus.errorPrefix + "NotAtTheReader"
    /// Rights: the caller's cgroup names a Flatpak or snap app, and its
    /// sandbox does not prove it (docs/RIGHTS.md): a host program in a scope
    /// it named itself.
    public static let unprovenSandbox = LocalAuthBus.errorPrefix + "UnprovenSandbox"
    /// Another program (fprintd, a lock screen) held the reader for the
    /// whole of the operation's time limit. Nothing is remembered: the next
    /// call tries again.
    public static let readerInUse = LocalAuthBus.errorPrefix + "ReaderInUse"
    /// Enrollment on a reader that keeps prints on its chip: the chip
    /// already holds this finger (for this account or another; whose is
    /// never said).
    public static let duplicatePrint = LocalAuthBus.errorPrefix + "DuplicatePrint"
    /// Enrollment: the reader's chip is full. An administrator can remove
    /// the prints no enrolled record owns (`localauthctl reader-prints --clean`).
    public static let readerStorageFull = LocalAuthBus.errorPrefix + "ReaderStorageFull"
}

/// What one caller can make the service hold, and for how long
/// (docs/SECURITY.md, "Limits"). Past each, the call fails at once with
/// `LimitExceeded` (or the error named beside it) and nothing changes.
public enum ServiceLimits {
    /// Largest method-call body, in bytes (about: strings and arrays by
    /// length). Our largest legitimate call is a reason and three option
    /// strings of at most 1 KiB each.
    public static let maximumBodyBytes = 16 * 1024
    /// What libdbus may hold of incoming messages not yet released (read
    /// ahead, or kept by a call in flight) before it stops reading the bus
    /// socket. Twice what the registry can keep (`callsInTotal` calls at
    /// `maximumBodyBytes` are 4 MiB; SaveRight's 64 KiB calls are short), so
    /// calls in flight never stall reading; libdbus's own default is 63 MiB,
    /// which lets a few concurrent 30 MiB calls pass the unit's MemoryMax=128M.
    public static let bufferedIncomingBytes = 8 * 1024 * 1024
    /// Unix file descriptors in a call: none of our methods takes one, and a
    /// call carrying any fails with InvalidArgs before it is kept.
    public static let maximumFileDescriptors = 0
    /// Calls in flight (not yet answered) from one bus connection.
    public static let callsPerConnection = 8
    /// Calls in flight from all connections of one uid (root is not limited:
    /// it can stop the service anyway).
    public static let callsPerUser = 16
    /// Calls in flight from everyone.
    public static let callsInTotal = 256
    /// Longest wait for the reader behind other callers, in seconds; then
    /// SystemCancel ("the reader is busy").
    public static let readerQueueWait = 60.0
    /// How long a reader stays open after its last operation (`--reader-linger`),
    /// and the most that may be asked: other programs wait that long for it.
    public static let defaultReaderLinger = 1.0
    public static let maximumReaderLinger = 2.0
    /// While another program holds the reader: the first pause before trying
    /// to open it again, doubled up to the longest.
    public static let readerBusyFirstPause = 0.1
    public static let readerBusyLongestPause = 1.0
    /// After SIGTERM, how long the service waits for its calls to end before
    /// it answers the rest with SystemCancel and exits anyway (a reader that
    /// ignores cancellation must not keep it alive).
    public static let shutdownGrace = 5.0
    /// Connections subscribed to EnvironmentChanged at once, in all.
    public static let environmentSubscribers = 256
    /// Connections of one uid subscribed to EnvironmentChanged at once (root too).
    public static let environmentSubscribersPerUser = 16
    /// Longest part of a caller's argument repeated in an error message, in bytes.
    public static let echoedArgumentBytes = 64
    /// After two waits for a finger of one user timed out in a row on a warm
    /// reader, their next wait can start only this many seconds later
    /// (ReaderCoolingDown), doubling with each further timeout up to the
    /// maximum: one looping app cannot keep the reader too hot for everyone
    /// (libfprint stops a reader after about 3 minutes of use).
    public static let warmReaderFirstBackoff = 30.0
    public static let warmReaderMaximumBackoff = 240.0
    /// A streak of timeouts older than this is forgotten.
    public static let warmReaderStreakMemory = 300.0
}
