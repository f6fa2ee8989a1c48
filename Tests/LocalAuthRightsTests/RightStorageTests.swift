import Foundation
import Glibc
import LocalAuthCrypto
@testable import LocalAuthRights
import XCTest

/// Rights on disk: saved, loaded, listed and removed per user and app; a
/// damaged or misplaced file is named and skipped while the others load.
final class RightStorageTests: XCTestCase {
    private var state: StateDirectory!
    private var storage: RightStorage!

    override func setUpWithError() throws {
        state = try StateDirectory()
        storage = RightStorage(stateDirectory: state.path, protector: try SoftwareKeyProtector(stateDirectory: state.path))
    }

    override func tearDown() { state = nil }

    @discardableResult
    private func save(_ identifier: String, app: String = "org.example.Notes", uid: UInt32 = 1000,
                      secret: [UInt8] = Array("s3cret".utf8)) throws -> RightRecord {
        let record = try RightRecord.create(owner: owner(identifier, app: app, uid: uid), requirement: .default,
                                            secret: secret, created: 1, protector: storage.protector)
        try storage.save(record)
        return record
    }

    private func names(_ folder: String) throws -> [String] { try FileManager.default.contentsOfDirectory(atPath: folder).sorted() }

    func testSaveLoadListRemove() throws {
        let vault = try save("vault", secret: [1, 2, 3])
        try save("diary")
        try save("vault", app: "org.example.Mail")
        try save("vault", uid: 1001)

        let loaded = try storage.load(owner("vault"))
        XCTAssertEqual(loaded.publicKeyPoint, vault.publicKeyPoint)
        XCTAssertEqual(try loaded.secret(using: storage.protector), [1, 2, 3])

        let listing = try storage.list(uid: 1000, appID: "org.example.Notes")
        XCTAssertEqual(listing.rights.map(\.owner.identifier), ["diary", "vault"])
        XCTAssertTrue(listing.damaged.isEmpty)
        XCTAssertEqual(try storage.list(uid: 1000, appID: "org.example.Mail").rights.count, 1)
        XCTAssertEqual(try storage.list(uid: 1002, appID: "org.example.Notes").rights.count, 0, "nobody's folder is simply empty")

        try storage.remove(owner("diary"))
        XCTAssertRightsError(try storage.load(owner("diary")), .notFound)
        XCTAssertRightsError(try storage.remove(owner("diary")), .notFound)
        XCTAssertEqual(try storage.removeAll(uid: 1000, appID: "org.example.Notes"), 1)
        XCTAssertEqual(try storage.list(uid: 1000, appID: "org.example.Notes").rights.count, 0)
        XCTAssertNoThrow(try storage.load(owner("vault", app: "org.example.Mail")), "other apps keep theirs")
        XCTAssertNoThrow(try storage.load(owner("vault", uid: 1001)), "other users keep theirs")
    }

    func testSavingAgainReplaces() throws {
        try save("vault", secret: [1])
        let second = try save("vault", secret: [2])
        let loaded = try storage.load(owner("vault"))
        XCTAssertEqual(loaded.publicKeyPoint, second.publicKeyPoint)
        XCTAssertEqual(try loaded.secret(using: storage.protector), [2])
        XCTAssertEqual(try storage.list(uid: 1000, appID: "org.example.Notes").rights.count, 1)
    }

    func testFilesAreRootOnlyAndNamedByHash() throws {
        try save("../../etc/passwd", app: "../../../tmp/evil")
        let path = try storage.path(of: owner("../../etc/passwd", app: "../../../tmp/evil"))
        XCTAssertTrue(path.hasPrefix(state.path + "/rights/1000/"))
        let components = path.dropFirst((state.path + "/rights/1000/").count).split(separator: "/")
        XCTAssertEqual(components.count, 2)
        XCTAssertTrue(components.allSatisfy { $0.prefix(64).allSatisfy(\.isHexDigit) })
        XCTAssertTrue(components[1].hasSuffix(".right"))
        XCTAssertEqual(try state.mode(path), 0o600)
        for folder in ["/rights", "/rights/1000", "/rights/1000/" + components[0]] {
            XCTAssertEqual(try state.mode(state.path + folder), 0o700, folder)
        }
        XCTAssertNoThrow(try storage.load(owner("../../etc/passwd", app: "../../../tmp/evil")))
        XCTAssertRightsError(try storage.list(uid: 1000, appID: ""), .invalidName)
    }

    func testADamagedFileIsSkippedAndNamedWhileOthersLoad() throws {
        try save("a")
        try save("b")
        try save("c")
        let folder = try storage.appDirectory(uid: 1000, appID: "org.example.Notes")
        let damagedPath = try storage.path(of: owner("b"))
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: damagedPath)))
        bytes[bytes.count - 20] ^= 0x40
        try Data(bytes).write(to: URL(fileURLWithPath: damagedPath))
        try Data("junk".utf8).write(to: URL(fileURLWithPath: folder + "/" + String(repeating: "0", count: 64) + ".right"))
        try Data(count: RightLimits.fileBytes + 1).write(to: URL(fileURLWithPath: folder + "/" + String(repeating: "1", count: 64) + ".right"))

        // Listing reads headers and opens nothing: a damaged sealed part shows
        // when the right is used, never in a list.
        let listing = try storage.list(uid: 1000, appID: "org.example.Notes")
        XCTAssertEqual(listing.rights.map(\.owner.identifier), ["a", "b", "c"])
        let damaged = Dictionary(uniqueKeysWithValues: listing.damaged.map { ($0.fileName, $0.error.code) })
        XCTAssertEqual(damaged.count, 2, "\(listing.damaged)")
        XCTAssertEqual(damaged[String(repeating: "0", count: 64) + ".right"], .badMagic)
        XCTAssertEqual(damaged[String(repeating: "1", count: 64) + ".right"], .oversize)
        XCTAssertRightsError(try storage.load(owner("b")), .authenticationFailed)
        XCTAssertNoThrow(try storage.load(owner("a")))
        // removeAll clears damaged files too.
        XCTAssertEqual(try storage.removeAll(uid: 1000, appID: "org.example.Notes"), 5)
    }

    func testAFileMovedToAnotherPlaceIsMisplaced() throws {
        try save("vault")
        try save("diary")
        try save("vault", app: "org.example.Mail")
        let vault = try storage.path(of: owner("vault")), diary = try storage.path(of: owner("diary"))
        let mail = try storage.path(of: owner("vault", app: "org.example.Mail"))
        XCTAssertEqual(rename(vault, diary), 0)
        XCTAssertRightsError(try storage.load(owner("diary")), .misplaced)
        XCTAssertEqual(link(mail, vault), 0)
        XCTAssertRightsError(try storage.load(owner("vault")), .misplaced, "another app's right")
        let listing = try storage.list(uid: 1000, appID: "org.example.Notes")
        XCTAssertTrue(listing.rights.isEmpty)
        XCTAssertEqual(listing.damaged.map(\.error.code), [.misplaced, .misplaced])
    }

    /// A crash (kill -9) between writing the temporary file and the rename
    /// leaves the temporary file and the old right: the old one still loads,
    /// the leftover is ignored, and the next save replaces both.
    func testALeftoverFromACrashedWriteIsIgnored() throws {
        let old = try save("vault", secret: [1])
        let path = try storage.path(of: owner("vault"))
        let newer = try RightRecord.create(owner: owner("vault"), requirement: .default, secret: [2], created: 2, protector: storage.protector)
        try Data(newer.encode().prefix(100)).write(to: URL(fileURLWithPath: path + ".tmp-99999"))
        XCTAssertEqual(try storage.load(owner("vault")).publicKeyPoint, old.publicKeyPoint)
        let listing = try storage.list(uid: 1000, appID: "org.example.Notes")
        XCTAssertEqual(listing.rights.count, 1)
        XCTAssertTrue(listing.damaged.isEmpty)
        try storage.save(newer)
        XCTAssertEqual(try storage.load(owner("vault")).publicKeyPoint, newer.publicKeyPoint)
        XCTAssertFalse(try names(Files.directory(of: path)).contains { $0.hasSuffix(".tmp-\(getpid())") }, "no temporary file of ours remains")
    }

    func testTooManyRightsForOneApp() throws {
        try save("first")
        let folder = try storage.appDirectory(uid: 1000, appID: "org.example.Notes")
        for index in 1..<RightLimits.rightsPerApp {
            XCTAssertTrue(FileManager.default.createFile(atPath: folder + "/placeholder-\(index).right", contents: nil))
        }
        XCTAssertRightsError(try save("one too many"), .tooManyRights)
        XCTAssertNoThrow(try save("first"), "replacing an existing right is always allowed")
        XCTAssertNoThrow(try save("elsewhere", app: "org.example.Mail"), "the limit is per app")
    }

    func testAnotherMachineKeyMakesEveryRightDamaged() throws {
        try save("vault")
        let copied = RightStorage(stateDirectory: state.path, protector: try SoftwareKeyProtector(machineKey: SecureRandom.bytes(32)))
        XCTAssertRightsError(try copied.load(owner("vault")), .unwrapFailed)
        // Listing opens nothing (it reads headers), so it still lists the right; using it fails.
        XCTAssertEqual(try copied.list(uid: 1000, appID: "org.example.Notes").rights.map(\.owner.identifier), ["vault"])
    }
}
