@testable import LocalAuthService
import LocalAuthShared
import XCTest

/// The print file format (docs/STORE.md): what is written is read back, and
/// anything damaged, torn, foreign to the format or from a later version is
/// refused before libfprint sees it.
final class PrintFileTests: XCTestCase {
    private let sample = PrintFile(id: "0123456789abcdef0123456789abcdef", uid: 1000, finger: .rightIndex,
                                   driver: "virtual_device", deviceID: "0", created: 1_764_474_000,
                                   print: Array("FP3".utf8) + (0..<66).map { UInt8($0) })

    func testRoundTrip() throws {
        let bytes = sample.encode()
        XCTAssertEqual(try PrintFile.decode(bytes), sample)
        let text = String(decoding: bytes.prefix(40), as: UTF8.self)
        XCTAssertTrue(text.hasPrefix("LOCALAUTH-PRINT 1\nid 0123456789abcdef"), text)
    }

    func testEveryTruncationIsRefused() {
        let bytes = sample.encode()
        for length in 0..<bytes.count {
            XCTAssertThrowsError(try PrintFile.decode(Array(bytes.prefix(length))), "length \(length)")
        }
        XCTAssertThrowsError(try PrintFile.decode(bytes + [0]), "an extended file")
    }

    func testEveryChangedByteIsRefusedOrHarmless() throws {
        let bytes = sample.encode()
        for index in 0..<bytes.count {
            var damaged = bytes
            damaged[index] ^= 0x20
            // A flipped byte either breaks the file, or changes only a header
            // field that is then checked against the path (uid, finger, ids),
            // or nothing (the case of a hex digit); the print bytes never
            // change unnoticed.
            if let decoded = try? PrintFile.decode(damaged) {
                XCTAssertTrue(decoded.print == sample.print, "byte \(index) changed the print unnoticed")
            }
        }
    }

    func testLaterVersionsAndOtherFilesAreRefused() {
        var later = sample.encode()
        later[16] = UInt8(ascii: "2")   // "LOCALAUTH-PRINT 2"
        XCTAssertThrowsError(try PrintFile.decode(later)) { error in
            XCTAssertTrue("\(error)".contains("version 2"), "\(error)")
        }
        XCTAssertThrowsError(try PrintFile.decode(Array("FP3 raw libfprint data".utf8)))
        XCTAssertThrowsError(try PrintFile.decode([]))
        XCTAssertThrowsError(try PrintFile.decode([UInt8](repeating: 0x41, count: PrintFile.maximumSize + 1)))
    }

    func testUnknownKeysAreIgnoredAndDuplicatesRefused() throws {
        let text = String(decoding: sample.encode(), as: UTF8.self)
        let extended = text.replacingOccurrences(of: "uid 1000\n", with: "uid 1000\nnote something new\n")
        XCTAssertEqual(try PrintFile.decode(Array(extended.utf8)), sample)
        let doubled = text.replacingOccurrences(of: "uid 1000\n", with: "uid 1000\nuid 0\n")
        XCTAssertThrowsError(try PrintFile.decode(Array(doubled.utf8)))
    }

    func testEscaping() {
        XCTAssertEqual(Escape.component("0"), "0")
        XCTAssertEqual(Escape.component("usb:1-2/3"), "usb:1-2%2F3")
        XCTAssertEqual(Escape.component(".."), "%2E%2E")
        XCTAssertEqual(Escape.component("a b%"), "a%20b%25")
        XCTAssertEqual(Escape.unescape(Escape.value("x y\n%/é")), "x y\n%/é")
        var odd = sample
        odd.deviceID = "dev id/with\nnewline"
        XCTAssertEqual(try PrintFile.decode(odd.encode()), odd)
    }
}
