import Foundation
import RigSupport
import XCTest

/// `GdbusText` against GLib's own printer (no rig, no root): every array is
/// printed by `g_variant_print` (through python3-gi, the function `gdbus
/// call` prints its reply with) and must read back byte for byte. On c686a26
/// the login-keyring tests read only the `[byte 0x…]` form, so a wrap whose
/// last byte was 0 and no other (a bytestring, `b'…'`) read as no bytes:
/// "an ECIES ciphertext is at least 81 bytes, not 0".
final class GdbusTextTests: XCTestCase {
    /// What GLib prints for `(ay)` holding each array, one line each.
    private func printedByGLib(_ arrays: [[UInt8]]) throws -> [String] {
        let script = """
            import sys
            from gi.repository import GLib
            for line in sys.argv[1:]:
                print(GLib.Variant('(ay)', (bytes.fromhex(line),)).print_(True))
            """
        let hex = arrays.map { $0.map { String(format: "%02x", $0) }.joined() }
        let outcome = try runProgram("/usr/bin/python3", ["-c", script] + hex)
        XCTAssertEqual(outcome.status, 0, outcome.stderr)
        return outcome.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
    }

    private func assertReadBack(_ arrays: [[UInt8]], file: StaticString = #filePath, line: UInt = #line) throws {
        let printed = try printedByGLib(arrays)
        XCTAssertEqual(printed.count, arrays.count, file: file, line: line)
        for (array, text) in zip(arrays, printed) {
            XCTAssertEqual(try GdbusText.bytes(in: text), array, text, file: file, line: line)
        }
    }

    func testBytestringsReadBackWithEveryEscape() throws {
        let everyByte = Array(UInt8(1)...UInt8(255)) + [0]  // holds a ': printed b"…"
        let noQuote = everyByte.filter { $0 != UInt8(ascii: "'") }  // printed b'…'
        let printed = try printedByGLib([everyByte, noQuote])
        XCTAssertTrue(printed[0].hasPrefix("(b\""), printed[0])
        XCTAssertTrue(printed[1].hasPrefix("(b'"), printed[1])
        try assertReadBack([everyByte, noQuote, [0], Array("it's \"quoted\"\\".utf8) + [0]])
    }

    /// Wraps shaped as the service's (0x04, a point, a ciphertext and a tag:
    /// 113 bytes): those GLib prints as bytestrings and those it prints as lists.
    func testECIESWrapsReadBackInBothForms() throws {
        var bytestrings: [[UInt8]] = []
        var lists: [[UInt8]] = []
        while bytestrings.count < 40 || lists.count < 40 {
            var wrap = [UInt8(4)] + (0..<112).map { _ in UInt8.random(in: 0...255) }
            if bytestrings.count < 40 {
                wrap = wrap.map { $0 == 0 ? 1 : $0 }
                wrap[112] = 0
                bytestrings.append(wrap)
            } else {
                wrap[Int.random(in: 1..<112)] = 0
                lists.append(wrap)
            }
        }
        let printed = try printedByGLib([bytestrings[0], lists[0]])
        XCTAssertTrue(printed[0].hasPrefix("(b"), printed[0])
        XCTAssertTrue(printed[1].hasPrefix("([byte 0x04, "), printed[1])
        try assertReadBack(bytestrings + lists + [[], [0, 0], [1, 0, 2]])
    }

    func testOutputWithoutAByteArrayIsAnError() {
        XCTAssertThrowsError(try GdbusText.bytes(in: "Error: GDBus.Error:org.example.LocalAuth.Error.NoSecret: off\n"))
    }
}
