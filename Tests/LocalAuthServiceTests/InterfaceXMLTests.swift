import Foundation
@testable import LocalAuthService
import XCTest

/// What Introspect answers is dbus/*.xml byte for byte: the strings the
/// EmbedInterfaceXML plugin generates at build time (LocalAuthInterface) are
/// the files, and the contracts serve those strings.
final class InterfaceXMLTests: XCTestCase {
    private static let dbus: URL = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.appendingPathComponent("dbus")
    }()

    func testEachContractServesItsFileExactly() throws {
        for (file, served) in [
            ("org.example.LocalAuth.xml", LocalAuthContract.contract.introspection),
            ("net.reactivated.Fprint.Manager.xml", FprintdServer.contract.introspection),
            ("net.reactivated.Fprint.Device.xml", FprintdDevice.contract.introspection),
        ] {
            let bytes = try Data(contentsOf: Self.dbus.appendingPathComponent(file))
            XCTAssertFalse(bytes.isEmpty, file)
            XCTAssertEqual(Array(served.utf8), Array(bytes), file)
        }
    }
}
