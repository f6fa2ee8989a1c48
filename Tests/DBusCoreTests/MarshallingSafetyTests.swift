import XCTest
import DBusCore
import Foundation

/// Values and names that libdbus refuses must come back as a thrown DBusError:
/// libdbus itself aborts the process on them (its argument checks are fatal),
/// so each case runs in a child process of this test binary.
final class MarshallingSafetyTests: XCTestCase {
    private static let probeTest = "DBusCoreTests.MarshallingSafetyTests/testChildProbe"

    private static func methodCall(_ arguments: [DBusValue]) throws(DBusError) -> Message {
        try Message.methodCall(destination: "org.example.Test", path: "/test/Echo",
                               interface: "org.example.Test", member: "Echo", arguments: arguments)
    }

    private static func nestedArrays(depth: Int) -> DBusValue {
        var value = DBusValue.int32(1)
        for _ in 0..<depth { value = .array(value.signature, [value]) }
        return value
    }

    /// What each child does; it prints what happened.
    private static let probes: [String: @Sendable () throws(DBusError) -> String] = [
        "nul-string": { () throws(DBusError) in _ = try methodCall([.string("a\0b")]); return "message" },
        "signature-value-with-dict-entry": { () throws(DBusError) in
            _ = try methodCall([.signature(Signature(rawValue: "{sv}")!)]); return "message"
        },
        "variant-of-dict-entry": { () throws(DBusError) in
            _ = try methodCall([.variant(.dictEntry(.string("k"), .int32(1)))]); return "message"
        },
        "array-of-empty-signature": { () throws(DBusError) in
            _ = try methodCall([.array(Signature(rawValue: "")!, [])]); return "message"
        },
        "arrays-nested-34-deep": { () throws(DBusError) in
            _ = try methodCall([nestedArrays(depth: 34)]); return "message"
        },
        "arrays-nested-32-deep": { () throws(DBusError) in
            let message = try methodCall([nestedArrays(depth: 32)])
            return message.arguments == [nestedArrays(depth: 32)] ? "equal" : "different"
        },
        "invalid-member": { () throws(DBusError) in
            _ = try Message.methodCall(destination: "org.example.Test", path: "/a", interface: "org.example.Test",
                                       member: "not a member"); return "message"
        },
        "invalid-destination": { () throws(DBusError) in
            _ = try Message.methodCall(destination: "not a bus name", path: "/a", interface: "org.example.Test",
                                       member: "M"); return "message"
        },
        "invalid-interface": { () throws(DBusError) in
            _ = try Message.methodCall(destination: "org.example.Test", path: "/a", interface: "nodots",
                                       member: "M"); return "message"
        },
        "signal-invalid-destination": { () throws(DBusError) in
            _ = try Message.signal(path: "/a", interface: "org.example.Test", member: "S", destination: "not a bus name")
            return "message"
        },
    ]

    /// Runs only as a child of the tests below.
    func testChildProbe() throws {
        guard let name = ProcessInfo.processInfo.environment[ChildProbe.variable] else {
            throw XCTSkip("runs only in a child process started by MarshallingSafetyTests")
        }
        guard let probe = Self.probes[name] else { return XCTFail("no probe \(name)") }
        ChildProbe.report(probe)
    }

    private func assertProbe(_ name: String, outcome expected: String,
                             file: StaticString = #filePath, line: UInt = #line) throws {
        let result = try ChildProbe.run(name, test: Self.probeTest)
        if result.crashed {
            let reason = result.output.split(separator: "\n")
                .first { $0.hasPrefix("dbus[") || $0.contains("Fatal error") } ?? "no message"
            XCTFail("\(name): the process died of signal \(result.exitStatus) instead of giving '\(expected)': \(reason)",
                    file: file, line: line)
            return
        }
        XCTAssertEqual(result.outcome, expected, "\(name)", file: file, line: line)
        XCTAssertEqual(result.exitStatus, 0, "\(name): \(result.output.suffix(1500))", file: file, line: line)
    }

    private let invalidArgs = "threw " + DBusError.Name.invalidArgs.rawValue

    /// Checks the harness itself on a case that is known to be handled.
    func testHarnessSeesThrownError() throws {
        try assertProbe("nul-string", outcome: invalidArgs)
        try assertProbe("arrays-nested-32-deep", outcome: "returned equal")
    }

    /// `Signature(rawValue: "{sv}")` is accepted (as an array element type), but as
    /// the value of a `g` it is no signature: libdbus aborts in append_basic.
    func testSignatureValueHoldingDictEntryTypeThrows() throws {
        try assertProbe("signature-value-with-dict-entry", outcome: invalidArgs)
    }

    func testVariantOfDictEntryThrows() throws {
        try assertProbe("variant-of-dict-entry", outcome: invalidArgs)
    }

    func testArrayOfEmptyElementSignatureThrows() throws {
        try assertProbe("array-of-empty-signature", outcome: invalidArgs)
    }

    /// D-Bus allows at most 32 nested arrays (33 builds a message that breaks
    /// that limit; from 34 on libdbus aborts).
    func testArraysNestedTooDeepThrow() throws {
        try assertProbe("arrays-nested-34-deep", outcome: invalidArgs)
    }

    /// `Message.methodCall` documents InvalidArgs for a bad destination, interface or member.
    func testInvalidMemberNameThrows() throws {
        try assertProbe("invalid-member", outcome: invalidArgs)
    }

    func testInvalidDestinationThrows() throws {
        try assertProbe("invalid-destination", outcome: invalidArgs)
    }

    func testInvalidInterfaceThrows() throws {
        try assertProbe("invalid-interface", outcome: invalidArgs)
    }

    func testSignalWithInvalidDestinationThrows() throws {
        try assertProbe("signal-invalid-destination", outcome: invalidArgs)
    }
}
