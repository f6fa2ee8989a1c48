import XCTest
import DBusCore

/// `DBusValue`: signatures of every case, the dictionary builder, typed accessors.
final class DBusValueTests: XCTestCase {
    func testSignatureOfEveryBasicCase() {
        let cases: [(DBusValue, String)] = [
            (.byte(7), "y"), (.boolean(true), "b"), (.int16(-1), "n"), (.uint16(1), "q"),
            (.int32(-1), "i"), (.uint32(1), "u"), (.int64(-1), "x"), (.uint64(1), "t"),
            (.double(1.5), "d"), (.string("x"), "s"), (.objectPath("/a"), "o"),
            (.signature("a{sv}"), "g"), (.variant(.uint32(1)), "v"),
        ]
        for (value, expected) in cases {
            XCTAssertEqual(value.signature.rawValue, expected, "\(value)")
        }
    }

    func testSignatureOfContainers() {
        let cases: [(DBusValue, String)] = [
            (.array("s", []), "as"),
            (.array("(ii)", []), "a(ii)"),
            (.array("a{sv}", []), "aa{sv}"),
            (.array("v", [.variant(.string("x")), .variant(.uint32(1))]), "av"),
            (.array("as", [.strings(["a"]), .strings([])]), "aas"),
            (.dictEntry(.string("k"), .variant(.int32(1))), "{sv}"),
            (.dictEntry(.uint32(1), .array("y", [])), "{uay}"),
            (.array("{sv}", [.dictEntry(.string("k"), .variant(.int32(1)))]), "a{sv}"),
            (.structure([.uint32(1), .boolean(true)]), "(ub)"),
            (.structure([.string("s"), .structure([.int32(1), .dictionary([:])])]), "(s(ia{sv}))"),
            (.structure([.array("s", []), .structure([.variant(.int64(1))])]), "(as(v))"),
            (.variant(.array("{sv}", [])), "v"),
            (.variant(.variant(.variant(.byte(1)))), "v"),
        ]
        for (value, expected) in cases {
            XCTAssertEqual(value.signature.rawValue, expected, "\(value)")
        }
    }

    func testSignatureOfArgumentList() {
        let arguments: [DBusValue] = [.uint32(1), .string("r"), .dictionary(["a": .boolean(true)]), .structure([.byte(1)])]
        XCTAssertEqual(arguments.signature.rawValue, "usa{sv}(y)")
        XCTAssertEqual([DBusValue]().signature.rawValue, "")
    }

    func testDictionaryBuildsSortedSVEntries() {
        let value = DBusValue.dictionary(["b": .uint32(2), "a": .string("x"), "c": .variant(.boolean(false))])
        XCTAssertEqual(value, .array("{sv}", [
            .dictEntry(.string("a"), .variant(.string("x"))),
            .dictEntry(.string("b"), .variant(.uint32(2))),
            .dictEntry(.string("c"), .variant(.variant(.boolean(false)))),
        ]))
        XCTAssertEqual(value.signature.rawValue, "a{sv}")
    }

    func testEqualDictionariesAreEqualValues() {
        var first: [String: DBusValue] = [:]
        var second: [String: DBusValue] = [:]
        for i in 0..<50 { first["key\(i)"] = .int32(Int32(i)) }
        for i in (0..<50).reversed() { second["key\(i)"] = .int32(Int32(i)) }
        XCTAssertEqual(DBusValue.dictionary(first), DBusValue.dictionary(second))
        XCTAssertNotEqual(DBusValue.dictionary(first), DBusValue.dictionary(["key0": .int32(0)]))
    }

    func testEmptyDictionary() {
        XCTAssertEqual(DBusValue.dictionary([:]), .array("{sv}", []))
        XCTAssertEqual(DBusValue.dictionary([:]).stringKeyedDictionary, [:])
    }

    func testBytesAndStringsHelpers() {
        XCTAssertEqual(DBusValue.bytes([0, 1, 255]), .array("y", [.byte(0), .byte(1), .byte(255)]))
        XCTAssertEqual(DBusValue.strings(["a", "b"]), .array("s", [.string("a"), .string("b")]))
        XCTAssertEqual(DBusValue.bytes([]).signature.rawValue, "ay")
        XCTAssertEqual(DBusValue.strings([]).signature.rawValue, "as")
    }

    func testScalarAccessors() {
        XCTAssertEqual(DBusValue.boolean(true).bool, true)
        XCTAssertEqual(DBusValue.uint32(42).uint32, 42)
        XCTAssertEqual(DBusValue.int32(-42).int32, -42)
        XCTAssertEqual(DBusValue.double(2.5).double, 2.5)
        XCTAssertEqual(DBusValue.string("x").string, "x")
        // The wrong type gives nil, never a conversion.
        XCTAssertNil(DBusValue.int32(1).uint32)
        XCTAssertNil(DBusValue.uint32(1).int32)
        XCTAssertNil(DBusValue.uint32(1).bool)
        XCTAssertNil(DBusValue.objectPath("/a").string)
        XCTAssertNil(DBusValue.variant(.string("x")).string)
        XCTAssertNil(DBusValue.int32(2).double)
    }

    func testUnwrapped() {
        XCTAssertEqual(DBusValue.variant(.string("x")).unwrapped, .string("x"))
        XCTAssertEqual(DBusValue.variant(.variant(.variant(.uint32(3)))).unwrapped, .uint32(3))
        XCTAssertEqual(DBusValue.uint32(3).unwrapped, .uint32(3))
        // Only the outer value is unwrapped, not what a container holds.
        let array = DBusValue.array("v", [.variant(.string("x"))])
        XCTAssertEqual(array.unwrapped, array)
    }

    func testStringArray() {
        XCTAssertEqual(DBusValue.strings(["a", "", "ü"]).stringArray, ["a", "", "ü"])
        XCTAssertEqual(DBusValue.array("s", []).stringArray, [])
        XCTAssertNil(DBusValue.array("v", [.variant(.string("x"))]).stringArray)
        XCTAssertNil(DBusValue.array("o", [.objectPath("/a")]).stringArray)
        XCTAssertNil(DBusValue.string("a").stringArray)
        XCTAssertNil(DBusValue.bytes([1]).stringArray)
    }

    func testByteArray() {
        XCTAssertEqual(DBusValue.bytes([0, 127, 255]).byteArray, [0, 127, 255])
        XCTAssertEqual(DBusValue.bytes([]).byteArray, [])
        XCTAssertNil(DBusValue.strings(["a"]).byteArray)
        XCTAssertNil(DBusValue.array("u", [.uint32(1)]).byteArray)
        XCTAssertNil(DBusValue.byte(1).byteArray)
    }

    /// Each entry's own variant is unwrapped once; a variant inside it stays a
    /// variant, so `v(v(u))` is never mistaken for a `u` (a typed option of
    /// the wrong type must be InvalidArgs).
    func testStringKeyedDictionaryUnwrapsEachVariantOnce() {
        let value = DBusValue.dictionary([
            "request-id": .string("r1"),
            "reuse-duration": .double(30),
            "nested": .variant(.uint32(7)),
            "options": .dictionary(["x": .boolean(true)]),
        ])
        XCTAssertEqual(value.stringKeyedDictionary, [
            "request-id": .string("r1"),
            "reuse-duration": .double(30),
            "nested": .variant(.uint32(7)),
            "options": .array("{sv}", [.dictEntry(.string("x"), .variant(.boolean(true)))]),
        ])
    }

    func testStringKeyedDictionaryOfNonVariantValues() {
        let value = DBusValue.array("{su}", [.dictEntry(.string("a"), .uint32(1)), .dictEntry(.string("b"), .uint32(2))])
        XCTAssertEqual(value.stringKeyedDictionary, ["a": .uint32(1), "b": .uint32(2)])
    }

    func testStringKeyedDictionaryRejectsOtherShapes() {
        XCTAssertNil(DBusValue.array("{uv}", [.dictEntry(.uint32(1), .variant(.string("x")))]).stringKeyedDictionary)
        XCTAssertNil(DBusValue.strings(["a"]).stringKeyedDictionary)
        XCTAssertNil(DBusValue.string("a").stringKeyedDictionary)
        XCTAssertNil(DBusValue.variant(.dictionary(["a": .int32(1)])).stringKeyedDictionary)
    }
}
