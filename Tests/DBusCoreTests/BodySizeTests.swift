import DBusCore
import XCTest

/// `Message.approximateBodySize` is what the service's 16 KiB limit reads
/// before decoding anything: it must count every byte that decoding would
/// touch, wherever it sits (the reliability suite's R1: a 1 MiB value inside
/// an option dict was not counted, and decoding it cost 40 MB).
final class BodySizeTests: XCTestCase {
    private func call(_ arguments: [DBusValue]) throws -> Message {
        try Message.methodCall(destination: "org.example.Test", path: "/test", interface: "org.example.Test",
                               member: "Echo", arguments: arguments)
    }

    private let megabyte = 1 << 20

    func testLargeValuesAreCountedWhereverTheySit() throws {
        let bytes = DBusValue.bytes([UInt8](repeating: 7, count: megabyte))
        let text = DBusValue.string(String(repeating: "x", count: megabyte))
        let cases: [(String, [DBusValue])] = [
            ("ay", [bytes]),
            ("s", [text]),
            ("a{sv} with ay", [.uint32(1), .string("r"), .dictionary(["x": bytes])]),
            ("a{sv} with s", [.uint32(1), .string("r"), .dictionary(["x": text])]),
            ("v of v of ay", [.variant(.variant(bytes))]),
            ("(s)", [.structure([text])]),
        ]
        for (name, arguments) in cases {
            let size = try call(arguments).approximateBodySize
            XCTAssertGreaterThanOrEqual(size, megabyte, name)
        }
    }

    func testSmallCallsStaySmall() throws {
        XCTAssertLessThan(try call([.uint32(1)]).approximateBodySize, 64)
        XCTAssertLessThan(try call([.uint32(1), .string("Unlock"), .dictionary([:])]).approximateBodySize, 64)
    }
}
