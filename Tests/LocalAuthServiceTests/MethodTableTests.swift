import DBusCore
import Foundation
@testable import LocalAuthService
import LocalAuthShared
import XCTest

/// The method table (the service's one pairing of methods with signatures and
/// polkit actions) and the contract file say the same thing.
final class MethodTableTests: XCTestCase {
    private struct Declared {
        let inSignature: String
        let comment: String
    }

    /// Methods of org.example.LocalAuth in dbus/org.example.LocalAuth.xml, with
    /// their in-arguments and the comment just before each.
    private func declaredMethods() throws -> [String: Declared] {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        let xml = try String(contentsOf: url.appendingPathComponent("dbus/org.example.LocalAuth.xml"), encoding: .utf8)
        let interface = xml.components(separatedBy: "<interface name=\"org.example.LocalAuth\">")[1]
            .components(separatedBy: "</interface>")[0]
        var result: [String: Declared] = [:]
        var comment = ""
        var rest = Substring(interface)
        while let open = rest.range(of: "<") {
            rest = rest[open.lowerBound...]
            if rest.hasPrefix("<!--") {
                let end = rest.range(of: "-->")!
                comment = String(rest[rest.startIndex..<end.upperBound])
                rest = rest[end.upperBound...]
            } else if rest.hasPrefix("<method name=\"") {
                let nameStart = rest.index(rest.startIndex, offsetBy: 14)
                let name = String(rest[nameStart...].prefix { $0 != "\"" })
                let tagEnd = rest.range(of: ">")!
                var body = Substring("")
                if rest[..<tagEnd.lowerBound].hasSuffix("/") {
                    rest = rest[tagEnd.upperBound...]
                } else {
                    let close = rest.range(of: "</method>")!
                    body = rest[tagEnd.upperBound..<close.lowerBound]
                    rest = rest[close.upperBound...]
                }
                var signature = ""
                for arg in body.components(separatedBy: "<arg ").dropFirst() where arg.contains("direction=\"in\"") {
                    signature += arg.components(separatedBy: "type=\"")[1].prefix { $0 != "\"" }
                }
                result[name] = Declared(inSignature: signature, comment: comment)
            } else {
                rest = rest.dropFirst()
            }
        }
        return result
    }

    func testEveryMethodIsDeclaredWithItsSignatureAndAction() throws {
        let declared = try declaredMethods()
        XCTAssertEqual(Set(declared.keys), Set(LocalAuthContract.methods.keys))
        for (name, spec) in LocalAuthContract.methods {
            guard let method = declared[name] else { continue }
            XCTAssertEqual(method.inSignature, spec.signature, name)
            let polkit = method.comment.components(separatedBy: "polkit:").dropFirst().joined()
            if let action = spec.authorization.actions.first {
                XCTAssertEqual(spec.authorization.actions.count, 1, name)
                XCTAssertTrue(polkit.contains(action), "\(name): the contract should name \(action)")
            } else {
                XCTAssertTrue(polkit.hasPrefix(" none"), "\(name): the contract should say polkit: none")
            }
            // A row whose arguments can name another user (a `user` option)
            // needs manage for it, and the contract must say so.
            if let sample = Self.sampleArguments(spec.signature, user: "someone-else"),
               let decoded = try? spec.decode(sample), decoded.namedUser == "someone-else" {
                XCTAssertTrue(polkit.contains(PolkitAction.manage.rawValue), "\(name): another user's prints need manage")
                XCTAssertEqual(Array(spec.signature.suffix(5)), Array("a{sv}"), name)
            }
        }
    }

    /// A plausible body for `signature`, whose options name `user`.
    static func sampleArguments(_ signature: String, user: String) -> [DBusValue]? {
        var values: [DBusValue] = []
        var rest = Substring(signature)
        while !rest.isEmpty {
            if rest.hasPrefix("a{sv}") {
                values.append(.dictionary([LocalAuthBus.PrintOption.user: .string(user)]))
                rest = rest.dropFirst(5)
            } else if rest.hasPrefix("ay") {
                values.append(.bytes([1]))
                rest = rest.dropFirst(2)
            } else {
                switch rest.first {
                case "s": values.append(.string("right-index-finger"))
                case "u": values.append(.uint32(1))
                case "o": values.append(.objectPath("/sample"))
                default: return nil
                }
                rest = rest.dropFirst()
            }
        }
        return values
    }

    /// Not only methods: the signals, option keys, statuses and error names the
    /// code sends or reads are the ones the contract file spells.
    func testSignalsOptionsAndErrorsAreTheContracts() throws {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        let xml = try String(contentsOf: url.appendingPathComponent("dbus/org.example.LocalAuth.xml"), encoding: .utf8)
        for signal in [LocalAuthBus.Signal.evaluationStatus, LocalAuthBus.Signal.enrollStatus,
                       LocalAuthBus.Signal.environmentChanged] {
            XCTAssertTrue(xml.contains("<signal name=\"\(signal)\">"), signal)
        }
        for (key, type) in [(LocalAuthBus.Option.requestID, "s"), (LocalAuthBus.Option.fallbackTitle, "s"),
                            (LocalAuthBus.Option.cancelTitle, "s"), (LocalAuthBus.Option.reuseDuration, "d"),
                            (LocalAuthBus.Option.interactionNotAllowed, "b"),
                            (LocalAuthBus.PrintOption.user, "s"), (LocalAuthBus.PrintOption.replace, "b")] {
            XCTAssertTrue(xml.contains("\(key) (\(type))") || xml.contains("\"\(key)\" (\(type))"), "option \(key) (\(type))")
        }
        typealias Key = LocalAuthBus.EnvironmentKey
        for (key, type) in [(Key.biometryType, "u"), (Key.biometryEnrolled, "b"), (Key.biometryLockedOut, "b"),
                            (Key.biometryStateHash, "ay"), (Key.builtInSensorInaccessible, "b"),
                            (Key.biometryUsable, "b"), (Key.passwordSet, "b")] {
            XCTAssertTrue(xml.contains("\(key) (\(type)"), "environment key \(key) (\(type))")
        }
        for status in EvaluationProgress.allCases.map(\.rawValue) + EnrollProgress.allCases.map(\.rawValue) {
            XCTAssertTrue(xml.contains(status), "status \(status)")
        }
        let serviceErrors = [LocalAuthServiceError.permissionDenied, LocalAuthServiceError.alreadyEnrolled,
                             LocalAuthServiceError.notEnrolled, LocalAuthServiceError.busy, LocalAuthServiceError.readOnly,
                             LocalAuthServiceError.storageFailed, LocalAuthServiceError.limitExceeded,
                             LocalAuthServiceError.readerCoolingDown, LocalAuthServiceError.notAtTheReader]
        for name in serviceErrors + LocalAuthErrorCode.allCases.map(\.dbusName) {
            let suffix = String(name.dropFirst(LocalAuthBus.errorPrefix.count))
            XCTAssertTrue(xml.contains(suffix), "error \(name)")
        }
    }

    func testReaderSelector() {
        XCTAssertEqual(ReaderSelector("virtual_device")?.deviceID, nil)
        XCTAssertEqual(ReaderSelector("synaptics/abc/1")?.deviceID, "abc/1")
        XCTAssertNil(ReaderSelector(""))
        XCTAssertNil(ReaderSelector("/0"))
        XCTAssertNil(ReaderSelector("virtual_device/"))
        XCTAssertTrue(ReaderSelector("virtual_device")!.matches("virtual_device", "7"))
        XCTAssertFalse(ReaderSelector("virtual_device/0")!.matches("virtual_device", "7"))
        XCTAssertFalse(ReaderSelector("virtual_device")!.matches("virtual_device_storage", "0"))
    }
}
