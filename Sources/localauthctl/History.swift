// localauthctl history: the decisions localauthd made about fingers
// (docs/HISTORY.md), read from the system journal with journalctl.
//
// Who sees what: journald lets root and the members of `adm` and
// `systemd-journal` read the system journal, where localauthd's entries are;
// nobody else can read them, with this tool or without. For a member who is
// not root, this tool shows only the entries about their own account (their
// finger asked for, or asked for by their program), matched inside
// journalctl; it is a view for the person, not a wall: journald's groups are
// the wall, and a member can read every entry with journalctl.
import Foundation
import Glibc
import LocalAuthShared

let historyHelp = """
          history [--since TIME] [--limit N] [--json]
                                      the decisions localauthd made about your fingerprint
                                      (root: everyone's), newest first, from the system
                                      journal: when, the outcome, the context, whose finger,
                                      the program that asked, the reader; TIME as
                                      journalctl takes it ("today", "-1h", "2026-12-06
                                      10:00"); N at most 10000 (default 50); --json: one
                                      JSON array for scripts. Needs root or the group
                                      adm or systemd-journal
    """

struct HistoryOptions {
    var since: String?
    var limit = 50
    var json = false
}

func historyOptions(_ arguments: ArraySlice<String>) -> HistoryOptions {
    var options = HistoryOptions()
    var rest = arguments
    while let argument = rest.popFirst() {
        switch argument {
        case "--since":
            guard let time = rest.popFirst(), !time.isEmpty, time.utf8.count <= 64 else { usageError("--since needs a time") }
            options.since = time
        case "--limit":
            guard let text = rest.popFirst(), let limit = Int(text), (1...10_000).contains(limit) else {
                usageError("--limit needs a number from 1 to 10000")
            }
            options.limit = limit
        case "--json":
            options.json = true
        default:
            usageError("unexpected argument \(argument)")
        }
    }
    return options
}

/// Whether this process may read the system journal: root, or a member of
/// the groups journald gives it to (Debian: adm and systemd-journal).
func canReadSystemJournal() -> Bool {
    if geteuid() == 0 { return true }
    let count = getgroups(0, nil)
    var groups = [gid_t](repeating: 0, count: Int(max(count, 0)))
    let found = Int(getgroups(count, &groups))
    let member = Set(groups.prefix(max(found, 0))).union([getegid()])
    return ["adm", "systemd-journal"].contains { name in
        guard let group = getgrnam(name) else { return false }
        return member.contains(group.pointee.gr_gid)
    }
}

/// journalctl's arguments: every outcome's MESSAGE_ID, written by root
/// (`_UID=0`: journald sets it, so no other program's forgery matches), and
/// for a person who is not root, their uid as the finger's or the caller's.
func journalctlArguments(_ options: HistoryOptions, uid: UInt32) -> [String] {
    var arguments = ["--system", "--output=json", "--no-pager", "--reverse", "--lines=\(options.limit)", "--quiet"]
    if let since = options.since { arguments.append("--since=\(since)") }
    let ids = LocalAuthHistory.Outcome.allCases.map { "MESSAGE_ID=\($0.messageID)" } + ["_UID=0"]
    if uid == 0 { return arguments + ids }
    return arguments + ids + ["\(LocalAuthHistory.Field.userUID)=\(uid)", "+"]
        + ids + ["\(LocalAuthHistory.Field.callerUID)=\(uid)"]
}

/// One entry as read back from the journal.
struct HistoryRecord {
    let fields: [String: String]
    /// journald's receive time, microseconds since the epoch.
    var microseconds: UInt64 { UInt64(fields["__REALTIME_TIMESTAMP"] ?? "") ?? 0 }

    subscript(_ field: String) -> String? { fields[field] }

    /// A journalctl JSON line; nil: not an object. Binary or repeated values
    /// (arrays) are dropped: the service writes neither.
    init?(jsonLine: Substring) {
        guard let data = jsonLine.data(using: .utf8),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return nil }
        fields = object.compactMapValues { $0 as? String }
    }

    var time: Date { Date(timeIntervalSince1970: Double(microseconds) / 1_000_000) }

    func userName(_ field: String) -> String? {
        guard let text = self[field], let uid = uid_t(text) else { return nil }
        guard let entry = getpwuid(uid) else { return text }
        return String(cString: entry.pointee.pw_name)
    }

    /// The keys of `--json`, stable for scripts.
    var json: [String: Any] {
        typealias Field = LocalAuthHistory.Field
        var object: [String: Any] = ["time": ISO8601DateFormatter().string(from: time)]
        let names: [(String, String)] = [
            ("outcome", Field.outcome), ("context", Field.context), ("method", Field.method), ("program", Field.program),
            ("declared-name", Field.declaredName), ("pam-service", Field.pamService), ("right", Field.right),
            ("reader", Field.reader), ("error", Field.error),
        ]
        for (key, field) in names { if let value = self[field] { object[key] = value } }
        for (key, field) in [("user-uid", Field.userUID), ("caller-uid", Field.callerUID)] {
            if let value = self[field].flatMap({ Int($0) }) { object[key] = value }
        }
        if let user = userName(Field.userUID) { object["user"] = user }
        return object
    }
}

func history(_ arguments: ArraySlice<String>) -> Int32 {
    let options = historyOptions(arguments)
    guard canReadSystemJournal() else {
        complain(
            "the history is in the system journal, which journald lets only root and the groups adm and "
                + "systemd-journal read: ask an administrator to add you to systemd-journal (docs/HISTORY.md)")
        return Exit.unavailable
    }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/journalctl")
    process.arguments = journalctlArguments(options, uid: getuid())
    let output = Pipe()
    process.standardOutput = output
    do {
        try process.run()
    } catch {
        complain("cannot run journalctl: \(error.localizedDescription)")
        return Exit.unavailable
    }
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        complain("journalctl failed (exit status \(process.terminationStatus))")
        return Exit.other
    }
    let text = String(decoding: data, as: UTF8.self)
    let records = text.split(separator: "\n").compactMap(HistoryRecord.init(jsonLine:))
    if options.json {
        let array = records.map(\.json)
        guard let json = try? JSONSerialization.data(withJSONObject: array, options: [.sortedKeys]) else { return Exit.other }
        say(String(decoding: json, as: UTF8.self))
    } else {
        printHistoryTable(records)
    }
    return Exit.success
}

/// Readable columns, newest first; the program last, as it can be long.
func printHistoryTable(_ records: [HistoryRecord]) {
    typealias Field = LocalAuthHistory.Field
    guard !records.isEmpty else { return say("no decisions recorded") }
    let formatter = DateFormatter()
    formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
    let header = ["TIME", "OUTCOME", "CONTEXT", "USER", "READER", "PROGRAM"]
    let rows = records.map { record -> [String] in
        var context = record[Field.context] ?? "?"
        if let service = record[Field.pamService] { context += ":" + service }
        var program = record[Field.program] ?? "(unidentified)"
        if let declared = record[Field.declaredName] { program += " (says \"\(declared)\")" }
        if let right = record[Field.right] { program += " right \(right)" }
        return [
            formatter.string(from: record.time), record[Field.outcome] ?? "?", context,
            record.userName(Field.userUID) ?? "?", record[Field.reader] ?? "-", program,
        ]
    }
    let widths = (0..<header.count - 1).map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
    for row in [header] + rows {
        let padded = row.enumerated().map { index, cell in
            index < widths.count ? cell.padding(toLength: widths[index], withPad: " ", startingAt: 0) : cell
        }
        say(padded.joined(separator: "  "))
    }
}
