import Foundation
import XCTest

/// CONTRIBUTING's small files: no Swift file in Sources over 400 lines, in
/// every target (issue 39).
final class SourceSizeTests: XCTestCase {
    static let limit = 400
    /// Over the limit for now, each with its reason (none left).
    static let waived: [String: String] = [:]

    func testNoSourceFileIsOverTheLimit() throws {
        let root = ReleaseTests.root
        var over: [String] = []
        for path in DocReferenceTests.files(under: root + "/Sources") where path.hasSuffix(".swift") {
            let file = "Sources/" + path
            let text = try String(contentsOfFile: root + "/" + file, encoding: .utf8)
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).count - (text.hasSuffix("\n") ? 1 : 0)
            if lines > Self.limit, Self.waived[file] == nil { over.append("\(file): \(lines) lines") }
        }
        XCTAssert(over.isEmpty, "Swift files over \(Self.limit) lines (CONTRIBUTING, \"Style\"):\n" + over.joined(separator: "\n"))
    }
}
