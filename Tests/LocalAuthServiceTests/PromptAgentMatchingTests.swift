@testable import LocalAuthService
import DBusCore
import XCTest

/// Whose sheets an agent shows (PromptAgents.swift): its own uid, in its own
/// logind session; without logind, its own uid; a caller in no session, nobody.
final class PromptAgentMatchingTests: XCTestCase {
    private func agent(uid: UInt32, _ session: LoginSession) -> PromptAgents.Agent {
        PromptAgents.Agent(sender: ":1.9", path: "/org/example/LocalAuth/PromptAgent", uid: uid, session: session)
    }

    func testTheSameUidAndSessionIsServed() {
        XCTAssertTrue(agent(uid: 1000, .session("/s/2")).serves(uid: 1000, session: .session("/s/2")))
    }

    func testAnotherSessionOfTheSameUidIsNotServed() {
        XCTAssertFalse(agent(uid: 1000, .session("/s/2")).serves(uid: 1000, session: .session("/s/3")))
    }

    func testAnotherUidIsNeverServed() {
        XCTAssertFalse(agent(uid: 1000, .session("/s/2")).serves(uid: 1001, session: .session("/s/2")))
        XCTAssertFalse(agent(uid: 1000, .noLogind).serves(uid: 0, session: .noLogind))
    }

    func testWithoutLogindTheUidDecides() {
        XCTAssertTrue(agent(uid: 1000, .noLogind).serves(uid: 1000, session: .noLogind))
    }

    func testACallerInNoSessionIsNotServed() {
        XCTAssertFalse(agent(uid: 1000, .session("/s/2")).serves(uid: 1000, session: .none))
        XCTAssertFalse(agent(uid: 1000, .none).serves(uid: 1000, session: .none))
    }

    func testAnAppNameOfTheWrongTypeIsInvalidArgs() async throws {
        _ = ServiceLoop.running
        try await Self.checkAppNameOption()
    }

    @ServiceActor
    private static func checkAppNameOption() throws {
        XCTAssertThrowsError(try EvaluationOptions(.dictionary(["app-name": .uint32(3)])))
        XCTAssertThrowsError(try EvaluationOptions(
            .dictionary(["app-name": .string(String(repeating: "x", count: 1025))])))
        XCTAssertNoThrow(try EvaluationOptions(.dictionary(["app-name": .string("Vault")])))
    }

    func testTheDeclaredAppNameIsReadFromTheOptions() throws {
        XCTAssertEqual(try EvaluationOptions(.dictionary(["app-name": .string("Vault")])).appName, "Vault")
        XCTAssertNil(try EvaluationOptions(.dictionary(["app-name": .string("")])).appName, "an empty name declares nothing")
        XCTAssertNil(try EvaluationOptions(.dictionary([:])).appName)
    }
}
