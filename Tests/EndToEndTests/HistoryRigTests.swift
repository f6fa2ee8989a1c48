import Foundation
import Glibc
import LocalAuthShared
import LocalAuthentication
import RigSupport
import XCTest

/// The history of approvals on the rig (docs/HISTORY.md): the rig has no
/// journald, so the service writes each entry as one line on its stderr with
/// the journal's fields (History/JournalWriter.swift), read here from its
/// log. PAM's and fprintd's entries are tested in PamTests and
/// FprintdContractTests, with their helpers.
final class HistoryRigTests: RigTestCase, @unchecked Sendable {
    typealias Field = LocalAuthHistory.Field

    func testAGrantedAndARefusedEvaluationAreEachOneEntryWithTheProvenProgram() async throws {
        try await enroll(as: "owner-finger")
        present("owner-finger")
        let granted = await evaluate()
        XCTAssertTrue(granted.succeeded, "\(granted)")
        present("someone-else", times: 3)
        let refused = await evaluate()
        XCTAssertEqual(refused.code, .authenticationFailed)

        let entries = try waitForHistory(count: 2)
        XCTAssertEqual(entries.count, 2, service.log)
        let me = try XCTUnwrap(Self.ownExecutable)
        for (entry, outcome) in zip(entries, [LocalAuthHistory.Outcome.granted, .refused]) {
            XCTAssertEqual(entry["MESSAGE_ID"], outcome.messageID)
            XCTAssertEqual(entry[Field.outcome], outcome.rawValue)
            XCTAssertEqual(entry[Field.context], "app")
            XCTAssertEqual(entry[Field.method], "EvaluatePolicy")
            XCTAssertEqual(entry[Field.program], me, "the program as /proc proves it")
            XCTAssertEqual(entry[Field.userUID], "0")
            XCTAssertEqual(entry[Field.callerUID], "0")
            XCTAssertTrue(entry[Field.reader]?.hasPrefix("virtual_device/") == true, "\(entry)")
        }
        XCTAssertNil(entries[0][Field.error])
        XCTAssertEqual(entries[1][Field.error], "org.example.LocalAuth.Error.AuthenticationFailed")
        // The enrollment and the preflights decided nothing about a finger.
        XCTAssertEqual(historyEntries().count, 2, service.log)
    }

    /// A name the app declares is recorded as declared, beside the proven program.
    func testADeclaredNameIsKeptApartFromTheProvenProgram() async throws {
        try await enroll(as: "owner-finger")
        present("owner-finger")
        let outcome = try gdbus("EvaluatePolicy", ["1", "Unlock", "{'app-name': <'Bitwarden'>}"])
        XCTAssertEqual(outcome.status, 0, outcome.output)
        let entry = try XCTUnwrap(try waitForHistory(count: 1).first)
        XCTAssertEqual(entry[Field.declaredName], "Bitwarden")
        XCTAssertEqual(entry[Field.program], "/usr/bin/gdbus")
        XCTAssertEqual(entry[Field.outcome], "granted")
    }

    static var ownExecutable: String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        return count > 0 ? String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self) : nil
    }
}

extension RigTestCase {
    /// The history entries in the service's log so far, oldest first: each
    /// `<N>history: NAME="value" …` line's fields.
    func historyEntries() -> [[String: String]] {
        service.log.split(separator: "\n").compactMap { line in
            guard let start = line.range(of: ">history: ") else { return nil }
            return Self.historyFields(line[start.upperBound...])
        }
    }

    /// Waits until the log holds at least `count` entries, and returns them.
    func waitForHistory(count: Int, timeout: Double = 10) throws -> [[String: String]] {
        try waitUntil("\(count) history entries in the service's log", timeout: timeout) { historyEntries().count >= count }
        return historyEntries()
    }

    /// `NAME="value"` pairs, `\"`, `\\` and `\n` unescaped.
    static func historyFields(_ text: Substring) -> [String: String] {
        var fields: [String: String] = [:]
        var rest = text[...]
        while let equals = rest.range(of: "=\"") {
            let name = rest[..<equals.lowerBound].trimmingCharacters(in: .whitespaces)
            var value = ""
            var index = equals.upperBound
            while index < rest.endIndex, rest[index] != "\"" {
                if rest[index] == "\\", rest.index(after: index) < rest.endIndex {
                    index = rest.index(after: index)
                    value.append(rest[index] == "n" ? "\n" : rest[index])
                } else {
                    value.append(rest[index])
                }
                index = rest.index(after: index)
            }
            fields[name] = value
            rest = index < rest.endIndex ? rest[rest.index(after: index)...] : ""
        }
        return fields
    }
}
