import LocalAuthRights
import LocalAuthShared

/// How the service runs; parsed from the command line by `localauthd`.
public struct Configuration: Sendable {
    /// Where prints and lockout counts live.
    public var stateDirectory: String
    /// Exit after this many idle seconds; 0 means never.
    public var idleTimeout: Double
    /// Longest wait for a finger within one evaluation or enrollment.
    public var scanTimeout: Double
    /// fprintd's store, read-only (issue: fprintd compatibility).
    public var fprintdStore: String
    /// Failed matches allowed within one evaluation before AuthenticationFailed.
    public var attemptsPerEvaluation: Int
    /// Longest wait for the password of policy 2 (the person types it into
    /// their polkit agent).
    public var passwordTimeout: Double = 120
    /// The one reader to use (`--reader DRIVER[/DEVICE_ID]`); nil: the first
    /// reader with prints of the user, else the first reader.
    public var reader: ReaderSelector?
    /// How long an authorized right stays authorized (docs/RIGHTS.md); at most
    /// `RightsServiceLimits.authorizationSeconds`.
    public var rightsAuthorizationTimeout: Double = RightsServiceLimits.authorizationSeconds
    /// Readers said to be built in (`--built-in-reader`) or external
    /// (`--external-reader`), whatever the kernel says of their USB port.
    public var builtInReaders: [ReaderSelector] = []
    public var externalReaders: [ReaderSelector] = []
    /// `--require-password-after boot|DURATION`: biometrics only once the
    /// password was given since boot and/or within the period. Off by default.
    public var requirePasswordAfterBoot = false
    public var requirePasswordWithin: Double?
    /// `--tpm auto|off|TCTI`: the key backend of rights (docs/TPM.md);
    /// `keyBackend.openProtector(stateDirectory:)` gives the protector.
    public var keyBackend: KeyBackendChoice = .automatic
    /// `--reader-linger SECONDS`: how long a reader stays open after an
    /// operation (0 to `ServiceLimits.maximumReaderLinger`).
    public var readerLinger: Double = ServiceLimits.defaultReaderLinger
    /// `--no-verify-user`: VerifyUser (pam_localauth) is refused for every
    /// caller. The administrator's switch: polkit authorizes root before any
    /// rule runs, so a polkit rule cannot turn VerifyUser off (docs/PAM.md).
    public var verifyUserAllowed = true
    /// `--fprintd`: also serve fprintd's net.reactivated.Fprint, with every
    /// print in fprintd's layout under `fprintdStore` (docs/FPRINTD.md).
    public var fprintd = false
    /// `--policy FILE`: where the finger is enough, machine-wide (docs/POLICY.md);
    /// read at start and on SIGHUP.
    public var policyFile = "/etc/localauth/policy.conf"
    /// How long a verify or enroll through fprintd's interface waits for a
    /// finger (fprintd itself waits for ever; pam_fprintd gives up after 30 s).
    var fprintdScanTimeout: Double { max(scanTimeout, 60) }

    /// Parses one `--require-password-after` value ("boot", "48h", "30m", "2d", seconds).
    public mutating func requirePassword(after text: String) -> Bool {
        var requirement = PasswordRequirement(sinceBoot: requirePasswordAfterBoot,
                                                               within: requirePasswordWithin)
        guard PasswordRequirement.parse(text, into: &requirement) else { return false }
        requirePasswordAfterBoot = requirement.sinceBoot
        requirePasswordWithin = requirement.within
        return true
    }

    var passwordRequirement: PasswordRequirement {
        .init(sinceBoot: requirePasswordAfterBoot, within: requirePasswordWithin)
    }

    public init(stateDirectory: String? = nil, idleTimeout: Double = 30, scanTimeout: Double = 30,
                fprintdStore: String = "/var/lib/fprint", attemptsPerEvaluation: Int = 3) {
        self.stateDirectory = stateDirectory
            ?? Posix.environment("STATE_DIRECTORY")?.split(separator: ":").first.map(String.init)
            ?? "/var/lib/localauth"
        self.idleTimeout = idleTimeout
        self.scanTimeout = scanTimeout
        self.fprintdStore = fprintdStore
        self.attemptsPerEvaluation = attemptsPerEvaluation
    }
}

/// `DRIVER` or `DRIVER/DEVICE_ID`: libfprint's driver id and device id.
public struct ReaderSelector: Sendable, Equatable {
    public let driver: String
    public let deviceID: String?

    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        guard let driver = parts.first, !driver.isEmpty else { return nil }
        if parts.count == 2 && parts[1].isEmpty { return nil }
        self.driver = driver
        deviceID = parts.count == 2 ? parts[1] : nil
    }

    public func matches(_ driver: String, _ deviceID: String) -> Bool {
        driver == self.driver && (self.deviceID == nil || self.deviceID == deviceID)
    }
}

/// `--require-password-after`: the account password before the finger,
/// since boot and/or within a period (docs/SECURITY.md). The configuration
/// parses it; the Environment's password store applies it
/// (EnvironmentRules.passwordNeeded).
struct PasswordRequirement: Sendable, Equatable {
    var sinceBoot = false
    var within: Double?
    var isActive: Bool { sinceBoot || within != nil }

    /// "boot", or a duration: seconds, or a number with s, m, h or d ("48h").
    static func parse(_ text: String, into requirement: inout PasswordRequirement) -> Bool {
        if text == "boot" {
            requirement.sinceBoot = true
            return true
        }
        var number = Substring(text)
        var unit = 1.0
        if let last = text.last, !last.isNumber {
            switch last {
            case "s": unit = 1
            case "m": unit = 60
            case "h": unit = 3600
            case "d": unit = 86_400
            default: return false
            }
            number = number.dropLast()
        }
        guard let value = Double(number), value.isFinite, value > 0 else { return false }
        requirement.within = value * unit
        return true
    }
}
