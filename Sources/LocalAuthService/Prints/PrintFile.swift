import LocalAuthShared

/// One enrolled print as localauthd stores it (docs/STORE.md): a short text
/// header with our metadata, then libfprint's serialized print, byte for byte.
///
///     LOCALAUTH-PRINT 1
///     id 3f1c…(32 hex digits, new for every enrollment)
///     uid 1000
///     finger right-index-finger
///     driver virtual_device
///     device-id 0
///     created 1764474000
///     size 69
///     sha256 9b1e…(64 hex digits, of the print bytes)
///     <empty line>
///     <size bytes: fp_print_serialize output, "FP3"…>
///
/// Values are percent-escaped (anything outside `!`…`~`, and `%`). Readers
/// accept the keys in any order and ignore keys they do not know (later
/// versions of format 1 may add some); a different number after the magic is
/// a format this build cannot read. The size and the checksum make a torn or
/// damaged file detectable before libfprint sees it.
struct PrintFile: Equatable, Sendable {
    static let magic = "LOCALAUTH-PRINT"
    static let version = 1
    /// Larger files are not read at all (real prints are a few KiB at most).
    static let maximumSize = 1 << 20

    var id: String
    var uid: UInt32
    var finger: FingerName
    var driver: String
    var deviceID: String
    /// Unix seconds.
    var created: Int64
    /// libfprint's serialized print.
    var print: [UInt8]

    struct FormatError: Error, CustomStringConvertible, Equatable {
        let description: String
        init(_ description: String) { self.description = description }
    }

    func encode() -> [UInt8] {
        let header = [
            "\(Self.magic) \(Self.version)",
            "id \(Escape.value(id))",
            "uid \(uid)",
            "finger \(finger.rawValue)",
            "driver \(Escape.value(driver))",
            "device-id \(Escape.value(deviceID))",
            "created \(created)",
            "size \(print.count)",
            "sha256 \(Hex.encode(Digest.sha256(print)))",
            "", "",
        ].joined(separator: "\n")
        return Array(header.utf8) + print
    }

    static func decode(_ bytes: [UInt8]) throws(FormatError) -> PrintFile {
        guard bytes.count <= maximumSize else { throw FormatError("larger than \(maximumSize) bytes") }
        // The header ends at the first empty line; it is short.
        var lines: [String] = []
        var start = 0
        var bodyStart: Int?
        var index = 0
        while index < bytes.count, index < 4096 {
            if bytes[index] == UInt8(ascii: "\n") {
                if index == start {
                    bodyStart = index + 1
                    break
                }
                lines.append(String(decoding: bytes[start..<index], as: UTF8.self))
                start = index + 1
            }
            index += 1
        }
        guard let first = lines.first, first.hasPrefix(magic + " ") else {
            throw FormatError("not a localauthd print file (no \(magic) header)")
        }
        guard let version = Int(first.dropFirst(magic.count + 1)) else { throw FormatError("unreadable version in \"\(first)\"") }
        guard version == Self.version else { throw FormatError("format version \(version); this localauthd reads version \(Self.version)") }
        guard let bodyStart else { throw FormatError("truncated header") }

        var fields: [String: String] = [:]
        for line in lines.dropFirst() {
            let parts = line.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, !parts[0].isEmpty else { throw FormatError("malformed header line \"\(line)\"") }
            let key = String(parts[0])
            guard fields[key] == nil else { throw FormatError("header key \(key) appears twice") }
            guard let value = Escape.unescape(String(parts[1])) else { throw FormatError("bad escape in \(key)") }
            fields[key] = value
        }
        func field(_ key: String) throws(FormatError) -> String {
            guard let value = fields[key] else { throw FormatError("header has no \(key)") }
            return value
        }
        let id = try field("id")
        guard id.utf8.count == 32, id.utf8.allSatisfy({ Hex.digit($0) != nil }) else { throw FormatError("bad id") }
        guard let uid = UInt32(try field("uid")) else { throw FormatError("bad uid") }
        guard let finger = FingerName(rawValue: try field("finger")) else { throw FormatError("unknown finger") }
        let driver = try field("driver"), deviceID = try field("device-id")
        guard !driver.isEmpty else { throw FormatError("empty driver") }
        guard let created = Int64(try field("created")) else { throw FormatError("bad created") }
        guard let size = Int(try field("size")), size > 0 else { throw FormatError("bad size") }
        guard let checksum = Hex.decode(try field("sha256")), checksum.count == 32 else { throw FormatError("bad sha256") }

        let body = Array(bytes[bodyStart...])
        guard body.count == size else {
            throw FormatError("print is \(body.count) bytes, header says \(size) (truncated or extended)")
        }
        guard Digest.sha256(body) == checksum else { throw FormatError("checksum mismatch (damaged print)") }
        return PrintFile(id: id, uid: uid, finger: finger, driver: driver, deviceID: deviceID,
                         created: created, print: body)
    }

    /// A fresh random id (the system's random generator: getrandom).
    static func newID() -> String {
        var bytes: [UInt8] = []
        for _ in 0..<16 { bytes.append(UInt8.random(in: 0...255)) }
        return Hex.encode(bytes)
    }
}


/// Percent-escaping for header values and for path components made from
/// libfprint's driver and device ids (which we do not control).
enum Escape {
    static func value(_ text: String, slash: Bool = true) -> String {
        var out = ""
        for byte in text.utf8 {
            if byte > 0x20, byte < 0x7f, byte != UInt8(ascii: "%"), slash || byte != UInt8(ascii: "/") {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                out += "%" + Hex.encode([byte]).uppercased()
            }
        }
        return out
    }

    /// A single path component: escaped, `/` included, never `.`, `..` or empty.
    static func component(_ text: String) -> String {
        let escaped = value(text, slash: false)
        switch escaped {
        case "": return "%"
        case ".": return "%2E"
        case "..": return "%2E%2E"
        default: return escaped
        }
    }

    static func unescape(_ text: String) -> String? {
        let bytes = Array(text.utf8)
        var out: [UInt8] = []
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%") {
                guard index + 2 < bytes.count, let high = Hex.digit(bytes[index + 1]), let low = Hex.digit(bytes[index + 2]) else { return nil }
                out.append(high << 4 | low)
                index += 3
            } else {
                out.append(bytes[index])
                index += 1
            }
        }
        return String(validating: out, as: UTF8.self)
    }
}
