import Foundation
import XCTest

/// The docs and the comments name only Swift files that exist: a file moved,
/// split or deleted must take its mentions along (issue 39). Scanned: every
/// Markdown file in docs/, README.md and CONTRIBUTING.md, and the comments
/// (`//` to the end of the line) of the package's Swift files. A name with a
/// slash (`Bus/CallRecord.swift`, `Sources/DBusCore/Message.swift`) must be the
/// end of a file's path; a bare name (`Service.swift`) some file's name. A
/// pattern (`…Seams.swift`, `*.swift`, `<Component>.swift`) is not a name.
/// BENCHMARKS.md and NEWS.md are not scanned: they record the tree as it was.
final class DocReferenceTests: XCTestCase {
    func testEveryNamedSwiftFileExists() throws {
        let root = ReleaseTests.root
        let swiftFiles = Self.files(under: root).filter { $0.hasSuffix(".swift") }
        let names = Set(swiftFiles.map { ($0 as NSString).lastPathComponent })

        var texts: [(String, [Substring])] = []
        let docs = try FileManager.default.contentsOfDirectory(atPath: root + "/docs").filter { $0.hasSuffix(".md") }.sorted()
        for doc in ["README.md", "CONTRIBUTING.md"] + docs.map({ "docs/" + $0 }) {
            let text = try String(contentsOfFile: root + "/" + doc, encoding: .utf8)
            texts.append((doc, text.split(separator: "\n", omittingEmptySubsequences: false)))
        }
        for file in swiftFiles.sorted() {
            let text = try String(contentsOfFile: root + "/" + file, encoding: .utf8)
            let comments = text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> Substring in
                guard let start = line.range(of: "//") else { return "" }
                return line[start.lowerBound...]
            }
            texts.append((file, comments))
        }

        var checked = 0
        var missing: [String] = []
        for (file, lines) in texts {
            for (index, line) in lines.enumerated() {
                for name in Self.swiftNames(in: line) {
                    checked += 1
                    let found =
                        name.contains("/")
                        ? swiftFiles.contains { $0 == name || $0.hasSuffix("/" + name) }
                        : names.contains(name)
                    if !found { missing.append("\(file):\(index + 1): \(name)") }
                }
            }
        }
        XCTAssertGreaterThan(checked, 100, "the scan found almost no names: is the root right? \(root)")
        XCTAssert(missing.isEmpty, "named Swift files that do not exist:\n" + missing.joined(separator: "\n"))
    }

    /// The names ending in `.swift` in a line: the longest run of name
    /// characters before each `.swift` not followed by a name character,
    /// without a leading `./`; none after a pattern's `…`, `*`, `<`, `>`, `{`, `}` or `$`.
    static func swiftNames(in line: Substring) -> [String] {
        let characters = Array(line)
        let suffix = Array(".swift")
        func isNameCharacter(_ c: Character) -> Bool {
            c.isASCII && (c.isLetter || c.isNumber || "_./+-".contains(c))
        }
        var names: [String] = []
        var index = 0
        while index + suffix.count <= characters.count {
            guard Array(characters[index..<index + suffix.count]) == suffix else {
                index += 1
                continue
            }
            let end = index + suffix.count
            defer { index = end }
            if end < characters.count, characters[end].isASCII,
                characters[end].isLetter || characters[end].isNumber || "_+-".contains(characters[end])
            {
                continue
            }
            var start = index
            while start > 0, isNameCharacter(characters[start - 1]) { start -= 1 }
            if start > 0, "…*<>{}$".contains(characters[start - 1]) { continue }
            guard start < index else { continue }
            var name = String(characters[start..<end])
            while name.hasPrefix("./") { name.removeFirst(2) }
            while name.hasPrefix(".") || name.hasPrefix("/") || name.hasPrefix("-") { name.removeFirst() }
            guard let first = name.first, first.isLetter || first.isNumber || first == "_", name != ".swift" else { continue }
            names.append(name)
        }
        return names
    }

    /// Every file's path relative to the root, outside build output and VCS.
    static func files(under root: String) -> [String] {
        let skipped: Set<String> = [".build", ".git", "out", ".swiftpm", "node_modules"]
        var found: [String] = []
        guard let walker = FileManager.default.enumerator(atPath: root) else { return [] }
        while let path = walker.nextObject() as? String {
            let last = (path as NSString).lastPathComponent
            if skipped.contains(last) || last.hasPrefix("obj-") {
                walker.skipDescendants()
                continue
            }
            found.append(path)
        }
        return found
    }

    func testTheScanFindsNamesAndSkipsPatterns() {
        XCTAssertEqual(Self.swiftNames(in: "see `Bus/CallRecord.swift` and Service.swift."), ["Bus/CallRecord.swift", "Service.swift"])
        XCTAssertEqual(Self.swiftNames(in: "(./Sources/A.swift)"), ["Sources/A.swift"])
        XCTAssertEqual(Self.swiftNames(in: "`…Seams.swift`, *.swift, <Component>.swift, X.swiftinterface, `.swift-format`"), [])
    }
}
