import Foundation
@testable import LocalAuthService
import XCTest

/// fprintd's contract as we declare it: the method table of
/// net.reactivated.Fprint.Device, our copy of its XML, the XML Debian's
/// fprintd installs, and our polkit actions say the same thing.
final class FprintdTableTests: XCTestCase {
    private static let root: URL = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url
    }()

    private struct Member: Equatable, CustomStringConvertible {
        let kind: String
        let signature: String
        var description: String { "\(kind)(\(signature))" }
    }

    /// The interface's methods (their in-signature), signals and properties (their types).
    private func members(of interface: String, in xml: String) -> [String: Member] {
        let body = xml.components(separatedBy: "<interface name=\"\(interface)\">")[1].components(separatedBy: "</interface>")[0]
        var result: [String: Member] = [:]
        for kind in ["method", "signal", "property"] {
            for chunk in body.components(separatedBy: "<\(kind) name=\"").dropFirst() {
                let name = String(chunk.prefix { $0 != "\"" })
                if kind == "property" {
                    result[name] = Member(kind: kind, signature: chunk.components(separatedBy: "type=\"")[1].prefix { $0 != "\"" }.description)
                    continue
                }
                let end = chunk.range(of: "</\(kind)>").map { chunk[..<$0.lowerBound] } ?? chunk.prefix { $0 != ">" }
                var signature = ""
                for arg in end.components(separatedBy: "<arg ").dropFirst() where kind == "signal" || arg.contains("direction=\"in\"") {
                    signature += arg.components(separatedBy: "type=\"")[1].prefix { $0 != "\"" }
                }
                result[name] = Member(kind: kind, signature: signature)
            }
        }
        return result
    }

    private func read(_ path: String) throws -> String {
        try String(contentsOf: URL(fileURLWithPath: path), encoding: .utf8)
    }

    func testTheMethodTableMatchesOurXML() throws {
        let device = members(of: FprintdBus.deviceInterface,
                             in: try read(Self.root.appendingPathComponent("dbus/net.reactivated.Fprint.Device.xml").path))
        let methods = device.filter { $0.value.kind == "method" }
        XCTAssertEqual(Set(methods.keys), Set(FprintdDevice.methods.keys))
        for (name, spec) in FprintdDevice.methods {
            XCTAssertEqual(methods[name]?.signature, spec.signature, name)
        }
        XCTAssertEqual(Set(device.filter { $0.value.kind == "property" }.keys), Set(FprintdBus.Property.all))
        XCTAssertEqual(Set(device.filter { $0.value.kind == "signal" }.keys),
                       [FprintdBus.Signal.verifyStatus, FprintdBus.Signal.enrollStatus, FprintdBus.Signal.verifyFingerSelected])
        let manager = members(of: FprintdBus.managerInterface,
                              in: try read(Self.root.appendingPathComponent("dbus/net.reactivated.Fprint.Manager.xml").path))
        XCTAssertEqual(manager.mapValues(\.signature), FprintdServer.contract.methods.mapValues(\.signature))
        // What Introspect answers is that very file.
        XCTAssertEqual(FprintdServer.deviceXML,
                       try read(Self.root.appendingPathComponent("dbus/net.reactivated.Fprint.Device.xml").path))
    }

    /// Our copy declares fprintd 1.94's interface exactly: every member, with its types.
    func testOurXMLIsFprintdsInterface() throws {
        for (file, interface) in [("net.reactivated.Fprint.Device.xml", FprintdBus.deviceInterface),
                                  ("net.reactivated.Fprint.Manager.xml", FprintdBus.managerInterface)] {
            let debian = "/usr/share/dbus-1/interfaces/" + file
            guard FileManager.default.fileExists(atPath: debian) else { throw XCTSkip("Debian's fprintd is not installed") }
            let theirs = members(of: interface, in: try read(debian))
            let ours = members(of: interface, in: try read(Self.root.appendingPathComponent("dbus/" + file).path))
            XCTAssertEqual(ours, theirs, file)
            XCTAssertFalse(ours.isEmpty)
        }
        // Every error name fprintd documents is one we can answer.
        let documented = try read("/usr/share/dbus-1/interfaces/net.reactivated.Fprint.Device.xml")
        for chunk in documented.components(separatedBy: "\"net.reactivated.Fprint.Error.").dropFirst() {
            let name = "net.reactivated.Fprint.Error." + chunk.prefix { $0 != "\"" }
            XCTAssertNotNil(FprintdBus.Error(rawValue: name), name)
        }
        // And the status strings, both ways: every one fprintd documents is
        // one we send (fprintd 1.94.5, Debian 13, added verify-too-fast and
        // enroll-too-fast for libfprint's FP_DEVICE_RETRY_TOO_FAST), and every
        // one we send is documented, but those a newer fprintd added: an older
        // one's libfprint never reports their cause (Debian 12's 1.94.2 with
        // libfprint 1.94.5).
        let theirs = Set(documented.components(separatedBy: "<doc:term>").dropFirst().map { String($0.prefix { $0 != "<" }) }
            .filter { $0.hasPrefix("verify-") || $0.hasPrefix("enroll-") })
        let ours = Set(FprintdBus.VerifyResult.allCases.map(\.rawValue) + FprintdBus.EnrollResult.allCases.map(\.rawValue))
        XCTAssertFalse(theirs.isEmpty)
        XCTAssertEqual(theirs.subtracting(ours), [], "statuses the installed fprintd documents that we never send")
        XCTAssertTrue(ours.subtracting(theirs).isSubset(of: ["verify-too-fast", "enroll-too-fast"]),
                      "statuses we send that the installed fprintd does not document: \(ours.subtracting(theirs).sorted())")
    }

    /// Our polkit file (for the replacing package) has fprintd's action ids and defaults.
    func testOurPolkitActionsAreFprintds() throws {
        func actions(_ text: String) -> [String: String] {
            var result: [String: String] = [:]
            for chunk in text.components(separatedBy: "<action id=\"").dropFirst() {
                let id = String(chunk.prefix { $0 != "\"" })
                let defaults = chunk.components(separatedBy: "<defaults>")[1].components(separatedBy: "</defaults>")[0]
                result[id] = defaults.filter { !$0.isWhitespace }
            }
            return result
        }
        let ours = actions(try read(Self.root.appendingPathComponent("polkit/net.reactivated.fprint.device.policy").path))
        XCTAssertEqual(Set(ours.keys), [FprintdBus.Action.verify.rawValue, FprintdBus.Action.enroll.rawValue,
                                        FprintdBus.Action.setUsername.rawValue])
        let debian = "/usr/share/polkit-1/actions/net.reactivated.fprint.device.policy"
        guard FileManager.default.fileExists(atPath: debian) else { throw XCTSkip("Debian's fprintd is not installed") }
        XCTAssertEqual(ours, actions(try read(debian)))
    }

    /// STATUS strings: which end the operation (done) and which ask for another scan.
    func testDoneFollowsFprintd() {
        XCTAssertEqual(FprintdBus.VerifyResult.allCases.filter { !$0.done }.map(\.rawValue),
                       ["verify-retry-scan", "verify-swipe-too-short", "verify-finger-not-centered", "verify-remove-and-retry",
                        "verify-too-fast"])
        XCTAssertEqual(FprintdBus.EnrollResult.allCases.filter { !$0.done }.map(\.rawValue),
                       ["enroll-stage-passed", "enroll-retry-scan", "enroll-swipe-too-short", "enroll-finger-not-centered",
                        "enroll-remove-and-retry", "enroll-too-fast"])
    }
}
