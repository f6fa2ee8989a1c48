internal import CDBus

// Conversion between `DBusValue` and libdbus's message iterators. The type
// codes are ASCII letters; libdbus's DBUS_TYPE_* macros do not import into Swift.
enum TypeCode {
    static let byte = Int32(UInt8(ascii: "y"))
    static let boolean = Int32(UInt8(ascii: "b"))
    static let int16 = Int32(UInt8(ascii: "n"))
    static let uint16 = Int32(UInt8(ascii: "q"))
    static let int32 = Int32(UInt8(ascii: "i"))
    static let uint32 = Int32(UInt8(ascii: "u"))
    static let int64 = Int32(UInt8(ascii: "x"))
    static let uint64 = Int32(UInt8(ascii: "t"))
    static let double = Int32(UInt8(ascii: "d"))
    static let string = Int32(UInt8(ascii: "s"))
    static let objectPath = Int32(UInt8(ascii: "o"))
    static let signature = Int32(UInt8(ascii: "g"))
    static let unixFD = Int32(UInt8(ascii: "h"))
    static let array = Int32(UInt8(ascii: "a"))
    static let structure = Int32(UInt8(ascii: "r"))
    static let dictEntry = Int32(UInt8(ascii: "e"))
    static let variant = Int32(UInt8(ascii: "v"))
    static let invalid = Int32(0)
}

extension DBusValue {
    /// Appends this value at `iterator`. Throws InvalidArgs for what D-Bus cannot
    /// carry (a string with a NUL byte); libdbus would abort the process instead.
    func append(to iterator: UnsafeMutablePointer<DBusMessageIter>) throws(DBusError) {
        func basic<T: BitwiseCopyable>(_ code: Int32, _ value: T) throws(DBusError) {
            var copy = value
            guard dbus_message_iter_append_basic(iterator, code, &copy) != 0 else { throw DBusError.outOfMemory }
        }
        func text(_ code: Int32, _ value: String) throws(DBusError) {
            guard !value.utf8.contains(0) else {
                throw DBusError(.invalidArgs, "a D-Bus string cannot contain a NUL character")
            }
            let ok = value.withCString { pointer -> Bool in
                var p: UnsafePointer<CChar>? = pointer
                return dbus_message_iter_append_basic(iterator, code, &p) != 0
            }
            guard ok else { throw DBusError.outOfMemory }
        }
        func container(_ code: Int32, _ contained: String?, _ body: (UnsafeMutablePointer<DBusMessageIter>) throws(DBusError) -> Void) throws(DBusError) {
            var sub = DBusMessageIter()
            let opened: Bool
            if let contained {
                opened = contained.withCString { dbus_message_iter_open_container(iterator, code, $0, &sub) } != 0
            } else {
                opened = dbus_message_iter_open_container(iterator, code, nil, &sub) != 0
            }
            guard opened else { throw DBusError.outOfMemory }
            do {
                try body(&sub)
            } catch {
                dbus_message_iter_abandon_container(iterator, &sub)
                throw error
            }
            guard dbus_message_iter_close_container(iterator, &sub) != 0 else { throw DBusError.outOfMemory }
        }

        switch self {
        case .byte(let v): try basic(TypeCode.byte, v)
        case .boolean(let v): try basic(TypeCode.boolean, dbus_bool_t(v ? 1 : 0))
        case .int16(let v): try basic(TypeCode.int16, v)
        case .uint16(let v): try basic(TypeCode.uint16, v)
        case .int32(let v): try basic(TypeCode.int32, v)
        case .uint32(let v): try basic(TypeCode.uint32, v)
        case .int64(let v): try basic(TypeCode.int64, v)
        case .uint64(let v): try basic(TypeCode.uint64, v)
        case .double(let v): try basic(TypeCode.double, v)
        case .string(let v): try text(TypeCode.string, v)
        case .objectPath(let v): try text(TypeCode.objectPath, v.rawValue)
        case .unixFD(let v):
            guard v >= 0 else { throw DBusError(.invalidArgs, "\(v) is not a file descriptor") }
            // libdbus duplicates the descriptor; ours stays ours to close.
            try basic(TypeCode.unixFD, v)
        case .signature(let v):
            // A signature value must be a list of complete types; `{sv}` alone is not.
            guard v.rawValue.withCString({ dbus_signature_validate($0, nil) }) != 0 else {
                throw DBusError(.invalidArgs, "\(v) is not a complete D-Bus signature")
            }
            try text(TypeCode.signature, v.rawValue)
        case .array(let element, let items):
            guard ("a" + element.rawValue).withCString({ dbus_signature_validate_single($0, nil) }) != 0 else {
                throw DBusError(.invalidArgs, "\(element) is not a single type for an array's elements")
            }
            for item in items where item.signatureText != element.rawValue {
                throw DBusError(.invalidArgs, "array of \(element) holds a value of type \(item.signatureText)")
            }
            try container(TypeCode.array, element.rawValue) { sub throws(DBusError) in
                for item in items { try item.append(to: sub) }
            }
        case .dictEntry(let key, let value):
            try container(TypeCode.dictEntry, nil) { sub throws(DBusError) in
                try key.append(to: sub)
                try value.append(to: sub)
            }
        case .structure(let fields):
            try container(TypeCode.structure, nil) { sub throws(DBusError) in
                for field in fields { try field.append(to: sub) }
            }
        case .variant(let inner):
            guard inner.signatureText.withCString({ dbus_signature_validate_single($0, nil) }) != 0 else {
                throw DBusError(.invalidArgs, "a variant cannot hold a value of type \(inner.signatureText)")
            }
            try container(TypeCode.variant, inner.signatureText) { sub throws(DBusError) in
                try inner.append(to: sub)
            }
        }
    }

    /// Reads the value at `iterator` (which libdbus has already validated).
    /// `takingFileDescriptors`: a unix fd is duplicated by libdbus for us and
    /// returned (the caller owns and must close it); otherwise it is read as
    /// `.unixFD(-1)` and nothing is duplicated.
    static func read(from iterator: UnsafeMutablePointer<DBusMessageIter>,
                     takingFileDescriptors: Bool = false) -> DBusValue? {
        func basic<T: BitwiseCopyable>(_ zero: T) -> T {
            var value = zero
            dbus_message_iter_get_basic(iterator, &value)
            return value
        }
        func text() -> String {
            var pointer: UnsafePointer<CChar>? = nil
            dbus_message_iter_get_basic(iterator, &pointer)
            return pointer.map { String(cString: $0) } ?? ""
        }
        func children() -> [DBusValue] {
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(iterator, &sub)
            var items: [DBusValue] = []
            while dbus_message_iter_get_arg_type(&sub) != TypeCode.invalid {
                if let item = read(from: &sub, takingFileDescriptors: takingFileDescriptors) { items.append(item) }
                dbus_message_iter_next(&sub)
            }
            return items
        }

        switch dbus_message_iter_get_arg_type(iterator) {
        case TypeCode.byte: return .byte(basic(UInt8(0)))
        case TypeCode.boolean: return .boolean(basic(dbus_bool_t(0)) != 0)
        case TypeCode.int16: return .int16(basic(Int16(0)))
        case TypeCode.uint16: return .uint16(basic(UInt16(0)))
        case TypeCode.int32: return .int32(basic(Int32(0)))
        case TypeCode.uint32: return .uint32(basic(UInt32(0)))
        case TypeCode.int64: return .int64(basic(Int64(0)))
        case TypeCode.uint64: return .uint64(basic(UInt64(0)))
        case TypeCode.double: return .double(basic(Double(0)))
        case TypeCode.string: return .string(text())
        case TypeCode.objectPath: return .objectPath(ObjectPath(rawValue: text()) ?? "/")
        case TypeCode.signature: return .signature(Signature(unchecked: text()))
        case TypeCode.array:
            guard let full = dbus_message_iter_get_signature(iterator) else { return nil }
            defer { dbus_free(full) }
            let element = String(String(cString: full).dropFirst())
            return .array(Signature(unchecked: element), children())
        case TypeCode.dictEntry:
            let pair = children()
            guard pair.count == 2 else { return nil }
            return .dictEntry(pair[0], pair[1])
        case TypeCode.structure:
            return .structure(children())
        case TypeCode.variant:
            guard let inner = children().first else { return nil }
            return .variant(inner)
        case TypeCode.unixFD:
            guard takingFileDescriptors else { return .unixFD(-1) }
            // libdbus hands out a new duplicate on every read: owned by the caller.
            return .unixFD(basic(Int32(-1)))
        default:
            return nil
        }
    }
}
