// localauthctl: LocalAuth for people and scripts, over the LocalAuthentication
// library only. Exit status 0 on success; otherwise the error's name goes to
// stderr and the status says what kind of failure it was (see --help).
import Foundation
import LocalAuthentication
import LocalAuthShared

let help = """
    Usage: localauthctl COMMAND [OPTIONS]

    Commands:
      status                      reader, enrolled fingers and whether evaluation can work
      enroll [FINGER] [--replace] enroll a finger (default right-index-finger); the reader
                                  asks for several scans of the same finger ("scan 2 of 5");
                                  --replace enrolls a finger that is already enrolled again
      list                        list the enrolled prints: finger, where each is stored
                                  (localauthd's store, or fprintd's, which is read-only
                                  here unless localauthd serves fprintd's interface),
                                  the reader it was made on, and when
      delete [FINGER]             delete one finger, or all of them without FINGER
                                  (prints in fprintd's store stay: use fprintd-delete)
      reader-prints [--clean]     administrators: the prints kept on the readers' chips
                                  (match-on-chip readers), each owned by an enrolled
                                  record or an orphan; --clean removes the orphans
                                  (never a print a record of any account owns)
      evaluate [--policy biometrics|owner] [--reason TEXT] [--reuse SECONDS]
                                  verify that you are this account's owner; --reuse
                                  accepts your fingerprint match of the last SECONDS
                                  (at most 300) without a new scan
      reset-lockout [--user NAME] administrators: lift the lockout that five failed
                                  matches in a row set (yours, or NAME's), on every
                                  path at once: apps, PAM, fprintd's clients
    \(secretHelp)
    \(keyringHelp)
    \(historyHelp)
    \(policyHelp)
      --help                      this text
      --version                   the release of LocalAuth

    Options of enroll, list and delete:
      --user NAME                 another user's prints (needs the polkit action
                                  org.example.LocalAuth.manage, i.e. an administrator)

    FINGER is one of: \(LAFingerprints.fingerNames.joined(separator: ", ")).

    Exit status: 0 success; 1 authentication failed; 2 usage error;
    3 not available (no reader, no service, not enrolled, not permitted);
    4 locked out; 5 cancelled; 6 other error (already enrolled, not enrolled, …).

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

/// The options a print command accepts, taken out of its arguments.
struct PrintCommandOptions {
    var user: String?
    var replace = false
    var finger: String?
}

func printCommandOptions(_ arguments: ArraySlice<String>, allowReplace: Bool = false,
                         allowFinger: Bool = true) -> PrintCommandOptions {
    var options = PrintCommandOptions()
    var rest = arguments
    while let argument = rest.popFirst() {
        switch argument {
        case "--user":
            guard let name = rest.popFirst(), !name.isEmpty else { usageError("--user needs a user name") }
            options.user = name
        case "--replace" where allowReplace:
            options.replace = true
        case _ where argument.hasPrefix("-"):
            usageError("unknown option \(argument)")
        default:
            guard allowFinger else { usageError("unexpected argument \(argument)") }
            guard LAFingerprints.fingerNames.contains(argument) else { usageError("unknown finger \(argument)") }
            guard options.finger == nil else { usageError("too many arguments") }
            options.finger = argument
        }
    }
    return options
}

/// "right-index-finger" → "right index finger".
func spoken(_ finger: String) -> String { finger.replacingOccurrences(of: "-", with: " ") }

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

func enroll(_ options: PrintCommandOptions) async -> Int32 {
    let name = options.finger ?? "right-index-finger"
    let finger = spoken(name)
    say("Enrolling \(name)\(options.user.map { " for \($0)" } ?? "")\(options.replace ? ", replacing the enrolled print" : "").")
    do {
        try await LAFingerprints.enroll(name, user: options.user, replace: options.replace) { progress in
            let next = "scan \(progress.stage + 1) of \(progress.stages)"
            switch progress.status {
            case "enroll-place-finger":
                say("The reader needs \(progress.stages) scans of the same finger.")
                say("Place your \(finger) on the reader (\(next)).")
            case "enroll-stage-passed" where progress.stage < progress.stages:
                say("Scan \(progress.stage) of \(progress.stages) done. Lift your finger, then place it again (\(next)).")
            case "enroll-stage-passed":
                say("Scan \(progress.stage) of \(progress.stages) done.")
            case "enroll-retry-scan":
                say("That scan was not clear and did not count. Place your \(finger) again (\(next)).")
            case "enroll-swipe-too-short":
                say("The swipe was too short and did not count. Swipe again, slower and longer (\(next)).")
            case "enroll-finger-not-centered":
                say("The finger was not centered and the scan did not count. Place it again, centered (\(next)).")
            case "enroll-remove-and-retry":
                say("Lift your finger off the reader, then place it again (\(next)).")
            case "enroll-too-fast":
                say("That was too fast and did not count. Place your \(finger) again, a little longer (\(next)).")
            case "enroll-duplicate":
                say("The reader already knows this finger (perhaps enrolled as another finger).")
            case "enroll-data-full":
                say("The reader's memory for prints is full.")
            case "enroll-failed":
                say("Enrollment failed.")
            default:
                break
            }
        }
        say("Enrolled \(name)\(options.user.map { " for \($0)" } ?? "").")
        return Exit.success
    } catch let error as LAFingerprints.ServiceError where error.shortName == "AlreadyEnrolled" {
        let status = report(error)
        let user = options.user.map { " --user \($0)" } ?? ""
        complain("use `localauthctl enroll \(name) --replace\(user)` to enroll it again"
                 + (error.message.contains("fprintd") ? "" : ", or `localauthctl delete \(name)\(user)` first"))
        return status
    } catch {
        return report(error)
    }
}

/// reader-prints [--clean]: the chips' prints and their orphans (administrators).
func readerPrints(_ arguments: ArraySlice<String>) async -> Int32 {
    var clean = false
    for argument in arguments {
        guard argument == "--clean" else { usageError("unknown option \(argument)") }
        clean = true
    }
    do {
        if clean {
            let removed = try await LAFingerprints.removeOrphanPrints()
            say("Removed \(removed) print(s) that no enrolled record owned.")
        }
        let prints = try await LAFingerprints.readerPrints()
        guard !prints.isEmpty else {
            say("No prints on any reader's chip.")
            return Exit.success
        }
        var byReader: [String: (owned: Int, orphans: Int)] = [:]
        for print in prints {
            var counts = byReader[print.reader] ?? (0, 0)
            if print.owned { counts.owned += 1 } else { counts.orphans += 1 }
            byReader[print.reader] = counts
        }
        for (reader, counts) in byReader.sorted(by: { $0.key < $1.key }) {
            say("\(reader): \(counts.owned + counts.orphans) print(s) on the chip, \(counts.owned) owned, "
                + "\(counts.orphans) orphan(s)\(counts.orphans > 0 && !clean ? " (remove with --clean)" : "")")
        }
        return Exit.success
    } catch {
        return report(error)
    }
}

func resetLockout(_ options: PrintCommandOptions) async -> Int32 {
    do {
        try await LAFingerprints.resetLockout(user: options.user)
    } catch {
        return report(error)
    }
    say("The fingerprint lockout of \(options.user ?? "your account") is lifted.")
    return Exit.success
}

func list(_ options: PrintCommandOptions) async -> Int32 {
    let prints: [LAFingerprints.EnrolledPrint]
    do {
        prints = try await LAFingerprints.enrolledPrints(user: options.user)
    } catch {
        return report(error)
    }
    if let user = options.user { say("Prints of \(user):") }
    guard !prints.isEmpty else {
        say("No fingers enrolled.")
        return Exit.success
    }
    let withTime = DateFormatter()
    withTime.dateFormat = "yyyy-MM-dd HH:mm"
    let dayOnly = DateFormatter()
    dayOnly.dateFormat = "yyyy-MM-dd"
    dayOnly.timeZone = TimeZone(identifier: "UTC")
    var rows = [["FINGER", "SOURCE", "READER", "ENROLLED", "NOTE"]]
    for print in prints {
        // fprintd's prints are read-only unless localauthd serves fprintd's interface itself (--fprintd).
        let source = print.source == "localauth" ? "localauthd" : print.readOnly ? "\(print.source) (read-only)" : print.source
        let created = print.created.map { print.source == "fprintd" ? dayOnly.string(from: $0) : withTime.string(from: $0) } ?? "-"
        var note = ""
        if !print.inUse {
            let shadowed = prints.contains { $0.inUse && $0.finger == print.finger && $0.reader == print.reader }
            note = shadowed ? "not used: replaced by the localauthd print" : "not used: made on another reader"
        }
        rows.append([print.finger, source, print.reader, created, note])
    }
    if rows.dropFirst().allSatisfy({ $0[4].isEmpty }) { rows = rows.map { Array($0.prefix(4)) } }
    let widths = (0..<rows[0].count).map { column in rows.map { $0[column].count }.max() ?? 0 }
    for row in rows {
        let line = row.enumerated().map { index, cell in
            index == row.count - 1 ? cell : cell.padding(toLength: widths[index] + 2, withPad: " ", startingAt: 0)
        }.joined()
        say(line.trimmingCharacters(in: .whitespaces))
    }
    return Exit.success
}

func delete(_ options: PrintCommandOptions) async -> Int32 {
    do {
        if let name = options.finger {
            try await LAFingerprints.delete(name, user: options.user)
            say("Deleted \(name).")
        } else {
            try await LAFingerprints.deleteAll(user: options.user)
            say("Deleted all fingers in localauthd's store.")
        }
    } catch {
        return report(error)
    }
    // fprintd's prints are only read: say so if some are still offered.
    if let remaining = try? await LAFingerprints.enrolledPrints(user: options.user) {
        let fromFprintd = remaining.filter { $0.readOnly && (options.finger == nil || $0.finger == options.finger) }
        if !fromFprintd.isEmpty {
            say("Still enrolled through fprintd's store, which localauthd does not change: "
                + Set(fromFprintd.map(\.finger)).sorted().joined(separator: ", ") + ". fprintd-delete removes them.")
        }
    }
    return Exit.success
}

func run() async -> Int32 {
    var arguments = CommandLine.arguments.dropFirst()
    guard let command = arguments.popFirst() else { usageError("no command given") }
    switch command {
    case "status":
        return await status()
    case "enroll":
        return await enroll(printCommandOptions(arguments, allowReplace: true))
    case "list":
        return await list(printCommandOptions(arguments, allowFinger: false))
    case "delete":
        return await delete(printCommandOptions(arguments))
    case "reader-prints":
        return await readerPrints(arguments)
    case "reset-lockout":
        return await resetLockout(printCommandOptions(arguments, allowFinger: false))
    case "evaluate":
        return await evaluate(arguments)
    case "secret":
        return await secret(arguments)
    case "keyring":
        return await keyring(arguments)
    case "history":
        return history(arguments)
    case "policy":
        return await policy(arguments)
    case "-h", "--help", "help":
        print(help, terminator: "")
        return Exit.success
    case "--version":
        print("localauthctl \(LocalAuthVersion.string)")
        return Exit.success
    default:
        usageError("unknown command \(command)")
    }
}

exit(await run())
