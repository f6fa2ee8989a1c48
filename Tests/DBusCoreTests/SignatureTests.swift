import XCTest
import DBusCore

/// `Signature` and `ObjectPath`: validation on creation and path arithmetic.
final class SignatureTests: XCTestCase {
    func testValidSignaturesAreAccepted() {
        let valid = [
            "", "y", "b", "n", "q", "i", "u", "x", "t", "d", "s", "o", "g", "v", "h",
            "as", "ay", "aay", "a{sv}", "a{s(ub)}", "a{ya{sv}}", "(ub)", "(s(ia{sv}))", "a(ii)",
            "ssa{sv}", "uba{sv}as",
            // A dictionary entry names an array's element type.
            "{sv}", "{us}", "{oa{sv}}",
            String(repeating: "s", count: 255),
        ]
        for text in valid {
            let signature = Signature(rawValue: text)
            XCTAssertNotNil(signature, "\(text) should be a valid signature")
            XCTAssertEqual(signature?.rawValue, text)
            XCTAssertEqual(signature?.description, text)
        }
    }

    func testInvalidSignaturesAreRejected() {
        let invalid = [
            "a{", "a", "aa", "(", ")", "()", "(u", "u)", "{sv", "sv}", "{s}", "{svs}", "{}",
            "{vs}", "a{vs}", "a{(u)s}", "a{sv}}", "{sv}{sv}", "a{sv}{sv}",
            "z", "S", " s", "s ", "garbage!", "a{sv]",
            String(repeating: "s", count: 256),
            String(repeating: "a", count: 33) + "s",
        ]
        for text in invalid {
            XCTAssertNil(Signature(rawValue: text), "\(text) should be rejected")
        }
    }

    /// `{kv}` is accepted because it names an array's element type; but a dict
    /// entry followed by more types is no element type and no signature at all.
    func testDictEntryFollowedByMoreTypesIsRejected() {
        for text in ["{sv}s", "{sv}a{sv}", "{su}(ub)"] {
            XCTAssertNil(Signature(rawValue: text), "\(text) should be rejected")
        }
    }

    func testStringLiteralKeepsItsText() {
        let signature: Signature = "a{sv}"
        XCTAssertEqual(signature.rawValue, "a{sv}")
        XCTAssertEqual(signature, Signature(rawValue: "a{sv}"))
        XCTAssertNotEqual(signature, Signature(rawValue: "a{sa}") ?? "s")
    }

    func testSingleCompleteType() {
        for text in ["s", "a{sv}", "(ub)", "aay", "v"] {
            XCTAssertTrue(Signature(rawValue: text)!.isSingleCompleteType, text)
        }
        for text in ["", "ss", "a{sv}s", "(ub)(ub)"] {
            XCTAssertFalse(Signature(rawValue: text)!.isSingleCompleteType, text)
        }
    }

    func testValidObjectPaths() {
        for text in ["/", "/a", "/a/b", "/org/example/LocalAuth", "/_1/A_b9/Z", "/test/Echo"] {
            let path = ObjectPath(rawValue: text)
            XCTAssertNotNil(path, "\(text) should be a valid object path")
            XCTAssertEqual(path?.rawValue, text)
            XCTAssertEqual(path?.description, text)
        }
    }

    func testInvalidObjectPaths() {
        for text in ["", "//", "/a/", "a", "a/b", "/a-b", "/a//b", "/a.b", "/a b", "/ä", "///", "/a/b/", " /a"] {
            XCTAssertNil(ObjectPath(rawValue: text), "\(text) should be rejected")
        }
    }

    func testAncestorsOfRootIsEmpty() {
        XCTAssertEqual(ObjectPath(rawValue: "/")!.ancestors, [])
    }

    func testAncestorsOutermostFirst() {
        XCTAssertEqual(ObjectPath(rawValue: "/a")!.ancestors.map(\.rawValue), ["/"])
        XCTAssertEqual(ObjectPath(rawValue: "/a/b")!.ancestors.map(\.rawValue), ["/", "/a"])
        XCTAssertEqual(ObjectPath(rawValue: "/org/example/LocalAuth")!.ancestors.map(\.rawValue),
                       ["/", "/org", "/org/example"])
    }
}
