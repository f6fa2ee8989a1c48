import Foundation
@testable import LocalAuthService
import LocalAuthShared
import XCTest

/// Issue 30 item 4: the duplicate check before an enrollment is a match
/// oracle over every account's prints, so each uid gets `perDay` checks a
/// day, kept on disk, failing closed.
final class DuplicateCheckBudgetTests: XCTestCase {
    override func setUp() {
        super.setUp()
        _ = ServiceLoop.running
    }

    @ServiceActor
    private final class Wall {
        var seconds = 1_800_000_000.0
    }

    private static func temporaryDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "localauth-budget-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    func testTenADayThenRefusedUntilTheFirstIsADayOld() async throws { try await Self.checkTenADay() }

    @ServiceActor
    private static func checkTenADay() throws {
        let state = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: state) }
        let wall = Wall()
        let budget = DuplicateCheckBudget(stateDirectory: state, wallClock: { wall.seconds }, countFailedMatch: { _ in })
        for spent in 0..<DuplicateCheckBudget.perDay {
            XCTAssertEqual(budget.remaining(for: 1000), DuplicateCheckBudget.perDay - spent)
            try budget.spend(for: 1000)
            wall.seconds += 60
        }
        XCTAssertThrowsError(try budget.spend(for: 1000)) { error in
            XCTAssertEqual((error as? ServiceError)?.kind, .limitExceeded)
        }
        XCTAssertEqual(budget.remaining(for: 1000), 0)
        XCTAssertEqual(budget.remaining(for: 1001), DuplicateCheckBudget.perDay, "another uid has its own")
        // A day after the first check, one is free again.
        wall.seconds = 1_800_000_000 + DuplicateCheckBudget.day
        XCTAssertEqual(budget.remaining(for: 1000), 1)
        XCTAssertNoThrow(try budget.spend(for: 1000))
        XCTAssertThrowsError(try budget.spend(for: 1000))
    }

    func testARestartGivesNoNewBudget() async throws { try await Self.checkARestart() }

    @ServiceActor
    private static func checkARestart() throws {
        let state = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: state) }
        let wall = Wall()
        let first = DuplicateCheckBudget(stateDirectory: state, wallClock: { wall.seconds }, countFailedMatch: { _ in })
        for _ in 0..<DuplicateCheckBudget.perDay { try first.spend(for: 1000) }
        let afterIdleExit = DuplicateCheckBudget(stateDirectory: state, wallClock: { wall.seconds }, countFailedMatch: { _ in })
        XCTAssertEqual(afterIdleExit.remaining(for: 1000), 0)
        XCTAssertThrowsError(try afterIdleExit.spend(for: 1000))
    }

    func testRootIsNotCounted() async throws { try await Self.checkRoot() }

    @ServiceActor
    private static func checkRoot() throws {
        let state = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: state) }
        let budget = DuplicateCheckBudget(stateDirectory: state, countFailedMatch: { _ in })
        for _ in 0..<(DuplicateCheckBudget.perDay * 2) { try budget.spend(for: 0) }
        XCTAssertFalse(FileManager.default.fileExists(atPath: state + "/duplicate-checks/0"))
    }

    func testAFileThatCannotBeReadOrWrittenFailsClosed() async throws { try await Self.checkFailsClosed() }

    @ServiceActor
    private static func checkFailsClosed() throws {
        let state = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: state) }
        let budget = DuplicateCheckBudget(stateDirectory: state, countFailedMatch: { _ in })
        try FileManager.default.createDirectory(atPath: state + "/duplicate-checks/7", withIntermediateDirectories: true)
        XCTAssertEqual(budget.remaining(for: 7), 0, "a directory where the checks should be")
        XCTAssertThrowsError(try budget.spend(for: 7))
        try Data("1800000000\nmany\n".utf8).write(to: URL(fileURLWithPath: state + "/duplicate-checks/8"))
        XCTAssertThrowsError(try budget.spend(for: 8), "a damaged file")
        // Cannot be written: refused, and nothing counted in memory either.
        try FileManager.default.createDirectory(
            atPath: state + "/duplicate-checks/9.tmp-\(getpid())",
            withIntermediateDirectories: true)
        XCTAssertThrowsError(try budget.spend(for: 9))
        XCTAssertEqual(budget.remaining(for: 9), DuplicateCheckBudget.perDay)
    }
}
