internal import CDBus
import Glibc

/// A D-Bus message. Immutable once built or received, so it may cross threads
/// (libdbus reference-counts messages atomically).
public final class Message: @unchecked Sendable {
    public enum Kind: Sendable, Equatable {
        case methodCall, methodReturn, error, signal, invalid
    }

    let raw: OpaquePointer

    /// Takes over one reference that the caller owns.
    init(taking raw: OpaquePointer) { self.raw = raw }

    /// Adds a reference of its own.
    init(retaining raw: OpaquePointer) {
        dbus_message_ref(raw)
        self.raw = raw
    }

    deinit { dbus_message_unref(raw) }

    // MARK: Building

    public static func methodCall(
        destination: String?, path: ObjectPath, interface: String?, member: String,
        arguments: [DBusValue] = []
    ) throws(DBusError) -> Message {
        try NameCheck.busName(destination)
        try NameCheck.interface(interface)
        try NameCheck.member(member)
        guard let raw = withOptionalCString(destination, { d in
            withOptionalCString(interface, { i in
                dbus_message_new_method_call(d, path.rawValue, i, member)
            })
        }) else { throw DBusError(.invalidArgs, "invalid destination, interface or member name") }
        let message = Message(taking: raw)
        try message.append(arguments)
        return message
    }

    public static func signal(
        path: ObjectPath, interface: String, member: String, arguments: [DBusValue] = [],
        destination: String? = nil
    ) throws(DBusError) -> Message {
        try NameCheck.interface(interface)
        try NameCheck.member(member)
        try NameCheck.busName(destination)
        guard let raw = dbus_message_new_signal(path.rawValue, interface, member) else {
            throw DBusError(.invalidArgs, "invalid interface or member name")
        }
        let message = Message(taking: raw)
        if let destination, dbus_message_set_destination(raw, destination) == 0 {
            throw DBusError(.invalidArgs, "invalid destination \(destination)")
        }
        try message.append(arguments)
        return message
    }

    /// The reply to this method call carrying `values`.
    public func methodReturn(_ values: [DBusValue] = []) throws(DBusError) -> Message {
        try checkReplyable()
        guard let raw = dbus_message_new_method_return(self.raw) else { throw DBusError.outOfMemory }
        let reply = Message(taking: raw)
        try reply.append(values)
        return reply
    }

    /// The error reply to this method call.
    /// An invalid error name is replaced by org.freedesktop.DBus.Error.Failed.
    /// The longest error text a reply carries; longer ones are cut (valid UTF-8 kept).
    public static let maximumErrorTextBytes = 1024

    public func errorReply(_ error: DBusError) -> Message? {
        guard (try? checkReplyable()) != nil else { return nil }
        var text = String(error.message.map { $0 == "\0" ? " " : $0 })
        // An error is no way to send a caller's argument back at full size:
        // whatever a handler put in the message, the reply stays small.
        if text.utf8.count > Self.maximumErrorTextBytes {
            text = String(decoding: text.utf8.prefix(Self.maximumErrorTextBytes), as: UTF8.self) + "…"
        }
        let name = NameCheck.errorName(error.name.rawValue) ? error.name.rawValue : DBusError.Name.failed.rawValue
        guard let raw = dbus_message_new_error(self.raw, name, text) else { return nil }
        return Message(taking: raw)
    }

    /// libdbus can only reply to a method call that went over a connection.
    private func checkReplyable() throws(DBusError) {
        guard kind == .methodCall, serial != 0 else {
            throw DBusError(.invalidArgs, "only a received method call can be replied to")
        }
    }

    func append(_ values: [DBusValue]) throws(DBusError) {
        guard !values.isEmpty else { return }
        // Check the whole body's type first: libdbus aborts on a malformed one
        // (an empty struct, a dict entry outside an array, too deep nesting).
        let body = values.signature.rawValue
        guard body.withCString({ dbus_signature_validate($0, nil) }) != 0 else {
            throw DBusError(.invalidArgs, "values of type \(body) cannot be sent over D-Bus")
        }
        var iterator = DBusMessageIter()
        dbus_message_iter_init_append(raw, &iterator)
        for value in values { try value.append(to: &iterator) }
    }

    // MARK: Reading

    public var kind: Kind {
        switch dbus_message_get_type(raw) {
        case 1: .methodCall
        case 2: .methodReturn
        case 3: .error
        case 4: .signal
        default: .invalid
        }
    }

    public var sender: String? { dbus_message_get_sender(raw).map { String(cString: $0) } }
    public var destination: String? { dbus_message_get_destination(raw).map { String(cString: $0) } }
    public var path: String? { dbus_message_get_path(raw).map { String(cString: $0) } }
    public var interface: String? { dbus_message_get_interface(raw).map { String(cString: $0) } }
    public var member: String? { dbus_message_get_member(raw).map { String(cString: $0) } }
    public var errorName: String? { dbus_message_get_error_name(raw).map { String(cString: $0) } }
    public var signature: String { dbus_message_get_signature(raw).map { String(cString: $0) } ?? "" }
    public var serial: UInt32 { dbus_message_get_serial(raw) }
    public var replySerial: UInt32 { dbus_message_get_reply_serial(raw) }
    public var expectsReply: Bool { dbus_message_get_no_reply(raw) == 0 }

    /// Whether the message carries unix file descriptors. Received fds stay
    /// open as long as the message lives: a service that takes none should
    /// refuse such a call at once, so that they are closed at once.
    public var carriesFileDescriptors: Bool { dbus_message_contains_unix_fds(raw) != 0 }

    /// The size of the body in bytes, closely estimated without decoding it:
    /// strings by length, arrays by their byte length (O(1) each), other
    /// values at 8 bytes. Lets a service refuse a huge call before the cost of
    /// turning it into `DBusValue`s.
    public var approximateBodySize: Int {
        // Fixed-size arguments only (a preflight's `u`): their size is the
        // signature's, without a walk through the body.
        if let signature = dbus_message_get_signature(raw) {
            var cursor = signature
            var fixed = 0
            var variable = false
            while cursor.pointee != 0 {
                switch UInt8(bitPattern: cursor.pointee) {
                case UInt8(ascii: "s"), UInt8(ascii: "o"), UInt8(ascii: "g"), UInt8(ascii: "a"), UInt8(ascii: "v"),
                     UInt8(ascii: "("), UInt8(ascii: "{"): variable = true
                default: fixed += 8
                }
                cursor += 1
            }
            if !variable { return fixed }
        }
        var iterator = DBusMessageIter()
        guard dbus_message_iter_init(raw, &iterator) != 0 else { return 0 }
        return Self.approximateSize(&iterator, depth: 0)
    }

    private static func approximateSize(_ iterator: UnsafeMutablePointer<DBusMessageIter>, depth: Int) -> Int {
        var total = 0
        repeat {
            let type = dbus_message_iter_get_arg_type(iterator)
            switch type {
            case TypeCode.invalid:
                return total
            case TypeCode.string, TypeCode.objectPath, TypeCode.signature:
                var pointer: UnsafePointer<CChar>? = nil
                dbus_message_iter_get_basic(iterator, &pointer)
                total += 4 + (pointer.map { strlen($0) } ?? 0)
            case TypeCode.array:
                total += 4 + Int(cdbus_iter_array_byte_length(iterator))
            case TypeCode.variant, TypeCode.structure, TypeCode.dictEntry:
                // Containers other than arrays are bounded by the body's
                // nesting limit (64); their contents are measured the same way.
                var inner = DBusMessageIter()
                dbus_message_iter_recurse(iterator, &inner)
                total += 8 + (depth < 64 ? approximateSize(&inner, depth: depth + 1) : 0)
            default:
                total += 8
            }
        } while dbus_message_iter_next(iterator) != 0
        return total
    }

    /// The body's values in order.
    public var arguments: [DBusValue] {
        var iterator = DBusMessageIter()
        guard dbus_message_iter_init(raw, &iterator) != 0 else { return [] }
        var values: [DBusValue] = []
        repeat {
            if let value = DBusValue.read(from: &iterator) { values.append(value) }
        } while dbus_message_iter_next(&iterator) != 0
        return values
    }

    /// The body's values, taking the unix fds it carries: each `.unixFD` is a
    /// new descriptor that the caller owns and must close (every call of this
    /// makes new duplicates). For replies that pass an fd, such as logind's
    /// Inhibit.
    public func takeArguments() -> [DBusValue] {
        var iterator = DBusMessageIter()
        guard dbus_message_iter_init(raw, &iterator) != 0 else { return [] }
        var values: [DBusValue] = []
        repeat {
            if let value = DBusValue.read(from: &iterator, takingFileDescriptors: true) { values.append(value) }
        } while dbus_message_iter_next(&iterator) != 0
        return values
    }

    /// For an error reply: the error it carries.
    public var error: DBusError? {
        guard kind == .error else { return nil }
        let text = arguments.first?.string ?? ""
        return DBusError(DBusError.Name(rawValue: errorName ?? DBusError.Name.failed.rawValue), text)
    }

    /// The reply's values, or its error thrown.
    public func result() throws(DBusError) -> [DBusValue] {
        if let error { throw error }
        return arguments
    }
}

func withOptionalCString<R>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let text else { return body(nil) }
    return text.withCString { body($0) }
}
