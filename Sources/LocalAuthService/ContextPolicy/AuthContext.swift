/// Where a fingerprint is asked for: the contexts a policy can turn the
/// finger off in (docs/POLICY.md). Each call's context is worked out by the
/// service from what it can prove, never from what an app says of itself:
/// the D-Bus method (apps, app secrets), the caller's executable as the
/// kernel names it (`/proc/PID/exe`, pinned by device and inode:
/// Callers/CallerRecord.swift), and, for VerifyUser only, the PAM service
/// name pam_localauth sends, which comes from a root caller (VerifyUser
/// refuses any other) and is compiled into the setuid or root program that
/// runs PAM (sudo, su, polkit-agent-helper-1, gdm's worker).
enum AuthContext: String, CaseIterable, Sendable, Comparable {
    /// A display manager or a console `login`, and the login secret released after it.
    case login
    /// A screen locker's PAM service.
    case lockScreen = "lock-screen"
    /// sudo, su and every other PAM service (run from a terminal, most of them).
    case terminal
    /// polkit's administrator dialogs: the `polkit-1` service in polkit-agent-helper-1.
    case admin
    /// EvaluatePolicy and CanEvaluatePolicy, and fprintd's Verify from any other program.
    case apps
    /// A right's key or secret (AuthorizeRight).
    case appSecrets = "app-secrets"

    static func < (a: AuthContext, b: AuthContext) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }

    /// The PAM services of display managers and the console's `login`.
    static let loginServices: Set<String> = [
        "login", "gdm-password", "gdm-fingerprint", "gdm-smartcard", "gdm-autologin", "lightdm", "lightdm-autologin",
        "lightdm-greeter", "sddm", "sddm-autologin", "sddm-greeter", "greetd", "lxdm", "xdm", "slim", "kdm",
        "cosmic-greeter",
    ]

    /// Screen lockers' PAM services (and their programs' names: most are the same).
    static let lockScreenServices: Set<String> = [
        "gnome-screensaver", "cinnamon-screensaver", "mate-screensaver", "xfce4-screensaver", "budgie-screensaver",
        "xscreensaver", "kde", "kscreenlocker", "swaylock", "i3lock", "hyprlock", "gtklock", "waylock",
        "light-locker", "xlock", "physlock", "xsecurelock",
    ]

    /// Programs that are only ever a terminal's elevation.
    static let terminalPrograms: Set<String> = ["sudo", "sudoedit", "su", "doas"]
    /// The programs that run PAM for a login (pam_fprintd inside them, through fprintd's contract).
    static let loginPrograms: Set<String> = ["login", "gdm-session-worker", "lightdm", "sddm-helper", "greetd"]

    /// The contexts of a VerifyUser call: what the proven program says, and
    /// what the PAM service name says. Both count: the finger is allowed only
    /// if every one of them allows it, so a name that disagrees with the
    /// program can only make the call stricter. No name (a pam_localauth
    /// older than the policy) and no known program: `terminal`.
    static func ofPAM(service: String?, executable: String?) -> Set<AuthContext> {
        var contexts: Set<AuthContext> = []
        let program = executable.map(baseName)
        if program == "polkit-agent-helper-1" { contexts.insert(.admin) }
        if let program, terminalPrograms.contains(program) { contexts.insert(.terminal) }
        if let service {
            if service == "polkit-1" {
                contexts.insert(.admin)
            } else if loginServices.contains(service) {
                contexts.insert(.login)
            } else if lockScreenServices.contains(service) {
                contexts.insert(.lockScreen)
            } else {
                contexts.insert(.terminal)
            }
        }
        if contexts.isEmpty { contexts.insert(.terminal) }
        return contexts
    }

    /// The context of a Verify through fprintd's contract: pam_fprintd runs
    /// inside the PAM host, so the proven program says which; any other
    /// program (GNOME Settings' test, fprintd-verify, an app) is `apps`.
    static func ofFprintdClient(executable: String?) -> AuthContext {
        guard let program = executable.map(baseName) else { return .apps }
        if program == "polkit-agent-helper-1" { return .admin }
        if terminalPrograms.contains(program) { return .terminal }
        if loginPrograms.contains(program) { return .login }
        if lockScreenServices.contains(program) { return .lockScreen }
        return .apps
    }

    private static func baseName(_ path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }
}
