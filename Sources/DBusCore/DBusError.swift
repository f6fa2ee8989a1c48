internal import CDBus
public import LocalAuthSystem

/// An error as D-Bus carries it: a well-known error name and a message for people.
///
/// A struct rather than an enum so that new names can be added without breaking
/// anyone who switches on them; compare with the named constants in `DBusError.Name`.
public struct DBusError: DomainError {
    public struct Name: ErrorCode {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        public static let failed: Name = "org.freedesktop.DBus.Error.Failed"
        public static let noMemory: Name = "org.freedesktop.DBus.Error.NoMemory"
        public static let serviceUnknown: Name = "org.freedesktop.DBus.Error.ServiceUnknown"
        public static let nameHasNoOwner: Name = "org.freedesktop.DBus.Error.NameHasNoOwner"
        public static let noReply: Name = "org.freedesktop.DBus.Error.NoReply"
        public static let ioError: Name = "org.freedesktop.DBus.Error.IOError"
        public static let badAddress: Name = "org.freedesktop.DBus.Error.BadAddress"
        public static let notSupported: Name = "org.freedesktop.DBus.Error.NotSupported"
        public static let limitsExceeded: Name = "org.freedesktop.DBus.Error.LimitsExceeded"
        public static let accessDenied: Name = "org.freedesktop.DBus.Error.AccessDenied"
        public static let noServer: Name = "org.freedesktop.DBus.Error.NoServer"
        public static let timeout: Name = "org.freedesktop.DBus.Error.Timeout"
        public static let timedOut: Name = "org.freedesktop.DBus.Error.TimedOut"
        public static let disconnected: Name = "org.freedesktop.DBus.Error.Disconnected"
        public static let invalidArgs: Name = "org.freedesktop.DBus.Error.InvalidArgs"
        public static let invalidSignature: Name = "org.freedesktop.DBus.Error.InvalidSignature"
        public static let unknownMethod: Name = "org.freedesktop.DBus.Error.UnknownMethod"
        public static let unknownObject: Name = "org.freedesktop.DBus.Error.UnknownObject"
        public static let unknownInterface: Name = "org.freedesktop.DBus.Error.UnknownInterface"
        public static let unknownProperty: Name = "org.freedesktop.DBus.Error.UnknownProperty"
        public static let propertyReadOnly: Name = "org.freedesktop.DBus.Error.PropertyReadOnly"
    }

    public var name: Name
    public var message: String
    /// The name is this domain's code (`DomainError`).
    public var code: Name { name }

    public init(_ name: Name, _ message: String) {
        self.name = name
        self.message = message
    }


    /// Turns a libdbus error, if set, into a Swift error, and frees it.
    /// Every libdbus call that reports through a `DBusError*` goes through here.
    static func consume(_ error: inout CDBus.DBusError) -> DBusError? {
        guard dbus_error_is_set(&error) != 0 else { return nil }
        defer { dbus_error_free(&error) }
        let name = error.name.map { String(cString: $0) } ?? Name.failed.rawValue
        let message = error.message.map { String(cString: $0) } ?? ""
        return DBusError(Name(rawValue: name), message)
    }

    /// Calls `body` with a fresh libdbus error and throws it if `body` set it.
    static func check<T>(_ body: (UnsafeMutablePointer<CDBus.DBusError>) -> T) throws(DBusError) -> T {
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        let result = body(&error)
        if let failure = consume(&error) { throw failure }
        return result
    }

    static let outOfMemory = DBusError(.noMemory, "libdbus could not allocate memory")
}
