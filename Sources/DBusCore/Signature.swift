internal import CDBus

/// A string with a D-Bus grammar of its own (a signature, an object path),
/// validated on creation: a value of such a type is valid. Each type says
/// what is valid in its `init?(rawValue:)`; a literal, and the text shown
/// for one, work the same for all of them.
public protocol ValidatedDBusString: RawRepresentable, Hashable, Sendable, CustomStringConvertible,
    ExpressibleByStringLiteral
where RawValue == String, StringLiteralType == String {}

extension ValidatedDBusString {
    /// For literals in code: a malformed literal is a programming error.
    public init(stringLiteral value: String) {
        guard let valid = Self(rawValue: value) else { preconditionFailure("invalid D-Bus \(Self.self) literal \(value)") }
        self = valid
    }

    public var description: String { rawValue }
}

/// A D-Bus type signature such as `s`, `a{sv}` or `(ub)`, validated on creation.
public struct Signature: ValidatedDBusString {
    public let rawValue: String

    /// Fails for anything libdbus would refuse as a signature.
    public init?(rawValue: String) {
        guard Signature.isValid(rawValue) else { return nil }
        self.rawValue = rawValue
    }

    init(unchecked value: String) { rawValue = value }

    static func isValid(_ text: String) -> Bool {
        if text.isEmpty { return true }
        // A dictionary entry `{kv}` is valid only as an array's element type,
        // which is where this type also names it.
        if text.hasPrefix("{") {
            return ("a" + text).withCString { dbus_signature_validate_single($0, nil) } != 0
        }
        return text.withCString { dbus_signature_validate($0, nil) } != 0
    }

    /// True for a signature of exactly one complete type.
    public var isSingleCompleteType: Bool {
        rawValue.withCString { dbus_signature_validate_single($0, nil) } != 0
    }
}

/// A D-Bus object path such as `/org/example/LocalAuth`, validated on creation.
public struct ObjectPath: ValidatedDBusString {
    public let rawValue: String

    /// Fails for anything outside the object path grammar.
    public init?(rawValue: String) {
        guard ObjectPath.isValid(rawValue) else { return nil }
        self.rawValue = rawValue
    }

    /// The object path grammar of the D-Bus specification.
    static func isValid(_ path: String) -> Bool {
        let bytes = Array(path.utf8)
        guard bytes.first == UInt8(ascii: "/") else { return false }
        if bytes.count == 1 { return true }
        guard bytes.last != UInt8(ascii: "/") else { return false }
        var previousWasSlash = false
        for byte in bytes.dropFirst() {
            if byte == UInt8(ascii: "/") {
                if previousWasSlash { return false }
                previousWasSlash = true
                continue
            }
            previousWasSlash = false
            let ok = (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A)
                || (byte >= 0x61 && byte <= 0x7A) || byte == UInt8(ascii: "_")
            if !ok { return false }
        }
        return !previousWasSlash
    }

    /// The paths above this one, outermost first: `/a/b` has `/` and `/a`.
    public var ancestors: [ObjectPath] {
        guard rawValue != "/" else { return [] }
        var result: [ObjectPath] = [ObjectPath(stringLiteral: "/")]
        var prefix = ""
        for component in rawValue.split(separator: "/").dropLast() {
            prefix += "/" + component
            result.append(ObjectPath(stringLiteral: prefix))
        }
        return result
    }
}
