import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import XCTest

/// The XML files we install where other programs parse them must be
/// well-formed XML: dbus-daemon refuses to start (or to reload) the whole
/// system bus over one bad file in system.d, and polkitd skips a bad action
/// file. A `--` inside an XML comment is the easy mistake (it is not allowed
/// there): `localauthd --fprintd` in a comment made
/// net.reactivated.Fprint.conf stop a bus from starting.
final class DeploymentFilesTests: XCTestCase {
    /// Every file of these folders with these endings.
    static let deployed: [(folder: String, endings: [String])] = [
        ("dbus", [".conf", ".xml"]),
        ("polkit", [".policy"]),
    ]

    func testEveryInstalledXMLFileIsWellFormed() throws {
        var checked = 0
        for (folder, endings) in Self.deployed {
            let directory = ReleaseTests.root + "/" + folder
            for name in try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
            where endings.contains(where: name.hasSuffix) {
                let data = try Data(contentsOf: URL(fileURLWithPath: directory + "/" + name))
                let parser = XMLParser(data: data)
                // Only well-formedness: the DTDs named by the files are not fetched.
                parser.shouldResolveExternalEntities = false
                XCTAssertTrue(parser.parse(), "\(folder)/\(name) is not well-formed XML: "
                              + "\(parser.parserError.map { "\($0)" } ?? "?") at line \(parser.lineNumber)")
                checked += 1
            }
        }
        XCTAssertGreaterThanOrEqual(checked, 8, "the bus policies, interfaces and polkit actions")
    }
}
