import LocalAuthShared

/// One decision about a finger, as it goes to the journal (docs/HISTORY.md):
/// what was decided, for whom, asked by which program, through which
/// context and reader. Pure: built by `ApprovalHistory`, written by
/// `JournalWriter`, read back by `localauthctl history`.
struct HistoryEntry: Equatable, Sendable {
    typealias Outcome = LocalAuthHistory.Outcome
    typealias Context = LocalAuthHistory.Context
    typealias Field = LocalAuthHistory.Field

    var outcome: Outcome
    var context: Context
    /// The method the decision answered (EvaluatePolicy, VerifyUser, AuthorizeRight, ReleaseLoginSecret, VerifyStart).
    var method: String
    /// Who asked, as the service proved it (CallerIdentity.program); nil: unreadable.
    var program: String?
    /// What the caller says it is: never proof, shown as declared.
    var declaredName: String? = nil
    /// Whose finger; nil: no such user (a refused VerifyUser names any string).
    var userUID: UInt32?
    var callerUID: UInt32
    var pamService: String? = nil
    var right: String? = nil
    var reader: String? = nil
    /// The contract's error name (or fprintd's final status) when not granted.
    var error: String? = nil

    /// The journal's fields, in a fixed order: the trusted ones (_PID, _UID,
    /// the time) journald adds itself.
    var fields: [(name: String, value: String)] {
        var fields: [(String, String)] = [
            ("MESSAGE_ID", outcome.messageID),
            ("MESSAGE", message),
            ("PRIORITY", outcome == .refused || outcome == .lockedOut ? "5" : "6"),
            ("SYSLOG_IDENTIFIER", "localauthd"),
            (Field.outcome, outcome.rawValue),
            (Field.context, context.rawValue),
            (Field.method, method),
            (Field.callerUID, String(callerUID)),
        ]
        if let userUID { fields.append((Field.userUID, String(userUID))) }
        if let program { fields.append((Field.program, program)) }
        if let declaredName { fields.append((Field.declaredName, declaredName)) }
        if let pamService { fields.append((Field.pamService, pamService)) }
        if let right { fields.append((Field.right, right)) }
        if let reader { fields.append((Field.reader, reader)) }
        if let error { fields.append((Field.error, error)) }
        return fields
    }

    /// The line a person reads in `journalctl`: the same facts in words.
    var message: String {
        let whose = userUID.map { "uid \($0)" } ?? "an unknown user"
        let asker = program ?? "an unidentified program"
        var text = "fingerprint of \(whose) \(outcome.rawValue) for \(asker) (\(context.rawValue)"
        if let pamService { text += ": \(pamService)" }
        if let declaredName { text += ", declared \"\(declaredName)\"" }
        text += ")"
        if let error { text += ": \(error)" }
        return text
    }

    /// journald's native protocol (systemd's "Native Journal Protocol"): one
    /// datagram, `NAME=value\n` per field; a value with a newline in the
    /// binary form, `NAME\n`, its length as 64-bit little-endian, the bytes,
    /// `\n`, so that no value a caller declared can add a field of its own.
    var datagram: [UInt8] {
        var bytes: [UInt8] = []
        for (name, value) in fields {
            let text = Array(value.utf8)
            if text.contains(UInt8(ascii: "\n")) {
                bytes += Array(name.utf8) + [UInt8(ascii: "\n")]
                var length = UInt64(text.count).littleEndian
                withUnsafeBytes(of: &length) { bytes += $0 }
                bytes += text + [UInt8(ascii: "\n")]
            } else {
                bytes += Array(name.utf8) + [UInt8(ascii: "=")] + text + [UInt8(ascii: "\n")]
            }
        }
        return bytes
    }

    /// Where there is no journald (the rig, a service run by hand): one line
    /// on stderr with the same fields, each `NAME="value"` (`"`, `\` and
    /// control characters escaped), after journald's priority prefix.
    var stderrLine: String {
        let pairs = fields.filter { $0.name != "PRIORITY" }.map { "\($0.name)=\"\(Self.escaped($0.value))\"" }
        let priority = fields.first { $0.name == "PRIORITY" }?.value ?? "6"
        return "<\(priority)>history: " + pairs.joined(separator: " ")
    }

    static func escaped(_ value: String) -> String {
        var out = ""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case _ where scalar.value < 0x20 || scalar.value == 0x7f: out += "\\x" + String(scalar.value, radix: 16)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}

extension HistoryEntry {
    /// The outcome of an answered call: nil error is granted; otherwise why
    /// it ended (its interruption: a timeout is not a cancel) before what was thrown.
    static func outcome(error: ServiceError?, interruption: Interruption?) -> Outcome {
        guard let error else { return .granted }
        switch interruption {
        case .timedOut?, .queueTimedOut?: return .timedOut
        case .notAtTheReader?: return .notAtTheReader
        case .appCancelled?, .userCancelled?, .userFallback?, .superseded?, .callerVanished?, .serviceStopping?,
            .readerRemoved?, .systemSleeping?, .lidClosed?:
            return .cancelled
        case nil: break
        }
        switch error.kind {
        case .la(.authenticationFailed): return .refused
        case .la(.biometryLockout): return .lockedOut
        case .notAtTheReader: return .notAtTheReader
        case .la(.userCancel), .la(.appCancel), .la(.systemCancel), .la(.userFallback): return .cancelled
        default: return .unavailable
        }
    }
}
