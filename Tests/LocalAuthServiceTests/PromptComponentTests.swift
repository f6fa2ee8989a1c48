import DBusCore
@testable import LocalAuthService
import LocalAuthShared
import XCTest

/// The Prompt component (Sources/LocalAuthService/Prompt/) with fakes for its
/// seams: whose sheets an agent shows, a second agent of one session, who may
/// answer a sheet, an agent leaving the bus, and the methods' arguments.
final class PromptComponentTests: XCTestCase {
    private static let agentPath: ObjectPath = "/org/example/LocalAuth/PromptAgent"

    override func setUp() {
        super.setUp()
        _ = ServiceLoop.running
    }

    @ServiceActor
    private final class Fixture {
        let seams = FakePromptSeams()
        lazy var agents = PromptAgents(seams: seams)
        let queue = SensorQueue()

        func caller(_ sender: String, uid: UInt32, session: LoginSession) -> CallerRecord {
            let record = CallerRecord(sender: sender, uid: uid, process: nil, securityLabel: nil)
            seams.sessions[sender] = session
            seams.callers[sender] = record
            return record
        }

        func register(
            _ sender: String, uid: UInt32, session: LoginSession,
            path: ObjectPath = PromptComponentTests.agentPath
        ) async throws(ServiceError) {
            try await agents.register(
                RegisterPromptAgentArguments([.objectPath(path)]),
                caller: caller(sender, uid: uid, session: session),
                record: CallRecord(sender: sender, requestID: nil, errors: .localAuth))
        }

        /// An evaluation of `uid` by a caller in `session`, started: its sheet offered.
        func evaluate(_ sender: String, uid: UInt32, session: LoginSession) async -> (Evaluation, CallRecord) {
            let connection = caller(sender, uid: uid, session: session)
            let evaluation = Evaluation(
                requestID: "r-\(sender)", caller: connection, uid: uid, queue: queue,
                prompt: .init(reason: "unlock the vault", fallbackTitle: nil, cancelTitle: nil))
            let record = CallRecord(sender: sender, requestID: evaluation.requestID, errors: .localAuth)
            await agents.evaluationStarted(evaluation, record: record, policy: .deviceOwnerAuthenticationWithBiometrics)
            return (evaluation, record)
        }

        func answer(_ id: String, _ answer: String, from sender: String, uid: UInt32) -> String? {
            let caller = CallerRecord(sender: sender, uid: uid, process: nil, securityLabel: nil)
            do throws(ServiceError) {
                try agents.answer(PromptAnswerArguments([.string(id), .string(answer)]), caller: caller)
                return nil
            } catch {
                return error.localAuthName
            }
        }
    }

    @ServiceActor
    private func errorName(_ body: () async throws(ServiceError) -> Void) async -> String? {
        do throws(ServiceError) {
            try await body()
            return nil
        } catch { return error.localAuthName }
    }

    // MARK: Whose sheets

    @ServiceActor
    func testAnAgentShowsOnlyTheEvaluationsOfItsOwnUidAndSession() async throws {
        let fixture = Fixture()
        try await fixture.register(":1.5", uid: 1000, session: .session("/s/2"))
        _ = await fixture.evaluate(":1.50", uid: 1001, session: .session("/s/2"))
        _ = await fixture.evaluate(":1.51", uid: 1000, session: .session("/s/3"))
        _ = await fixture.evaluate(":1.52", uid: 1000, session: .none)
        XCTAssertTrue(fixture.seams.sent.isEmpty, "another uid, another session, no session: never shown")

        let (evaluation, _) = await fixture.evaluate(":1.53", uid: 1000, session: .session("/s/2"))
        XCTAssertEqual(fixture.seams.members(sentTo: ":1.5"), [LocalAuthPrompt.AgentMethod.showPrompt])
        let details = fixture.seams.sent.last?.arguments.last?.stringKeyedDictionary
        XCTAssertEqual(details?[LocalAuthPrompt.Detail.reason], .string("unlock the vault"))
        XCTAssertEqual(details?[LocalAuthPrompt.Detail.program], .string("/usr/bin/app-of-:1.53"))

        // Its status and its end go to the same agent, and nowhere else.
        fixture.agents.status(evaluation, .placeFinger)
        fixture.agents.evaluationEnded(evaluation, error: nil)
        XCTAssertEqual(
            fixture.seams.members(sentTo: ":1.5"),
            [
                LocalAuthPrompt.AgentMethod.showPrompt,
                LocalAuthPrompt.AgentMethod.updatePrompt,
                LocalAuthPrompt.AgentMethod.closePrompt,
            ])
        XCTAssertEqual(fixture.seams.sent.last?.arguments.last, .string(LocalAuthPrompt.Outcome.success.rawValue))
        XCTAssertEqual(fixture.seams.sent.count, 3)
    }

    @ServiceActor
    func testASecondAgentOfTheSameSessionIsRefusedAndTheSameOneMayMoveItsPath() async throws {
        let fixture = Fixture()
        try await fixture.register(":1.5", uid: 1000, session: .session("/s/2"))
        let second = await errorName { () async throws(ServiceError) in
            try await fixture.register(":1.6", uid: 1000, session: .session("/s/2"))
        }
        XCTAssertEqual(second, LocalAuthPrompt.agentExistsError)
        XCTAssertNil(fixture.agents.agents[":1.6"])
        // Another session of the same uid, or another uid in the same session, is another agent.
        try await fixture.register(":1.7", uid: 1000, session: .session("/s/3"))
        try await fixture.register(":1.8", uid: 1001, session: .session("/s/2"))
        // The same connection registering again moves its path; not an error.
        try await fixture.register(":1.5", uid: 1000, session: .session("/s/2"), path: "/elsewhere")
        XCTAssertEqual(fixture.agents.agents[":1.5"]?.path, "/elsewhere")
        // An agent in no session is refused.
        let sessionless = await errorName { () async throws(ServiceError) in
            try await fixture.register(":1.9", uid: 1002, session: .none)
        }
        XCTAssertEqual(sessionless, LocalAuthServiceError.permissionDenied)
    }

    @ServiceActor
    func testAgentsAreBoundedPerUid() async throws {
        let fixture = Fixture()
        for index in 0..<LocalAuthPrompt.maximumAgentsPerUser {
            try await fixture.register(":1.\(index)", uid: 1000, session: .session("/s/\(index)"))
        }
        let over = await errorName { () async throws(ServiceError) in
            try await fixture.register(":1.99", uid: 1000, session: .session("/s/99"))
        }
        XCTAssertEqual(over, LocalAuthServiceError.limitExceeded)
    }

    // MARK: Who may answer

    @ServiceActor
    func testOnlyTheAgentShowingTheSheetMayAnswerIt() async throws {
        let fixture = Fixture()
        try await fixture.register(":1.5", uid: 1000, session: .session("/s/2"))
        try await fixture.register(":1.6", uid: 1000, session: .session("/s/3"))
        try await fixture.register(":1.7", uid: 1001, session: .session("/s/2"))
        let (_, record) = await fixture.evaluate(":1.50", uid: 1000, session: .session("/s/2"))
        let id = try XCTUnwrap(fixture.seams.shown(on: ":1.5").first)

        let denied = LocalAuthServiceError.permissionDenied
        XCTAssertEqual(fixture.answer(id, "user-cancel", from: ":1.6", uid: 1000), denied, "the same uid's other session")
        XCTAssertEqual(fixture.answer(id, "user-cancel", from: ":1.7", uid: 1001), denied, "another uid")
        XCTAssertEqual(fixture.answer(id, "user-cancel", from: ":1.50", uid: 1000), denied, "the app itself")
        XCTAssertEqual(fixture.answer("no-such-id", "user-cancel", from: ":1.5", uid: 1000), denied)
        XCTAssertNil(record.interruption, "nobody else's answer ends the evaluation")

        XCTAssertNil(fixture.answer(id, "user-fallback", from: ":1.5", uid: 1000))
        guard case .userFallback? = record.interruption else { return XCTFail("\(String(describing: record.interruption))") }
    }

    @ServiceActor
    func testAnAgentLeavingTheBusLeavesItsSheetsToTheNextAgentOfTheSession() async throws {
        let fixture = Fixture()
        try await fixture.register(":1.5", uid: 1000, session: .session("/s/2"))
        let (evaluation, _) = await fixture.evaluate(":1.50", uid: 1000, session: .session("/s/2"))
        let id = try XCTUnwrap(fixture.seams.shown(on: ":1.5").first)

        fixture.agents.agentVanished(":1.5")
        XCTAssertNil(fixture.agents.agents[":1.5"])
        XCTAssertNil(fixture.agents.sheets[id]?.agent, "the sheet goes on without an agent")
        fixture.agents.status(evaluation, .noMatch)
        XCTAssertEqual(
            fixture.seams.members(sentTo: ":1.5"), [LocalAuthPrompt.AgentMethod.showPrompt],
            "nothing more is sent to the agent that left")
        XCTAssertEqual(fixture.answer(id, "user-cancel", from: ":1.5", uid: 1000), LocalAuthServiceError.permissionDenied)

        // The session's next agent gets the sheet still in progress, with its last status.
        try await fixture.register(":1.9", uid: 1000, session: .session("/s/2"))
        XCTAssertEqual(
            fixture.seams.members(sentTo: ":1.9"),
            [
                LocalAuthPrompt.AgentMethod.showPrompt,
                LocalAuthPrompt.AgentMethod.updatePrompt,
            ])
        XCTAssertEqual(fixture.seams.shown(on: ":1.9"), [id])
    }

    // MARK: Arguments

    func testTheArgumentsAreCheckedWhole() {
        XCTAssertNoThrow(try RegisterPromptAgentArguments([.objectPath("/a")]))
        XCTAssertThrowsError(try RegisterPromptAgentArguments([.string("/a")]))
        XCTAssertThrowsError(try UnregisterPromptAgentArguments([]))
        XCTAssertEqual(try PromptAnswerArguments([.string("id"), .string("user-cancel")]).answer, .userCancel)
        XCTAssertEqual(try PromptAnswerArguments([.string("id"), .string("user-fallback")]).answer, .userFallback)
        for bad: [DBusValue] in [[.string("id"), .string("yes")], [.string("id")], [.uint32(1), .string("user-cancel")]] {
            XCTAssertThrowsError(try PromptAnswerArguments(bad), "\(bad)") { error in
                XCTAssertEqual((error as? ServiceError)?.kind, .invalidArgs)
            }
        }
    }
}
