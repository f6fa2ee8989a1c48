import Foundation
@testable import LocalAuthRights
import XCTest

/// A fresh state directory per test, removed afterwards.
final class StateDirectory {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("lar-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    var machineKeyPath: String { SoftwareKeyProtector.machineKeyPath(stateDirectory: path) }

    func mode(_ path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as! NSNumber).intValue
    }
}

func owner(_ identifier: String = "vault", app: String = "org.example.Notes", uid: UInt32 = 1000) throws -> RightOwner {
    try RightOwner(uid: uid, appID: app, identifier: identifier)
}

/// Asserts that `body` throws a RightsError with `expected` code.
func XCTAssertRightsError(_ body: @autoclosure () throws -> some Any, _ expected: RightsError.Code, _ message: String = "",
                          file: StaticString = #filePath, line: UInt = #line) {
    do {
        _ = try body()
        XCTFail("did not throw; expected \(expected) \(message)", file: file, line: line)
    } catch let error as RightsError {
        XCTAssertEqual(error.code, expected, "\(error) \(message)", file: file, line: line)
    } catch {
        XCTFail("threw \(error); expected \(expected) \(message)", file: file, line: line)
    }
}

/// Whether `needle` occurs anywhere in `haystack`.
func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard !needle.isEmpty, needle.count <= haystack.count else { return needle.isEmpty }
    for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
        if Array(haystack[start..<start + needle.count]) == needle { return true }
    }
    return false
}
