import RigSupport

/// The bytes of the first `ay` in what `gdbus call` printed (GLib's GVariant
/// text format, `g_variant_print`). GLib prints an `ay` in one of two forms:
/// `[byte 0x04, 0x9f, …]`, or, when its last byte is 0 and no other is, a
/// bytestring `b'\004\237…'` (`b"…"` if it holds a `'`), escaped as
/// `g_strescape` does and without that last 0. A 113-byte ECIES wrap is a
/// bytestring about once in 400 (1/256 × (255/256)^111; 14 of 6,000 wraps
/// from the rig's service), which a parser of the first form read as no
/// bytes at all.
enum GdbusText {
    static func bytes(in text: String) throws -> [UInt8] {
        let characters = Array(text.utf8)
        let forms: [(marker: String, parse: (Int) throws -> [UInt8])] = [
            ("[byte ", { try hexList(characters, from: $0) }),
            ("b'", { try bytestring(characters, from: $0 + 2, closing: UInt8(ascii: "'")) }),
            ("b\"", { try bytestring(characters, from: $0 + 2, closing: UInt8(ascii: "\"")) }),
            ("@ay []", { _ in [] }),
        ]
        let found = forms.compactMap { form in firstIndex(of: Array(form.marker.utf8), in: characters).map { ($0, form.parse) } }
        guard let (start, parse) = found.min(by: { $0.0 < $1.0 }) else {
            throw RigError("no byte array in gdbus's output: \(text)")
        }
        return try parse(start)
    }

    /// `[byte 0x04, 0x9f]`: two hex digits after each `0x`, up to the `]`.
    private static func hexList(_ text: [UInt8], from start: Int) throws -> [UInt8] {
        guard let end = text[start...].firstIndex(of: UInt8(ascii: "]")) else { throw RigError("an unterminated [byte …]") }
        var bytes: [UInt8] = []
        var index = start
        while let x = text[index..<end].firstIndex(of: UInt8(ascii: "x")), x + 2 < end {
            guard text[x - 1] == UInt8(ascii: "0"), let value = UInt8(String(decoding: text[x + 1...x + 2], as: UTF8.self), radix: 16)
            else { throw RigError("not a byte at \(x) of [byte …]") }
            bytes.append(value)
            index = x + 3
        }
        return bytes
    }

    /// g_strescape's escapes (\b \f \n \r \t \v \\ \" and three octal digits
    /// for any other byte below 0x20 or from 0x7f), then the 0 GLib left out.
    private static func bytestring(_ text: [UInt8], from start: Int, closing: UInt8) throws -> [UInt8] {
        let named: [UInt8: UInt8] = [
            UInt8(ascii: "b"): 8, UInt8(ascii: "f"): 12, UInt8(ascii: "n"): 10, UInt8(ascii: "r"): 13,
            UInt8(ascii: "t"): 9, UInt8(ascii: "v"): 11,
        ]
        let octal = UInt8(ascii: "0")...UInt8(ascii: "7")
        var bytes: [UInt8] = []
        var index = start
        while index < text.count, text[index] != closing {
            guard text[index] == UInt8(ascii: "\\") else {
                bytes.append(text[index])
                index += 1
                continue
            }
            guard index + 1 < text.count else { break }
            let next = text[index + 1]
            if octal.contains(next) {
                var value = 0
                var digits = 0
                while digits < 3, index + 1 + digits < text.count, octal.contains(text[index + 1 + digits]) {
                    value = value * 8 + Int(text[index + 1 + digits] - UInt8(ascii: "0"))
                    digits += 1
                }
                guard value <= 255 else { throw RigError("an octal escape past 255 in a bytestring") }
                bytes.append(UInt8(value))
                index += 1 + digits
            } else {
                bytes.append(named[next] ?? next)
                index += 2
            }
        }
        guard index < text.count else { throw RigError("an unterminated bytestring") }
        return bytes + [0]
    }

    private static func firstIndex(of needle: [UInt8], in text: [UInt8]) -> Int? {
        guard needle.count <= text.count else { return nil }
        return (0...(text.count - needle.count)).first { text[$0..<($0 + needle.count)].elementsEqual(needle) }
    }
}
