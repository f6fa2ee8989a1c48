/// One D-Bus value with its type: what goes into a message and comes out of one.
///
/// Dictionaries are what D-Bus makes them: arrays of dictionary entries
/// (`a{sv}` is `.array("{sv}", [.dictEntry(.string(k), .variant(v)), …])`);
/// `DBusValue.dictionary(_:)` builds the common `a{sv}` case.
public indirect enum DBusValue: Hashable, Sendable {
    case byte(UInt8)
    case boolean(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(ObjectPath)
    case signature(Signature)
    /// A unix file descriptor (`h`). Sending one passes a duplicate (libdbus
    /// dups it; the sender keeps and still must close its own). Received
    /// descriptors appear only through `Message.takeArguments()`, whose
    /// caller owns each and must close it (`Posix`/`close`); the ordinary
    /// `Message.arguments` never takes ownership and shows them as
    /// `.unixFD(-1)`, so that decoding a message twice leaks nothing.
    case unixFD(Int32)
    /// An array and the signature of its elements (needed when it is empty).
    case array(Signature, [DBusValue])
    case dictEntry(DBusValue, DBusValue)
    case structure([DBusValue])
    case variant(DBusValue)

    /// The value's own signature.
    public var signature: Signature {
        Signature(unchecked: signatureText)
    }

    var signatureText: String {
        switch self {
        case .byte: "y"
        case .boolean: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .unixFD: "h"
        case .array(let element, _): "a" + element.rawValue
        case .dictEntry(let key, let value): "{" + key.signatureText + value.signatureText + "}"
        case .structure(let fields): "(" + fields.map(\.signatureText).joined() + ")"
        case .variant: "v"
        }
    }

    /// An `a{sv}` dictionary, keys sorted so that equal dictionaries marshal identically.
    public static func dictionary(_ entries: [String: DBusValue]) -> DBusValue {
        .array("{sv}", entries.sorted { $0.key < $1.key }.map { .dictEntry(.string($0.key), .variant($0.value)) })
    }

    /// An `ay` byte array.
    public static func bytes(_ bytes: [UInt8]) -> DBusValue {
        .array("y", bytes.map { .byte($0) })
    }

    /// An `as` string array.
    public static func strings(_ strings: [String]) -> DBusValue {
        .array("s", strings.map { .string($0) })
    }
}

// Typed access for readers of replies and arguments: nil when the type differs.
extension DBusValue {
    public var bool: Bool? { if case .boolean(let v) = self { v } else { nil } }
    public var uint32: UInt32? { if case .uint32(let v) = self { v } else { nil } }
    public var int32: Int32? { if case .int32(let v) = self { v } else { nil } }
    public var double: Double? { if case .double(let v) = self { v } else { nil } }
    public var string: String? { if case .string(let v) = self { v } else { nil } }
    public var fileDescriptor: Int32? { if case .unixFD(let v) = self { v } else { nil } }

    /// The value inside a variant, or the value itself.
    public var unwrapped: DBusValue { if case .variant(let v) = self { v.unwrapped } else { self } }

    public var stringArray: [String]? {
        guard case .array(_, let items) = self else { return nil }
        var result: [String] = []
        for item in items {
            guard let s = item.string else { return nil }
            result.append(s)
        }
        return result
    }

    public var byteArray: [UInt8]? {
        guard case .array(_, let items) = self else { return nil }
        var result: [UInt8] = []
        result.reserveCapacity(items.count)
        for item in items {
            guard case .byte(let b) = item else { return nil }
            result.append(b)
        }
        return result
    }

    /// The entries of an `a{s…}` dictionary, each value's own variant
    /// unwrapped once: in `a{sv}`, `v(s)` is a string, but `v(v(s))` is a
    /// variant (a wrong type for a typed option), never a string.
    public var stringKeyedDictionary: [String: DBusValue]? {
        guard case .array(_, let items) = self else { return nil }
        var result: [String: DBusValue] = [:]
        for item in items {
            guard case .dictEntry(.string(let key), let value) = item else { return nil }
            if case .variant(let inner) = value { result[key] = inner } else { result[key] = value }
        }
        return result
    }
}

extension Array where Element == DBusValue {
    /// The concatenated signature of a message body.
    public var signature: Signature { Signature(unchecked: map(\.signatureText).joined()) }
}
