// localauthctl: LocalAuth for people and scripts, over the LocalAuthentication
// library only. Exit status 0 on success; otherwise the error's name goes to
// stderr and the status says what kind of failure it was (see --help).
import Foundation
import LocalAuthentication
import Synchronization

let help = """
    Usage: localauthctl COMMAND [OPTIONS]

    Commands:
      status                      reader, enrolled fingers and whether evaluation can work
      enroll [FINGER]             enroll a finger (default right-index-finger)
      list                        list your enrolled fingers
      delete [FINGER]             delete one finger, or all of them without FINGER
      evaluate [--policy biometrics|owner] [--reason TEXT]
                                  verify that you are this account's owner
      --help                      this text

    FINGER is one of: \(LAFingerprints.fingerNames.joined(separator: ", ")).

    Exit status: 0 success; 1 authentication failed; 2 usage error;
    3 not available (no reader, no service, not enrolled, not permitted);
    4 locked out; 5 cancelled; 6 other error.

    """

enum Exit {
    static let success: Int32 = 0
    static let failed: Int32 = 1
    static let usage: Int32 = 2
    static let unavailable: Int32 = 3
    static let lockout: Int32 = 4
    static let cancelled: Int32 = 5
    static let other: Int32 = 6
}

func say(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}

func complain(_ text: String) {
    FileHandle.standardError.write(Data(("localauthctl: " + text + "\n").utf8))
}

func usageError(_ text: String) -> Never {
    complain(text)
    FileHandle.standardError.write(Data(help.utf8))
    exit(Exit.usage)
}

/// Prints the error's name and message, and returns the exit status for it.
func report(_ error: Error) -> Int32 {
    if let error = error as? LAError {
        let name = error.dbusErrorName?.split(separator: ".").last.map(String.init) ?? "\(error.code)"
        complain("\(name): \(error.localizedDescription)")
        switch error.code {
        case .authenticationFailed: return Exit.failed
        case .biometryNotAvailable, .biometryNotEnrolled, .passcodeNotSet, .notInteractive: return Exit.unavailable
        case .biometryLockout: return Exit.lockout
        case .userCancel, .appCancel, .systemCancel, .userFallback: return Exit.cancelled
        default: return Exit.other
        }
    }
    if let error = error as? LAFingerprints.ServiceError {
        complain(error.description)
        switch error.shortName {
        case "PermissionDenied", "ServiceUnknown", "NoServer", "NameHasNoOwner": return Exit.unavailable
        case "InvalidArgs": return Exit.usage
        default: return Exit.other
        }
    }
    complain("\(error)")
    return Exit.other
}

func finger(_ arguments: ArraySlice<String>, default fallback: String?) -> String? {
    guard let name = arguments.first else { return fallback }
    guard LAFingerprints.fingerNames.contains(name) else { usageError("unknown finger \(name)") }
    guard arguments.count == 1 else { usageError("too many arguments") }
    return name
}

func status() async -> Int32 {
    let context = LAContext()
    var error: NSError?
    let canEvaluate = context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error)
    say("reader:      \(context.biometryType == .touchID ? "fingerprint reader" : "none")")
    if let fingers = try? await LAFingerprints.enrolledFingers() {
        say("enrolled:    \(fingers.isEmpty ? "none" : fingers.joined(separator: ", "))")
    }
    if canEvaluate {
        say("biometrics:  ready")
    } else if let error {
        let name = error.userInfo[LAError.dbusErrorNameKey] as? String ?? "code \(error.code)"
        say("biometrics:  not ready (\(name.split(separator: ".").last ?? ""): \(error.localizedDescription))")
    }
    return Exit.success
}

func enroll(_ name: String) async -> Int32 {
    say("Enrolling \(name). Place the finger on the reader, lift it, and repeat when asked.")
    do {
        try await LAFingerprints.enroll(name) { progress in
            switch progress.status {
            case "enroll-stage-passed": say("  stage \(progress.stage) of \(progress.stages) done; lift and place the finger again")
            case "enroll-retry-scan": say("  scan not clear; place the finger again")
            case "enroll-swipe-too-short": say("  swipe too short; try again")
            case "enroll-finger-not-centered": say("  finger not centered; try again")
            case "enroll-remove-and-retry": say("  remove the finger and try again")
            case "enroll-completed": say("  all \(progress.stages) stages done")
            default: break
            }
        }
        say("Enrolled \(name).")
        return Exit.success
    } catch {
        return report(error)
    }
}

func evaluate(_ arguments: ArraySlice<String>) async -> Int32 {
    var policy = LAPolicy.deviceOwnerAuthenticationWithBiometrics
    var reason = "Confirm that you are the owner of this account"
    var rest = arguments
    while let option = rest.popFirst() {
        switch option {
        case "--policy":
            switch rest.popFirst() {
            case "biometrics": policy = .deviceOwnerAuthenticationWithBiometrics
            case "owner": policy = .deviceOwnerAuthentication
            default: usageError("--policy takes biometrics or owner")
            }
        case "--reason":
            guard let text = rest.popFirst() else { usageError("--reason needs a text") }
            reason = text
        default: usageError("unknown option \(option)")
        }
    }
    let context = LAContext()
    context.evaluationStatusHandler = { status in say(status.message) }
    say("\(reason): place your finger on the reader…")
    // The keyboard is this prompt's cancel and fallback buttons, but only while
    // nothing else may ask on this terminal: with the password policy, polkit's
    // text agent may prompt here, and its password must not reach us.
    let keys = isatty(0) != 0 && policy == .deviceOwnerAuthenticationWithBiometrics ? KeyListener(context) : nil
    if keys != nil { say("(type c and Enter to cancel, p and Enter to use your password instead)") }
    do {
        try await context.evaluatePolicy(policy, localizedReason: reason)
        keys?.stop()
        say("Verified.")
        return Exit.success
    } catch let error as LAError where error.code == .userFallback {
        keys?.stop()
        say("Using your password instead.")
        do {
            try await LAContext().evaluatePolicy(.deviceOwnerAuthentication, localizedReason: reason)
            say("Verified.")
            return Exit.success
        } catch {
            return report(error)
        }
    } catch {
        keys?.stop()
        return report(error)
    }
}

/// Reads the terminal on a thread of its own and ends the evaluation as the
/// person's cancel (c) or fallback (p). `stop()` returns only once the thread
/// has stopped reading, so that a password typed next goes to whoever asks.
final class KeyListener: Sendable {
    private let stopped = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    init(_ context: LAContext) {
        Thread { [self] in
            defer { finished.signal() }
            var line: [UInt8] = []
            while !stopped.load(ordering: .acquiring) {
                var descriptor = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
                guard poll(&descriptor, 1, 100) > 0 else { continue }
                var byte: UInt8 = 0
                guard read(0, &byte, 1) == 1 else { return }
                guard byte == UInt8(ascii: "\n") else {
                    line.append(byte)
                    continue
                }
                switch String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespaces).lowercased() {
                case "c": context.endEvaluation(as: .userCancel)
                case "p": context.endEvaluation(as: .userFallback)
                default: break
                }
                line.removeAll()
            }
        }.start()
    }

    func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        finished.wait()
    }
}

func run() async -> Int32 {
    var arguments = CommandLine.arguments.dropFirst()
    guard let command = arguments.popFirst() else { usageError("no command given") }
    switch command {
    case "status":
        return await status()
    case "enroll":
        return await enroll(finger(arguments, default: "right-index-finger")!)
    case "list":
        do {
            let fingers = try await LAFingerprints.enrolledFingers()
            if fingers.isEmpty { say("No fingers enrolled.") }
            for name in fingers { say(name) }
            return Exit.success
        } catch {
            return report(error)
        }
    case "delete":
        do {
            if let name = finger(arguments, default: nil) {
                try await LAFingerprints.delete(name)
                say("Deleted \(name).")
            } else {
                try await LAFingerprints.deleteAll()
                say("Deleted all fingers.")
            }
            return Exit.success
        } catch {
            return report(error)
        }
    case "evaluate":
        return await evaluate(arguments)
    case "-h", "--help", "help":
        print(help, terminator: "")
        return Exit.success
    default:
        usageError("unknown command \(command)")
    }
}

exit(await run())
