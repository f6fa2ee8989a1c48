/// Which contexts allow the finger: the administrator's file
/// (/etc/localauth/policy.conf) and each person's own choices share this
/// strict format (docs/POLICY.md):
///
///     # comment
///     terminal = off
///     apps = on
///
/// One `context = on|off` per line; blank lines and lines starting with `#`
/// are ignored; a context not named is on. Anything else (an unknown
/// context, a value other than on/off, a context named twice, a line
/// without `=`, a file past `maximumBytes`, bytes that are not UTF-8) is an
/// error, and a file with an error is read as every context off: the safest
/// reading, since a typo may be the one line that meant to turn the finger
/// off somewhere. The password is never affected, so it stays the way in.
/// Pure: unit-tested (ContextPolicyTests).
struct PolicyFile: Equatable, Sendable {
    /// The contexts whose finger is off.
    var off: Set<AuthContext>

    static let allOn = PolicyFile(off: [])
    static let allOff = PolicyFile(off: Set(AuthContext.allCases))

    /// Larger than any valid file (six contexts and comments) needs.
    static let maximumBytes = 4_096

    func allows(_ context: AuthContext) -> Bool { !off.contains(context) }

    /// A file that could not be read: what it was read as and why.
    struct Problem: Error, Equatable {
        /// 1-based; 0: the file as a whole.
        let line: Int
        let message: String
    }

    /// Parses `bytes`; on the first error returns `.failure` (the caller
    /// reads it as `allOff` and logs the problem).
    static func parse(_ bytes: [UInt8]) -> Result<PolicyFile, Problem> {
        guard bytes.count <= maximumBytes else {
            return .failure(Problem(line: 0, message: "the file is larger than \(maximumBytes) bytes"))
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            return .failure(Problem(line: 0, message: "the file is not UTF-8 text"))
        }
        var seen: Set<AuthContext> = []
        var off: Set<AuthContext> = []
        for (index, raw) in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }).enumerated() {
            let number = index + 1
            let line = raw.trimmingBlanks()
            if line.isEmpty || line.hasPrefix("#") { continue }
            let parts = line.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else {
                return .failure(Problem(line: number, message: "expected `context = on|off`"))
            }
            let key = String(parts[0].trimmingBlanks())
            let value = String(parts[1].trimmingBlanks())
            guard let context = AuthContext(rawValue: key) else {
                let known = AuthContext.allCases.map(\.rawValue).joined(separator: ", ")
                return .failure(Problem(line: number, message: "unknown context \"\(echo(key))\" (known: \(known))"))
            }
            guard !seen.contains(context) else {
                return .failure(Problem(line: number, message: "\(key) is set twice"))
            }
            seen.insert(context)
            switch value {
            case "on": break
            case "off": off.insert(context)
            default:
                return .failure(Problem(line: number, message: "\(key) must be on or off, not \"\(echo(value))\""))
            }
        }
        return .success(PolicyFile(off: off))
    }

    /// The file's text: what a person's choices are stored as (every context, in order).
    var text: String {
        AuthContext.allCases.map { "\($0.rawValue) = \(allows($0) ? "on" : "off")\n" }.joined()
    }

    /// The rule of the whole feature: a person may tighten the machine's
    /// policy, never loosen it. A context is on only if both say on.
    static func effective(machine: PolicyFile, person: PolicyFile) -> PolicyFile {
        PolicyFile(off: machine.off.union(person.off))
    }

    /// A bounded, printable echo of what the file said (it is logged).
    private static func echo(_ text: String) -> String {
        let printable = text.unicodeScalars.map { $0.value >= 0x20 && $0.value < 0x7f ? Character($0) : "?" }
        return String(printable.prefix(40))
    }
}

extension Substring {
    /// Without the blanks (spaces, tabs, a CR of a file written on Windows) at either end.
    func trimmingBlanks() -> Substring {
        var text = self
        while let first = text.first, first == " " || first == "\t" || first == "\r" { text = text.dropFirst() }
        while let last = text.last, last == " " || last == "\t" || last == "\r" { text = text.dropLast() }
        return text
    }
}
