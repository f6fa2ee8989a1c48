import DBusCore
import Foundation
@testable import LocalAuthService
import LocalAuthShared
import XCTest

/// Each contract's table of errors (`ErrorTable`) names every kind the
/// service can throw in that contract's words: org.example.LocalAuth's and
/// its file (dbus/org.example.LocalAuth.xml) name the same errors; fprintd's
/// uses fprintd's names (and D-Bus's) only, each of them.
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
            let name = ErrorTable.localAuth.name(of: kind)
            let short = String(name.split(separator: ".").last!)
            if name.hasPrefix(LocalAuthBus.errorPrefix) {
                XCTAssertTrue(xml.contains(short), "\(kind): the contract never names \(short)")
            } else {
                XCTAssertTrue(name.hasPrefix("org.freedesktop.DBus.Error."), "\(kind): \(name) is neither ours nor D-Bus's")
            }
        }
    }

    func testEveryErrorTheContractListsIsAKind() throws {
        let known = Set(ServiceError.Kind.allCases.map { String(ErrorTable.localAuth.name(of: $0).split(separator: ".").last!) })
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

    /// Two kinds share a name in org.example.LocalAuth only where this test says why.
    func testNamesAreDistinctAndComeFromTheSharedTable() {
        let aliases: [ServiceError.Kind: ServiceError.Kind] = [
            .noSuchUser: .invalidArgs,  // a `user` option naming no one is a bad argument
            .readerPrintNotDeleted: .storageFailed,  // the chip is storage too
            .notClaimed: .failed, .nothingInProgress: .failed,  // fprintd's alone: never thrown here
        ]
        let kinds = ServiceError.Kind.allCases.filter { aliases[$0] == nil }
        let names = kinds.map { ErrorTable.localAuth.name(of: $0) }
        XCTAssertEqual(Set(names).count, names.count, "two kinds share a name on the wire")
        for (kind, same) in aliases {
            XCTAssertEqual(ErrorTable.localAuth.name(of: kind), ErrorTable.localAuth.name(of: same), "\(kind)")
        }
        for code in LocalAuthErrorCode.allCases {
            XCTAssertEqual(ErrorTable.localAuth.name(of: .la(code)), code.dbusName)
        }
        XCTAssertEqual(ServiceError(.rightNotFound, "x").dbusError(.localAuth).name.rawValue, LocalAuthRightsError.rightNotFound)
    }

    /// `allCases` is derived from the compiler's list (`Kind.Case`): every
    /// case appears, each kind once, and each kind is found under its own case.
    func testEveryKindIsListedOnce() {
        let kinds = ServiceError.Kind.allCases
        XCTAssertEqual(Set(kinds).count, kinds.count)
        XCTAssertEqual(Set(kinds.map(\.case)), Set(ServiceError.Kind.Case.allCases))
        for kind in kinds { XCTAssertTrue(ServiceError.Kind.kinds(of: kind.case).contains(kind), "\(kind)") }
        XCTAssertEqual(kinds.filter { $0.case == .la }.count, LocalAuthErrorCode.allCases.count)
    }

    /// On net.reactivated.Fprint a caller only ever sees fprintd's names (and
    /// D-Bus's own), never org.example.LocalAuth's; every name fprintd
    /// documents is one a kind reaches.
    func testFprintdsTableSpeaksOnlyFprintdsNames() {
        var reached = Set<String>()
        for kind in ServiceError.Kind.allCases {
            let name = ErrorTable.fprintd.name(of: kind)
            reached.insert(name)
            XCTAssertTrue(FprintdBus.Error(rawValue: name) != nil || name.hasPrefix("org.freedesktop.DBus.Error."),
                          "\(kind): \(name) is not one of fprintd's")
            XCTAssertFalse(name.hasPrefix(LocalAuthBus.errorPrefix), "\(kind)")
        }
        for name in FprintdBus.Error.allCases.map(\.rawValue) { XCTAssertTrue(reached.contains(name), "no kind is \(name)") }
        // The names fprintd's clients act on, from the kinds fprintd's front-end throws.
        let expected: [ServiceError.Kind: FprintdBus.Error] = [
            .notClaimed: .claimDevice, .busy: .alreadyInUse, .failed: .internal, .permissionDenied: .permissionDenied,
            .notEnrolled: .noEnrolledPrints, .nothingInProgress: .noActionInProgress, .invalidArgs: .invalidFingername,
            .la(.biometryNotAvailable): .noSuchDevice, .storageFailed: .printsNotDeleted,
            .readerPrintNotDeleted: .printsNotDeletedFromDevice, .la(.systemCancel): .internal, .noSuchUser: .internal,
            .la(.biometryLockout): .permissionDenied, .notAtTheReader: .permissionDenied,
        ]
        for (kind, name) in expected { XCTAssertEqual(ErrorTable.fprintd.name(of: kind), name.rawValue, "\(kind)") }
        XCTAssertEqual(ErrorTable.fprintd.name(of: .limitExceeded), "org.freedesktop.DBus.Error.LimitsExceeded")
    }

    /// In logs an error reads by its kind, in no contract's words (`ServiceError.code`).
    func testLogsNameTheKindNotAContractsError() {
        XCTAssertEqual("\(ServiceError(.la(.systemCancel), "asleep"))", "LAError.systemCancel: asleep")
        XCTAssertEqual("\(ServiceError(.permissionDenied, "no"))", "permissionDenied: no")
        let names = ServiceError.Kind.allCases.map(\.name)
        XCTAssertEqual(Set(names).count, names.count, "each kind its own name")
        XCTAssertFalse(names.contains { $0.contains(".Error.") || $0.contains("org.") }, "\(names)")
    }
}
