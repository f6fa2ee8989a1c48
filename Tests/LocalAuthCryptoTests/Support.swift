import Foundation
import XCTest

/// The `openssl` command-line tool as an independent second implementation:
/// what our code makes, it must accept, and the other way round.
struct OpenSSLTool {
    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("lac-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    func write(_ name: String, _ bytes: [UInt8]) throws { try Data(bytes).write(to: URL(fileURLWithPath: path(name))) }

    func read(_ name: String) throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: path(name)))) }

    /// Runs `openssl arguments…` in the directory; returns its exit status and standard output.
    @discardableResult
    func run(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        process.currentDirectoryURL = directory
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// `openssl kdf` prints bytes as "AB:CD:…".
    static func bytes(fromColonHex text: String) -> [UInt8] {
        text.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ":").compactMap { UInt8($0, radix: 16) }
    }
}

func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

func bytes(hex text: String) -> [UInt8] {
    let chars = Array(text.utf8)
    return stride(from: 0, to: chars.count, by: 2).map { UInt8(String(decoding: chars[$0..<$0 + 2], as: UTF8.self), radix: 16)! }
}

func pem(_ der: [UInt8], _ label: String) -> String {
    "-----BEGIN \(label)-----\n" + Data(der).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        + "\n-----END \(label)-----\n"
}

/// Asserts that `body` throws a CryptoError-like error whose `code` is `expected`.
func XCTAssertThrowsCode<E: Error & Equatable, C: Equatable>(_ body: @autoclosure () throws -> some Any, _ expected: C,
                                                            code: (E) -> C, _ message: String = "",
                                                            file: StaticString = #filePath, line: UInt = #line) {
    do {
        _ = try body()
        XCTFail("did not throw; expected \(expected) \(message)", file: file, line: line)
    } catch let error as E {
        XCTAssertEqual(code(error), expected, "\(error) \(message)", file: file, line: line)
    } catch {
        XCTFail("threw \(error); expected \(expected) \(message)", file: file, line: line)
    }
}
