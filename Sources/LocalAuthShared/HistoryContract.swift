/// The history of approvals (docs/HISTORY.md): every decision the service
/// makes about a finger is one journal entry, found by its MESSAGE_ID and
/// read back by `localauthctl history`. The ids and field names are a
/// contract with whoever queries the journal (journalctl, log collectors):
/// they never change once released, so they live here, shared by the service
/// that writes them and the tool that reads them.
public enum LocalAuthHistory {
    /// How a decision ended: one MESSAGE_ID each (128 bits, written as
    /// journald wants them: 32 lowercase hex digits).
    public enum Outcome: String, CaseIterable, Sendable {
        /// The finger matched (or a reused match, or policy 2's password was accepted).
        case granted
        /// A scan was judged no match.
        case refused
        /// Biometry is locked after too many failures, or this attempt locked it.
        case lockedOut = "locked-out"
        /// The app, the person, the service or the system ended it (Cancel, sleep, a removed reader…).
        case cancelled
        /// The caller's session is not the one in front of the reader (remote, switched away).
        case notAtTheReader = "not-at-the-reader"
        /// No finger in time, or the reader stayed busy with others too long.
        case timedOut = "timed-out"
        /// No scan could be taken: no reader, not enrolled, the password needed first, cooling down, an error.
        case unavailable

        public var messageID: String {
            switch self {
            case .granted: "067d335c13d54715817c74400fabbd95"
            case .refused: "36956ae329cc4697bda8bd2997be5f28"
            case .lockedOut: "26109c33a6724ab6bcd5b0ebfe6a88cd"
            case .cancelled: "a823f46215574bedbf52fab6e5163654"
            case .notAtTheReader: "4eaed02008dc43b8aff4b5c3a75fff95"
            case .timedOut: "bba2629124dd47b0980af2465b9f7b9d"
            case .unavailable: "6f3f1ae15d2b43eaa53aeac31418e246"
            }
        }

        public init?(messageID: String) {
            guard let found = Self.allCases.first(where: { $0.messageID == messageID }) else { return nil }
            self = found
        }
    }

    /// Where the decision was asked for.
    public enum Context: String, Sendable {
        /// org.example.LocalAuth's EvaluatePolicy: an app.
        case app
        /// AuthorizeRight: an app's right (its key or secret).
        case right
        /// VerifyUser from a PAM stack that is not one of the two below (sudo, su, …).
        case pam
        /// VerifyUser from polkit's agent helper (PAM service polkit-1): an administrator dialog.
        case polkit
        /// VerifyUser from a login or lock screen's PAM service (login, gdm-password, lightdm, …).
        case login
        /// ReleaseLoginSecret: the login secret, after a match the service saw.
        case loginSecret = "login-secret"
        /// fprintd's VerifyStart (`localauthd --fprintd`), for any fprintd client (pam_fprintd, GNOME).
        case fprintd
    }

    /// The entry's own fields (journald's are added by journald: _PID, _UID
    /// of the service, the time). Values are plain text; an absent value is
    /// an absent field.
    public enum Field {
        public static let outcome = "LOCALAUTH_OUTCOME"
        public static let context = "LOCALAUTH_CONTEXT"
        /// The D-Bus method the decision answered (EvaluatePolicy, VerifyUser, VerifyStart…).
        public static let method = "LOCALAUTH_METHOD"
        /// Who asked, as the service proved it: a sandbox's app id ("flatpak:…", "snap:…") or the executable's path.
        public static let program = "LOCALAUTH_PROGRAM"
        /// The name the caller declared for itself (`app-name`, a right's `app-id`), not verified.
        public static let declaredName = "LOCALAUTH_DECLARED_NAME"
        /// Whose finger was asked for.
        public static let userUID = "LOCALAUTH_USER_UID"
        /// The caller's uid, from the bus.
        public static let callerUID = "LOCALAUTH_CALLER_UID"
        /// The PAM service name pam_localauth declared (sudo, polkit-1, login…).
        public static let pamService = "LOCALAUTH_PAM_SERVICE"
        /// The right's identifier (AuthorizeRight).
        public static let right = "LOCALAUTH_RIGHT"
        /// The reader, as `driver/device-id`.
        public static let reader = "LOCALAUTH_READER"
        /// The contract's error name when it was not granted (e.g. org.example.LocalAuth.Error.AuthenticationFailed).
        public static let error = "LOCALAUTH_ERROR"
    }

    /// The PAM services of login and lock screens: their VerifyUser is the "login" context.
    public static let loginServices: Set<String> = [
        "login", "gdm-password", "gdm-fingerprint", "lightdm", "lightdm-greeter", "sddm", "sddm-greeter", "greetd",
        "kde", "kscreensaver", "xscreensaver", "gnome-screensaver", "swaylock", "i3lock", "cinnamon-screensaver",
        "mate-screensaver", "xfce4-screensaver", "lxdm",
    ]

    /// The context of a VerifyUser from PAM service `service` (nil: it did not say).
    public static func pamContext(service: String?) -> Context {
        guard let service else { return .pam }
        if service == "polkit-1" { return .polkit }
        return loginServices.contains(service) ? .login : .pam
    }
}
