import Foundation
@testable import LocalAuthService
import LocalAuthShared
import XCTest

/// fprintd's layout as `--fprintd` writes and deletes it
/// (Sources/LocalAuthService/Fprintd/FprintdPrints.swift), in a scratch
/// directory: no root, no reader.
final class FprintdStoreTests: XCTestCase {
    override func setUp() {
        super.setUp()
        _ = ServiceLoop.running
    }

    /// fprintd's file storage removes the directories a deleted print leaves
    /// empty, up to the user's (src/file_storage.c,
    /// file_storage_print_data_delete; tests/fprintd.py test_enroll_delete2:
    /// the user's directory is gone, the store stays). Until this, deleting
    /// left `<store>/<user>/<driver>/<device>` behind.
    @ServiceActor
    func testDeletingAUsersLastPrintsLeavesNoDirectoryOfTheirs() async throws {
        let base = FakeState.directory()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let store = PrintStore(stateDirectory: base + "/state", fprintdStore: base + "/fprint", fprintdLayout: true)
        let virtual = Readers.Identity(driver: "virtual_device", deviceID: "0")
        let other = Readers.Identity(driver: "synaptics", deviceID: "1")
        let enrolled: [(String, UInt32, Readers.Identity, FingerName)] = [
            ("alice", 4242, virtual, .rightIndex),
            ("alice", 4242, virtual, .leftThumb),
            ("alice", 4242, other, .leftThumb),
            ("bob", 4243, virtual, .leftThumb),
        ]
        for (user, uid, reader, finger) in enrolled {
            try store.saveInFprintdLayout(bytes: [1, 2, 3], finger: finger, username: user, uid: uid, reader: reader)
        }
        func path(_ user: String, _ reader: Readers.Identity, _ finger: FingerName) throws -> String {
            try XCTUnwrap(store.fprintdPath(username: user, reader: reader, finger: finger))
        }
        func exists(_ relative: String) -> Bool { FileManager.default.fileExists(atPath: base + "/fprint/" + relative) }

        try store.removeFromFprintdLayout(try path("alice", virtual, .rightIndex))
        XCTAssertFalse(exists("alice/virtual_device/0/7"))
        XCTAssertTrue(exists("alice/virtual_device/0/1"), "another print keeps its directories")
        try store.removeFromFprintdLayout(try path("alice", virtual, .leftThumb))
        XCTAssertFalse(exists("alice/virtual_device"), "the reader's and the driver's directories went with its last print")
        XCTAssertTrue(exists("alice/synaptics/1/1"), "a print on another reader keeps the user's directory")
        try store.removeFromFprintdLayout(try path("alice", other, .leftThumb))
        XCTAssertFalse(exists("alice"), "the user's last print: no directory of theirs")
        XCTAssertTrue(exists("bob/virtual_device/0/1"), "another user's prints stay")
        try store.removeFromFprintdLayout(try path("bob", virtual, .leftThumb))
        XCTAssertFalse(exists("bob"))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: base + "/fprint"), [], "the store itself stays")
        XCTAssertThrowsError(try store.removeFromFprintdLayout(base + "/state/x"), "only fprintd's store")
    }
}
