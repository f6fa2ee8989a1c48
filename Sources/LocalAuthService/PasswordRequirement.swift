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
