import Foundation
import LocalAuthShared
import XCTest

/// What ships beside the code says what the code does: each tool's options
/// are in its man page, and the release is written in one place (VERSION).
final class ReleaseTests: XCTestCase {
    static let root: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    /// The build directory of this test bundle, where the tools were built too.
    static let binaries: String = {
        var url = Bundle(for: ReleaseTests.self).bundleURL
        for _ in 0..<4 {
            if FileManager.default.isExecutableFile(atPath: url.appendingPathComponent("localauthd").path) { return url.path }
            url.deleteLastPathComponent()
        }
        return root + "/.build/debug"
    }()

    /// `tool`'s standard output for `arguments`.
    func run(_ tool: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binaries + "/" + tool)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, "\(tool) \(arguments)")
        return String(decoding: output, as: UTF8.self)
    }

    /// Every `--option` named in `text` (a man page's `\-\-` spelled `--`).
    func options(in text: String) -> Set<String> {
        let plain = text.replacingOccurrences(of: "\\-", with: "-")
        let pattern = try! NSRegularExpression(pattern: "(?<![A-Za-z0-9-])--[a-z][a-z-]*[a-z]")
        let range = NSRange(plain.startIndex..., in: plain)
        return Set(pattern.matches(in: plain, range: range).map { String(plain[Range($0.range, in: plain)!]) })
    }

    func assertManPageMatchesHelp(tool: String, page: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let help = options(in: try run(tool, ["--help"]))
        let manual = options(in: try String(contentsOfFile: Self.root + "/man/" + page, encoding: .utf8))
        XCTAssertFalse(help.isEmpty, "\(tool) --help names no option", file: file, line: line)
        XCTAssertEqual(help.subtracting(manual).sorted(), [], "options of \(tool) --help missing from man/\(page)", file: file, line: line)
        XCTAssertEqual(manual.subtracting(help).sorted(), [], "options in man/\(page) that \(tool) --help does not have", file: file, line: line)
    }

    func testLocalauthdManPageHasEveryOption() throws {
        try assertManPageMatchesHelp(tool: "localauthd", page: "localauthd.8.in")
    }

    func testLocalauthctlManPageHasEveryOption() throws {
        try assertManPageMatchesHelp(tool: "localauthctl", page: "localauthctl.1")
    }

    /// VERSION is the one source; the constant the tools print is checked against it.
    func testVersionIsWrittenOnce() throws {
        let file = try String(contentsOfFile: Self.root + "/VERSION", encoding: .utf8)
        XCTAssertEqual(file, LocalAuthVersion.string + "\n", "VERSION and LocalAuthVersion.string disagree")
        XCTAssertEqual(try run("localauthd", ["--version"]), "localauthd \(LocalAuthVersion.string)\n")
        XCTAssertEqual(try run("localauthctl", ["--version"]), "localauthctl \(LocalAuthVersion.string)\n")
    }
}
