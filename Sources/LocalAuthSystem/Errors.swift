/// The shape every error domain of LocalAuth shares (`DBusError`,
/// `CryptoError`, `RightsError`, `TPMError`): a named code to compare with
/// and a message for people. Codes are open structs with string raw values
/// rather than enums, so that a domain can add codes without breaking anyone
/// who switches on them.
public protocol ErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral
where RawValue == String, StringLiteralType == String {
    init(rawValue: String)
}

extension ErrorCode {
    public init(stringLiteral value: String) { self.init(rawValue: value) }
    public var description: String { rawValue }
}

/// An error of one domain: what to decide on (`code`) and what to log (`message`).
/// Messages never carry secrets, keys or biometric data.
public protocol DomainError: Error, Hashable, Sendable, CustomStringConvertible {
    associatedtype Code: ErrorCode
    var code: Code { get }
    var message: String { get }
}

extension DomainError {
    public var description: String { "\(code.rawValue): \(message)" }
}
