import Foundation
import Glibc
import LocalAuthCrypto
@testable import LocalAuthRights
import XCTest

/// Issue 20 items 8 and 9 in the store: one user's rights are bounded over
/// all their apps (count, app ids, bytes on disk), and they belong to the
/// account that saved them, not to whoever has the uid next.
final class UserRightsTests: XCTestCase {
    private var state: StateDirectory!
    private var storage: RightStorage!

    override func setUpWithError() throws {
        state = try StateDirectory()
        storage = RightStorage(stateDirectory: state.path, protector: try SoftwareKeyProtector(stateDirectory: state.path))
    }

    override func tearDown() { state = nil }

    private func save(_ identifier: String, app: String, uid: UInt32 = 1000, secret: [UInt8] = [1]) throws {
        let owner = try RightOwner(uid: uid, appID: app, identifier: identifier)
        try storage.save(try RightRecord.create(owner: owner, requirement: .default, secret: secret, created: 1,
                                                protector: storage.protector))
    }

    func testNewAppIDsCannotMultiplyTheBoundsOfOneUser() throws {
        for app in 0..<RightLimits.appsPerUser { try save("r", app: "org.example.App\(app)") }
        XCTAssertRightsError(try save("r", app: "org.example.OneTooMany"), .tooManyApps)
        XCTAssertFalse(FileManager.default.fileExists(atPath: try storage.appDirectory(uid: 1000, appID: "org.example.OneTooMany")),
                       "a refused save leaves nothing behind, not even its app's directory")
        // Replacing, and more rights in a known app, are fine; another uid is not counted.
        XCTAssertNoThrow(try save("r", app: "org.example.App0"))
        XCTAssertNoThrow(try save("s", app: "org.example.App0"))
        XCTAssertNoThrow(try save("r", app: "org.example.OneTooMany", uid: 1001))
        XCTAssertEqual(try storage.usage(uid: 1000).apps, RightLimits.appsPerUser)
        // An app whose rights are all gone no longer counts.
        try storage.removeAll(uid: 1000, appID: "org.example.App1")
        XCTAssertNoThrow(try save("r", app: "org.example.OneTooMany"))
    }

    func testBytesOnDiskAreBoundedPerUser() throws {
        let big = [UInt8](repeating: 7, count: RightLimits.secretBytes)
        var saved = 0
        var refusal: RightsError?
        for index in 0..<200 {
            do {
                try save("big-\(index)", app: "org.example.App\(index / 100)", secret: big)
                saved += 1
            } catch let error as RightsError {
                refusal = error
                break
            }
        }
        XCTAssertEqual(refusal?.code, .tooMuchData, "\(String(describing: refusal))")
        let usage = try storage.usage(uid: 1000)
        XCTAssertEqual(usage.rights, saved)
        XCTAssertLessThanOrEqual(usage.bytes, RightLimits.bytesPerUser)
        XCTAssertGreaterThan(usage.bytes, RightLimits.bytesPerUser - 2 * (RightLimits.secretBytes + 1024))
    }

    func testRightsCountIsBoundedPerUser() throws {
        let apps = RightLimits.rightsPerUser / RightLimits.rightsPerApp
        for app in 0..<apps {
            for index in 0..<RightLimits.rightsPerApp { try save("r\(index)", app: "org.example.App\(app)") }
        }
        XCTAssertRightsError(try save("one-more", app: "org.example.Another"), .tooManyRights)
    }

    func testRightsBelongToTheAccountThatSavedThem() throws {
        XCTAssertNil(try storage.boundAccount(uid: 1000))
        try storage.checkAccount(uid: 1000, account: "alice")
        XCTAssertEqual(try storage.boundAccount(uid: 1000), "alice")
        XCTAssertNoThrow(try storage.checkAccount(uid: 1000, account: "alice"))
        XCTAssertRightsError(try storage.checkAccount(uid: 1000, account: "mallory"), .accountChanged)
        XCTAssertNoThrow(try storage.checkAccount(uid: 1001, account: "mallory"))
        // The binding file is not a right and no app.
        try save("r", app: "org.example.Notes")
        XCTAssertEqual(try storage.usage(uid: 1000), UserRightsUsage(rights: 1, bytes: try storage.usage(uid: 1000).bytes, apps: 1))
    }
}
