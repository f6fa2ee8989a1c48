import XCTest
import DBusCore

/// Values through a real libdbus message (no bus): what goes in comes out.
final class MarshallingTests: XCTestCase {
    /// Builds a method call carrying `values` and checks that reading it gives them back.
    @discardableResult
    private func assertRoundTrip(_ values: [DBusValue], file: StaticString = #filePath, line: UInt = #line) throws -> Message {
        let message = try Message.methodCall(destination: "org.example.Test", path: "/test/Echo",
                                             interface: "org.example.Test", member: "Echo", arguments: values)
        XCTAssertEqual(message.arguments, values, file: file, line: line)
        XCTAssertEqual(message.signature, values.signature.rawValue, file: file, line: line)
        return message
    }

    private func assertInvalidArgs(_ values: [DBusValue], file: StaticString = #filePath, line: UInt = #line) {
        do {
            let message = try Message.methodCall(destination: "org.example.Test", path: "/test/Echo",
                                                 interface: "org.example.Test", member: "Echo", arguments: values)
            XCTFail("expected InvalidArgs, built a message with signature \(message.signature)", file: file, line: line)
        } catch {
            XCTAssertEqual(error.name, .invalidArgs, file: file, line: line)
            XCTAssertFalse(error.message.isEmpty, file: file, line: line)
        }
    }

    func testHeaderFields() throws {
        let message = try Message.methodCall(destination: "org.example.Test", path: "/test/Echo",
                                             interface: "org.example.Test", member: "Echo")
        XCTAssertEqual(message.kind, .methodCall)
        XCTAssertEqual(message.destination, "org.example.Test")
        XCTAssertEqual(message.path, "/test/Echo")
        XCTAssertEqual(message.interface, "org.example.Test")
        XCTAssertEqual(message.member, "Echo")
        XCTAssertTrue(message.expectsReply)
        XCTAssertNil(message.errorName)
        XCTAssertNil(message.error)
        XCTAssertNil(message.sender)
    }

    func testNoDestinationNoInterface() throws {
        let message = try Message.methodCall(destination: nil, path: "/", interface: nil, member: "Ping")
        XCTAssertNil(message.destination)
        XCTAssertNil(message.interface)
        XCTAssertEqual(message.member, "Ping")
    }

    func testEmptyBody() throws {
        let message = try assertRoundTrip([])
        XCTAssertEqual(message.signature, "")
        XCTAssertEqual(message.arguments, [])
    }

    func testIntegersAtTheirLimits() throws {
        try assertRoundTrip([
            .byte(0), .byte(1), .byte(.max),
            .boolean(false), .boolean(true),
            .int16(.min), .int16(-1), .int16(0), .int16(.max),
            .uint16(0), .uint16(.max),
            .int32(.min), .int32(-1), .int32(0), .int32(.max),
            .uint32(0), .uint32(.max),
            .int64(.min), .int64(-1), .int64(0), .int64(.max),
            .uint64(0), .uint64(.max),
        ])
    }

    func testDoubles() throws {
        let doubles: [Double] = [0, 1, -1, .pi, -.pi, 1e308, -1e308, .greatestFiniteMagnitude,
                                 .leastNormalMagnitude, .leastNonzeroMagnitude, .infinity, -.infinity]
        try assertRoundTrip(doubles.map { .double($0) })
    }

    func testNegativeZeroKeepsItsSign() throws {
        let message = try assertRoundTrip([.double(-0.0)])
        // -0.0 == 0.0, so compare the bits too.
        guard case .double(let value)? = message.arguments.first else { return XCTFail("no double") }
        XCTAssertEqual(value.bitPattern, (-0.0 as Double).bitPattern)
        XCTAssertEqual(value.sign, .minus)
    }

    func testNaN() throws {
        let message = try Message.methodCall(destination: nil, path: "/", interface: nil, member: "M",
                                             arguments: [.double(.nan)])
        XCTAssertEqual(message.signature, "d")
        XCTAssertEqual(message.arguments.first?.double?.isNaN, true)
    }

    func testStrings() throws {
        try assertRoundTrip([
            .string(""),
            .string("hello"),
            .string("héllo wörld ✓ 日本語 🦊 👩‍👩‍👧 Ωμέγα עברית"),
            .string("line\nbreak\ttab \u{7F} \u{1} 'quotes' \"double\" <xml/> &amp;"),
            .string(String(repeating: "0123456789abcdef", count: 4096)),
        ])
    }

    func testObjectPathsAndSignatures() throws {
        try assertRoundTrip([
            .objectPath("/"), .objectPath("/org/example/LocalAuth"), .objectPath("/_/a1"),
            .signature(""), .signature("s"), .signature("a{sv}"), .signature("(ub)"), .signature("aay"),
            .signature("ssa{sv}"),
        ])
    }

    func testEmptyArraysOfEveryElementType() throws {
        let elements = ["y", "b", "n", "q", "i", "u", "x", "t", "d", "s", "o", "g", "v",
                        "as", "ay", "a{sv}", "{sv}", "{us}", "(ub)", "(s(ia{sv}))", "aav"]
        try assertRoundTrip(elements.map { .array(Signature(rawValue: $0)!, []) })
    }

    func testArraysWithElements() throws {
        try assertRoundTrip([
            .bytes(Array(0...255)),
            .strings(["a", "", "ü", "🦊"]),
            .array("u", (0..<1000).map { .uint32($0) }),
            .array("as", [.strings(["a"]), .strings([]), .strings(["b", "c"])]),
            .array("aay", [.array("ay", [.bytes([1, 2]), .bytes([])])]),
            .array("(ub)", [.structure([.uint32(1), .boolean(true)]), .structure([.uint32(2), .boolean(false)])]),
            .array("v", [.variant(.string("x")), .variant(.uint32(1)), .variant(.strings(["y"]))]),
            .array("o", [.objectPath("/a"), .objectPath("/b/c")]),
            .array("d", [.double(-0.5), .double(1e-300)]),
        ])
    }

    func testLargeByteArray() throws {
        let bytes = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let message = try assertRoundTrip([.bytes(bytes)])
        XCTAssertEqual(message.arguments.first?.byteArray, bytes)
    }

    func testDictionariesWithNestedVariants() throws {
        let options = DBusValue.dictionary([
            "request-id": .string("req-1"),
            "reuse-duration": .double(30),
            "interaction-not-allowed": .boolean(true),
            "int": .int32(-5),
            "bytes": .bytes([0, 255]),
            "list": .strings(["a", "b"]),
            "variant": .variant(.uint64(.max)),
            "variant-of-variant": .variant(.variant(.string("deep"))),
            "nested": .dictionary(["inner": .dictionary(["x": .int16(-7)]), "empty": .dictionary([:])]),
            "struct": .structure([.string("s"), .objectPath("/a")]),
        ])
        let message = try assertRoundTrip([options, .dictionary([:])])
        XCTAssertEqual(message.signature, "a{sv}a{sv}")
        XCTAssertEqual(message.arguments.first?.stringKeyedDictionary?["request-id"], .string("req-1"))
        XCTAssertEqual(message.arguments.first?.stringKeyedDictionary?["variant-of-variant"],
                       .variant(.variant(.string("deep"))), "one variant level is the entry's own; the rest stays")
    }

    func testDictionariesWithOtherKeyTypes() throws {
        try assertRoundTrip([
            .array("{us}", [.dictEntry(.uint32(1), .string("one")), .dictEntry(.uint32(2), .string("two"))]),
            .array("{ya{sv}}", [.dictEntry(.byte(9), .dictionary(["k": .boolean(false)]))]),
            .array("{oas}", [.dictEntry(.objectPath("/p"), .strings(["x"]))]),
            .array("{xd}", [.dictEntry(.int64(.min), .double(-1))]),
            .array("{s(ub)}", [.dictEntry(.string("k"), .structure([.uint32(7), .boolean(true)]))]),
        ])
    }

    func testStructs() throws {
        try assertRoundTrip([
            .structure([.uint32(1), .boolean(true)]),
            .structure([.string("s"), .structure([.int32(-1), .dictionary(["a": .double(2)])])]),
            .structure([.array("s", []), .structure([.variant(.int64(1))]), .bytes([1])]),
            .structure([.variant(.structure([.byte(1), .signature("g")]))]),
        ])
    }

    func testVariants() throws {
        try assertRoundTrip([
            .variant(.uint32(1)),
            .variant(.variant(.string("x"))),
            .variant(.variant(.variant(.variant(.boolean(true))))),
            .variant(.array("{sv}", [])),
            .variant(.dictionary(["k": .variant(.bytes([3]))])),
            .variant(.structure([.string("a"), .uint16(2)])),
            .variant(.objectPath("/a/b")),
            .variant(.signature("a{sv}")),
        ])
    }

    func testEverythingInOneMessage() throws {
        let values: [DBusValue] = [
            .byte(1), .boolean(true), .int16(-2), .uint16(3), .int32(-4), .uint32(5), .int64(-6), .uint64(7),
            .double(8.5), .string("nine"), .objectPath("/ten"), .signature("a{sv}"),
            .strings(["x"]), .dictionary(["k": .int32(1)]), .structure([.string("s")]), .variant(.variant(.byte(0))),
        ]
        let message = try assertRoundTrip(values)
        XCTAssertEqual(message.signature, "ybnqiuxtdsogasa{sv}(s)v")
    }

    func testSignalMessage() throws {
        let signal = try Message.signal(path: "/org/example/LocalAuth", interface: "org.example.LocalAuth",
                                        member: "EvaluationStatus",
                                        arguments: [.string("r1"), .string("place-finger")], destination: ":1.42")
        XCTAssertEqual(signal.kind, .signal)
        XCTAssertEqual(signal.path, "/org/example/LocalAuth")
        XCTAssertEqual(signal.interface, "org.example.LocalAuth")
        XCTAssertEqual(signal.member, "EvaluationStatus")
        XCTAssertEqual(signal.destination, ":1.42")
        XCTAssertEqual(signal.arguments, [.string("r1"), .string("place-finger")])
        XCTAssertEqual(signal.signature, "ss")
        let broadcast = try Message.signal(path: "/a", interface: "org.example.Test", member: "S")
        XCTAssertNil(broadcast.destination)
    }

    // MARK: What cannot be marshalled is refused, not a crash

    func testNULInStringThrowsInvalidArgs() {
        assertInvalidArgs([.string("a\0b")])
        assertInvalidArgs([.string("\0")])
    }

    func testNULNestedDeepThrowsInvalidArgs() {
        assertInvalidArgs([.uint32(1), .strings(["fine", "bad\0"])])
        assertInvalidArgs([.dictionary(["ok": .string("x"), "bad": .strings(["y", "z\0"])]), .string("after")])
        assertInvalidArgs([.structure([.string("ok"), .variant(.structure([.string("\0")]))])])
        assertInvalidArgs([.variant(.variant(.string("x\0")))])
    }

    func testArrayElementOfWrongTypeThrowsInvalidArgs() {
        assertInvalidArgs([.array("s", [.uint32(1)])])
        assertInvalidArgs([.array("s", [.string("fine"), .uint32(1)])])
        assertInvalidArgs([.array("u", [.int32(1)])])
        assertInvalidArgs([.array("v", [.string("not wrapped")])])
        assertInvalidArgs([.array("{sv}", [.dictEntry(.string("k"), .string("not a variant"))])])
        assertInvalidArgs([.array("as", [.strings(["a"]), .bytes([1])])])
        assertInvalidArgs([.dictionary(["k": .array("s", [.byte(1)])])])
    }

    /// An array's element type must be one complete type: `.array("ss", [])`
    /// would claim signature `ass` while the message says `as`.
    func testArrayWithMultiTypeElementSignatureThrowsInvalidArgs() {
        assertInvalidArgs([.array("ss", [])])
    }

    /// A dictionary entry exists only inside an array; alone it makes a message
    /// whose body no peer can read.
    func testDictEntryOutsideArrayThrowsInvalidArgs() {
        assertInvalidArgs([.dictEntry(.string("k"), .int32(1))])
    }

    /// D-Bus has no empty structs.
    func testEmptyStructThrowsInvalidArgs() {
        assertInvalidArgs([.structure([])])
    }
}

/// Unix fds: sent as a duplicate, received only by `takeArguments()`, which
/// hands the caller a descriptor it owns; `arguments` never takes one.
final class UnixFDMarshallingTests: XCTestCase {
    func testAFileDescriptorTravelsAsADuplicateOwnedByTheReceiver() throws {
        var pipeFDs: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&pipeFDs), 0)
        defer { close(pipeFDs[0]) }
        let message = try Message.signal(path: "/t", interface: "org.example.T", member: "Fd",
                                         arguments: [.unixFD(pipeFDs[1]), .string("x")])
        close(pipeFDs[1])   // ours: the message holds its own duplicate
        XCTAssertTrue(message.carriesFileDescriptors)
        XCTAssertEqual(message.arguments, [.unixFD(-1), .string("x")], "arguments takes no descriptor")
        let taken = message.takeArguments()
        guard case .unixFD(let fd)? = taken.first else { return XCTFail("\(taken)") }
        XCTAssertGreaterThanOrEqual(fd, 0)
        XCTAssertEqual(write(fd, "z", 1), 1, "the received descriptor is the pipe's write end")
        close(fd)
        var byte: UInt8 = 0
        XCTAssertEqual(read(pipeFDs[0], &byte, 1), 1)
        XCTAssertEqual(byte, UInt8(ascii: "z"))
        XCTAssertEqual(DBusValue.unixFD(3).signature.rawValue, "h")
        XCTAssertThrowsError(try Message.signal(path: "/t", interface: "org.example.T", member: "Fd", arguments: [.unixFD(-1)]))
    }
}
