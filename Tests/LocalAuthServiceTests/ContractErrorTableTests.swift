import DBusCore
import Foundation
@testable import LocalAuthService
import LocalAuthShared
import XCTest

/// The service's one table of errors (`ServiceError.Kind.contractName`) and
/// the contract file (dbus/org.example.LocalAuth.xml) name the same errors:
/// every kind the service can throw is documented, and every error the
/// contract documents is one the service has.
final class ContractErrorTableTests: XCTestCase {
    private func contract() throws -> String {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return try String(contentsOf: url.appendingPathComponent("dbus/org.example.LocalAuth.xml"), encoding: .utf8)
    }

    /// The short names the contract lists after "Errors:" in each method's
    /// documentation, and in the file's header.
    private func documentedNames(_ xml: String) -> Set<String> {
        var names = Set<String>()
        let word = try! NSRegularExpression(pattern: "\\b([A-Z][A-Za-z]+)\\b")
        for block in xml.components(separatedBy: "Errors").dropFirst() {
            // The list runs to the end of its sentence; parentheses explain, they do not name.
            var sentence = String(block.prefix(while: { $0 != "." }))
            while let open = sentence.firstIndex(of: "("), let close = sentence[open...].firstIndex(of: ")") {
                sentence.removeSubrange(open...close)
            }
            let range = NSRange(sentence.startIndex..., in: sentence)
            for match in word.matches(in: sentence, range: range) {
                names.insert(String(sentence[Range(match.range(at: 1), in: sentence)!]))
            }
        }
        return names
    }

    func testEveryKindIsNamedInTheContract() throws {
        let xml = try contract()
        for kind in ServiceError.Kind.allCases {
            let name = kind.contractName
            let short = String(name.split(separator: ".").last!)
            if name.hasPrefix(LocalAuthBus.errorPrefix) {
                XCTAssertTrue(xml.contains(short), "\(kind): the contract never names \(short)")
            } else {
                XCTAssertTrue(name.hasPrefix("org.freedesktop.DBus.Error."), "\(kind): \(name) is neither ours nor D-Bus's")
            }
        }
    }

    func testEveryErrorTheContractListsIsAKind() throws {
        let known = Set(ServiceError.Kind.allCases.map { String($0.contractName.split(separator: ".").last!) })
        // Words of the lists that are not error names.
        let prose: Set<String> = [
            "Errors", "EvaluatePolicy", "Enroll", "DeleteEnrolledFinger", "DeleteEnrolledFingers",
            "LAError", "Name", "Code",
        ]
        let listed = documentedNames(try contract()).subtracting(prose)
        XCTAssertFalse(listed.isEmpty)
        for name in listed.sorted() {
            XCTAssertTrue(known.contains(name), "the contract lists \(name), which the service's table lacks")
        }
    }

    func testNamesAreDistinctAndComeFromTheSharedTable() {
        let names = ServiceError.Kind.allCases.map(\.contractName)
        XCTAssertEqual(Set(names).count, names.count, "two kinds share a name on the wire")
        for code in LocalAuthErrorCode.allCases {
            XCTAssertEqual(ServiceError.Kind.la(code).contractName, code.dbusName)
        }
        XCTAssertEqual(ServiceError(.rightNotFound, "x").dbusError.name.rawValue, LocalAuthRightsError.rightNotFound)
    }
}
