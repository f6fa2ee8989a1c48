import Foundation
import RigSupport
import XCTest

/// The reliability suite's short version (scripts/reliability/run --short):
/// a few hundred calls generated from the contract, a few kills and faults,
/// against the localauthd this test bundle was built with, on a rig of its
/// own. `make reliability` runs the full version and writes RELIABILITY.md's
/// table. Known service bugs (the suite's rows.KNOWN) are reported, not fatal.
final class ReliabilityTests: XCTestCase {
    func testShortReliabilitySuitePasses() throws {
        let json = NSTemporaryDirectory() + "reliability-\(getpid()).json"
        defer { try? FileManager.default.removeItem(atPath: json) }
        let started = Date()
        let outcome = try runProgram("/usr/bin/python3",
                                     [Paths.root + "/scripts/reliability/run", "--short", "--allow-known",
                                      "--localauthd", Paths.localauthd, "--json", json],
                                     // The end-to-end tests run under the rig's lock already.
                                     environment: ["LOCALAUTH_RIG_LOCKED": "1"], timeout: 300)
        print("reliability --short: \(Int(Date().timeIntervalSince(started))) s")
        XCTAssertEqual(outcome.status, 0, outcome.output)
        let data = try Data(contentsOf: URL(fileURLWithPath: json))
        let document = try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [String: Any])
        let rows = try XCTUnwrap(document["rows"] as? [[String: Any]])
        XCTAssertEqual(rows.count, 9, "every row ran")
        for row in rows {
            let checks = try XCTUnwrap(row["checks"] as? [[String: Any]])
            XCTAssertFalse(checks.isEmpty, "\(row["row"] ?? "?") has checks")
            for check in checks where (check["passed"] as? Bool) != true {
                if let known = check["known"] as? String {
                    print("known service bug \(known): \(row["row"] ?? "?"): \(check["what"] ?? "")")
                } else {
                    XCTFail("\(row["row"] ?? "?"): \(check["what"] ?? "") measured \(check["value"] ?? "") goal \(check["goal"] ?? "")")
                }
            }
        }
    }
}
