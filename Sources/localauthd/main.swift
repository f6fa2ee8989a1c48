// localauthd: the LocalAuth system service. Parses options into a
// Configuration and runs LocalAuthService (Service.swift makes and wires the
// components) on the GLib loop of the main thread until stopped.
import DBusCore
import Glibc
import LocalAuthRights
import LocalAuthService
import LocalAuthShared

let usage = """
    Usage: localauthd [--state-dir DIR] [--idle-timeout SECONDS] [--scan-timeout SECONDS]
                      [--fprintd-store DIR] [--reader DRIVER[/DEVICE_ID]]
                      [--built-in-reader DRIVER[/DEVICE_ID]]... [--external-reader DRIVER[/DEVICE_ID]]...
                      [--require-password-after boot|DURATION]... [--tpm auto|off|TCTI]
                      [--rights-authorization-timeout SECONDS] [--reader-linger SECONDS] [--no-verify-user]
                      [--policy FILE]
                      [--fprintd [-t|--no-timeout]] [--version] [--help]

    Serves org.example.LocalAuth on the system bus (DBUS_SYSTEM_BUS_ADDRESS
    points it at another bus). The state dir defaults to $STATE_DIRECTORY, then
    /var/lib/localauth; an idle timeout of 0 means never exit when idle
    (default 30); the scan timeout bounds each wait for a finger (default 30).
    Prints enrolled with fprintd are read, never written, from --fprintd-store
    (default /var/lib/fprint). --reader uses only that reader (libfprint's
    driver id, and device id); without it each user is served by the first
    reader that has prints of theirs, else the first reader.
    A reader is opened only while an operation needs it (a scan, an
    enrollment) and closed --reader-linger seconds after (default 1, at most
    2), so that fprintd and the lock screen can use it; while another program
    holds it, an operation tries again until its scan timeout.
    An authorized right (docs/RIGHTS.md) stays authorized at most
    --rights-authorization-timeout seconds (default and most 300).

    While the lid is closed (logind's LidClosed, UPower's LidIsClosed) a
    built-in reader is not offered. A reader is built in if the kernel says
    its USB port is "fixed" or cannot say ("unknown", or no USB port at all,
    as libfprint's virtual readers), external if "removable";
    --built-in-reader / --external-reader override that per reader (repeatable).
    --require-password-after boot: biometrics only once the account password
    was given (policy 2) since boot; with a DURATION (seconds, or 30m, 48h,
    7d): within that period. Both may be given. Off by default.
    --tpm: where the keys of rights are kept. auto (default): the TPM behind
    /dev/tpmrm0 when present, else software; off: software; or a tpm2-tss
    TCTI such as device:/dev/tpmrm0 or swtpm:host=127.0.0.1,port=2321.
    A login secret the TPM wrapped is wrapped again by the software machine
    key only with off, never by auto's fallback (docs/KEYRING.md).
    --no-verify-user: refuse VerifyUser (the PAM module's fingerprint) to
    every caller; pam_localauth then falls through to the password.
    --policy: where the finger is enough, the administrator's file (default
    /etc/localauth/policy.conf; docs/POLICY.md), read at start and again on
    SIGHUP (systemctl reload localauthd). No file: every context on.
    --fprintd: also serve fprintd's net.reactivated.Fprint on the same readers,
    prints and lockout (docs/FPRINTD.md); every print is then kept in fprintd's
    layout in the fprintd store, which defaults to the first directory of
    $STATE_DIRECTORY (as fprintd reads it), else /var/lib/fprint; the state dir
    then defaults to the second directory of $STATE_DIRECTORY, else
    /var/lib/localauth. -t / --no-timeout (fprintd's option): --idle-timeout 0.

    """

func writeError(_ text: String) {
    let bytes = Array(text.utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

func fail(_ message: String) -> Never {
    writeError("localauthd: \(message)\n\n\(usage)")
    exit(2)
}

func parse(_ commandLine: [String]) -> Configuration {
    var configuration = Configuration()
    var arguments = commandLine[...]
    var stateDirectoryGiven = false, fprintdStoreGiven = false
    func value(after option: String) -> String {
        guard let value = arguments.popFirst() else { fail("\(option) needs a value") }
        return value
    }
    func seconds(after option: String) -> Double {
        let text = value(after: option)
        guard let seconds = Double(text), seconds.isFinite, seconds >= 0 else {
            fail("\(option): not a number of seconds: \(text)")
        }
        return seconds
    }
    while let argument = arguments.popFirst() {
        switch argument {
        case "--state-dir":
            configuration.stateDirectory = value(after: argument)
            stateDirectoryGiven = true
        case "--fprintd": configuration.fprintd = true
        case "--policy": configuration.policyFile = value(after: argument)
        case "-t", "--no-timeout": configuration.idleTimeout = 0
        case "--idle-timeout": configuration.idleTimeout = seconds(after: argument)
        case "--scan-timeout":
            configuration.scanTimeout = seconds(after: argument)
            if configuration.scanTimeout == 0 { fail("--scan-timeout must be more than 0") }
        case "--fprintd-store":
            configuration.fprintdStore = value(after: argument)
            fprintdStoreGiven = true
        case "--rights-authorization-timeout":
            let limit = seconds(after: argument)
            guard limit > 0, limit <= RightsServiceLimits.authorizationSeconds else {
                fail("--rights-authorization-timeout is more than 0 and at most \(Int(RightsServiceLimits.authorizationSeconds))")
            }
            configuration.rightsAuthorizationTimeout = limit
        case "--reader-linger":
            let linger = seconds(after: argument)
            guard linger <= ServiceLimits.maximumReaderLinger else {
                fail("--reader-linger is at most \(Int(ServiceLimits.maximumReaderLinger)) seconds")
            }
            configuration.readerLinger = linger
        case "--reader":
            let text = value(after: argument)
            guard let selector = ReaderSelector(text) else { fail("--reader takes DRIVER or DRIVER/DEVICE_ID, not \(text)") }
            configuration.reader = selector
        case "--built-in-reader", "--external-reader":
            let text = value(after: argument)
            guard let selector = ReaderSelector(text) else { fail("\(argument) takes DRIVER or DRIVER/DEVICE_ID, not \(text)") }
            if argument == "--built-in-reader" { configuration.builtInReaders.append(selector) }
            else { configuration.externalReaders.append(selector) }
        case "--require-password-after":
            let text = value(after: argument)
            guard configuration.requirePassword(after: text) else {
                fail("--require-password-after takes boot or a duration (seconds, or 30m, 48h, 7d), not \(text)")
            }
        case "--tpm":
            let text = value(after: argument)
            guard let choice = KeyBackendChoice(text) else { fail("--tpm takes auto, off or a TCTI configuration, not \(text)") }
            configuration.keyBackend = choice
        case "--no-verify-user": configuration.verifyUserAllowed = false
        case "-h", "--help":
            print(usage, terminator: "")
            exit(0)
        case "--version":
            print("localauthd \(LocalAuthVersion.string)")
            exit(0)
        default: fail("unknown option \(argument)")
        }
    }
    // As fprintd reads STATE_DIRECTORY: its first directory holds the prints
    // (a unit with StateDirectory=fprint localauth gives both).
    if configuration.fprintd, let raw = getenv("STATE_DIRECTORY"), case let state = String(cString: raw), !state.isEmpty {
        let directories = state.split(separator: ":").map(String.init)
        if !fprintdStoreGiven, let first = directories.first { configuration.fprintdStore = first }
        if !stateDirectoryGiven {
            configuration.stateDirectory = directories.count > 1 ? directories[1] : "/var/lib/localauth"
        }
    }
    return configuration
}

let loop = EventLoop.processDefault
let configured = parse(Array(CommandLine.arguments.dropFirst()))
logKeyBackend(configured.keyBackend)
nonisolated(unsafe) var exitStatus: Int32 = 0

// The loop is also the task's executor preference: see EventLoop. The
// service's own tasks are children of the one task `run` runs in.
Task(executorPreference: loop) { @ServiceActor in
    do {
        try await LocalAuthService.run(configured, stopSignals: [SIGTERM, SIGINT])
    } catch {
        writeError("<3>localauthd: \(error)\n")
        exitStatus = 1
    }
    loop.stop()
}
loop.run()
exit(exitStatus)
