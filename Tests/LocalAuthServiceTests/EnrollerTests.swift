import DBusCore
@testable import LocalAuthService
import LocalAuthShared
import XCTest

/// The Enrollment component (Sources/LocalAuthService/Enrollment/) with
/// fakes for its seams: the arguments of each method, and the refusals that
/// come before any reader is touched.
final class EnrollerTests: XCTestCase {
    override func setUp() {
        super.setUp()
        _ = ServiceLoop.running
    }

    @ServiceActor
    private final class Fixture {
        let seams = FakeEnrollerSeams()
        let prints = FakeEnrollerPrints()
        /// The asker's failed matches counted by the duplicate check.
        var countedFailures: [UInt32] = []
        lazy var duplicateChecks = DuplicateCheckBudget(
            stateDirectory: FakeState.directory(), countFailedMatch: { [unowned self] uid in self.countedFailures.append(uid) })
        lazy var enrollment = Enrollment(gate: seams.gate, readers: seams, duplicateChecks: duplicateChecks, stages: { _ in 5 })
        lazy var enroller = Enroller(
            seams: seams, prints: prints, enrollment: enrollment, scanTimeout: 30, duplicateChecks: duplicateChecks)
        let alice = CallerRecord(sender: ":1.10", uid: 1000, process: nil, securityLabel: nil)

        func record() -> CallRecord { CallRecord(sender: alice.sender, requestID: nil, errors: .localAuth) }

        /// The error name `body` ends with (nil: it succeeded).
        func outcome(_ body: () async throws(ServiceError) -> Void) async -> String? {
            do throws(ServiceError) {
                try await body()
                return nil
            } catch { return error.localAuthName }
        }

        func enroll(_ finger: FingerName, replace: Bool? = nil) async -> String? {
            await outcome { () async throws(ServiceError) in
                if let replace {
                    let options: DBusValue = .dictionary([LocalAuthBus.PrintOption.replace: .boolean(replace)])
                    try await enroller.enroll(
                        EnrollWithOptionsArguments([.string(finger.rawValue), options]),
                        caller: alice, target: alice.uid, record: record())
                } else {
                    try await enroller.enroll(EnrollArguments([.string(finger.rawValue)]), caller: alice, record: record())
                }
            }
        }

        func delete(_ finger: FingerName) async -> String? {
            await outcome { () async throws(ServiceError) in
                try await enroller.deleteFinger(
                    DeleteEnrolledFingerArguments([.string(finger.rawValue)]),
                    target: alice.uid, record: record())
            }
        }
    }

    // MARK: Refusals before the reader

    @ServiceActor
    func testAnEnrolledFingerIsRefusedWithoutReplaceBeforeTheReaderIsTouched() async {
        let fixture = Fixture()
        fixture.prints.add(.rightIndex, of: 1000, source: .localauth)
        fixture.prints.add(.leftThumb, of: 1000, source: .fprintd)
        let outcome1 = await fixture.enroll(.rightIndex)
        XCTAssertEqual(outcome1, LocalAuthServiceError.alreadyEnrolled)
        let outcome2 = await fixture.enroll(.leftThumb)
        XCTAssertEqual(outcome2, LocalAuthServiceError.alreadyEnrolled, "fprintd's print counts too")
        let outcome3 = await fixture.enroll(.rightIndex, replace: false)
        XCTAssertEqual(outcome3, LocalAuthServiceError.alreadyEnrolled)
        XCTAssertTrue(fixture.seams.used.isEmpty, "neither the queue nor a reader: \(fixture.seams.used)")

        // Asking to replace passes the check and opens the reader (which the fake never gives).
        let outcome4 = await fixture.enroll(.rightIndex, replace: true)
        XCTAssertEqual(outcome4, LocalAuthErrorCode.systemCancel.dbusName)
        XCTAssertEqual(fixture.seams.used, ["open"])
    }

    /// Issue 30 item 4: on a reader that keeps prints on its chip every
    /// enrollment first checks the finger against every account's prints;
    /// the day's budget of such checks is spent before the queue, and past
    /// it the enrollment is refused before the reader is touched.
    @ServiceActor
    func testEnrollmentsOnAChipSpendTheDaysDuplicateChecksBeforeTheReader() async {
        let fixture = Fixture()
        fixture.seams.chips = [FakeEnrollerSeams.reader]
        for _ in 0..<DuplicateCheckBudget.perDay {
            let outcome = await fixture.enroll(.rightIndex)
            XCTAssertEqual(outcome, LocalAuthErrorCode.systemCancel.dbusName, "opens the reader (the fake gives none)")
        }
        XCTAssertEqual(fixture.seams.used.filter { $0 == "open" }.count, DuplicateCheckBudget.perDay)
        let refused = await fixture.enroll(.rightIndex)
        XCTAssertEqual(refused, LocalAuthServiceError.limitExceeded)
        XCTAssertEqual(fixture.seams.used.filter { $0 == "open" }.count, DuplicateCheckBudget.perDay,
                       "refused before the queue and the reader")
        // A reader without a chip runs no check: nothing spent.
        fixture.seams.chips = []
        let plain = await fixture.enroll(.rightIndex)
        XCTAssertEqual(plain, LocalAuthErrorCode.systemCancel.dbusName)
    }

    @ServiceActor
    func testAnotherUsersFingerOrAnotherReadersIsNoObstacle() async {
        let fixture = Fixture()
        fixture.prints.add(.rightIndex, of: 1001, source: .localauth)
        fixture.prints.add(
            .rightIndex, of: 1000, source: .localauth,
            on: Readers.Identity(driver: "synaptics", deviceID: "1"))
        _ = await fixture.enroll(.rightIndex)
        XCTAssertEqual(fixture.seams.used, ["open"], "went on to open the reader")
    }

    @ServiceActor
    func testACallerAlreadyEnrollingOrWithoutAReaderIsRefused() async {
        let fixture = Fixture()
        fixture.seams.enrolling = [fixture.alice.sender]
        let outcome5 = await fixture.enroll(.leftThumb)
        XCTAssertEqual(outcome5, LocalAuthServiceError.busy)
        fixture.seams.enrolling = []
        fixture.seams.serving = nil
        let outcome6 = await fixture.enroll(.leftThumb)
        XCTAssertEqual(outcome6, LocalAuthErrorCode.biometryNotAvailable.dbusName)
        XCTAssertTrue(fixture.seams.used.isEmpty)
    }

    @ServiceActor
    func testDeletingFprintdsPrintIsReadOnlyAndDeletingNothingIsNotEnrolled() async {
        let fixture = Fixture()
        fixture.prints.add(.leftThumb, of: 1000, source: .fprintd)
        fixture.prints.add(.rightIndex, of: 1000, source: .localauth)
        let outcome7 = await fixture.delete(.leftThumb)
        XCTAssertEqual(outcome7, LocalAuthServiceError.readOnly)
        XCTAssertEqual(fixture.prints.allPrints(of: 1000).count, 2, "fprintd's print stays")
        let outcome8 = await fixture.delete(.leftMiddle)
        XCTAssertEqual(outcome8, LocalAuthServiceError.notEnrolled)
        let outcome9 = await fixture.delete(.rightIndex)
        XCTAssertNil(outcome9)
        let outcome10 = await fixture.delete(.rightIndex)
        XCTAssertEqual(outcome10, LocalAuthServiceError.notEnrolled, "gone already")
        XCTAssertEqual(fixture.prints.allPrints(of: 1000).map(\.source), [.fprintd])
        XCTAssertTrue(fixture.seams.used.isEmpty, "no chip holds them: no reader is taken")
    }

    @ServiceActor
    func testAPrintOnAChipThatCannotBeReachedStaysWithItsFile() async {
        let fixture = Fixture()
        fixture.seams.chips = [FakeEnrollerSeams.reader]
        fixture.prints.add(.rightIndex, of: 1000, source: .localauth)
        fixture.seams.openError = ServiceError(.readerInUse, "another program holds the reader")
        let outcome11 = await fixture.delete(.rightIndex)
        XCTAssertEqual(outcome11, LocalAuthServiceError.readerInUse)
        XCTAssertEqual(fixture.seams.used, ["open"], "through the gate: the turn, then the reader")
        XCTAssertEqual(fixture.prints.allPrints(of: 1000).count, 1, "the file never goes while its slot stays taken")
    }

    // MARK: Arguments

    func testEachMethodsArgumentsAreCheckedWhole() throws {
        let user = LocalAuthBus.PrintOption.user
        let replace = LocalAuthBus.PrintOption.replace
        XCTAssertEqual(try EnrollArguments([.string("left-thumb")]).finger, .leftThumb)
        let withOptions = try EnrollWithOptionsArguments([
            .string("right-index-finger"),
            .dictionary([
                user: .string("bob"), replace: .boolean(true),
                "later-option": .uint32(1),
            ]),
        ])
        XCTAssertEqual(withOptions.finger, .rightIndex)
        XCTAssertEqual(withOptions.options.user, "bob")
        XCTAssertTrue(withOptions.options.replace)
        XCTAssertNil(try ListEnrolledPrintsArguments([.dictionary([:])]).options.user)
        XCTAssertEqual(
            try DeleteEnrolledFingerWithOptionsArguments([
                .string("left-thumb"),
                .dictionary([user: .string("bob")]),
            ]).options.user, "bob")

        let bad: [(String, () throws -> Void)] = [
            ("unknown finger", { _ = try EnrollArguments([.string("left-tentacle")]) }),
            ("finger not a string", { _ = try DeleteEnrolledFingerArguments([.uint32(1)]) }),
            ("missing argument", { _ = try EnrollArguments([]) }),
            (
                "replace not a boolean",
                {
                    _ = try EnrollWithOptionsArguments([
                        .string("left-thumb"),
                        .dictionary([replace: .string("yes")]),
                    ])
                }
            ),
            ("empty user", { _ = try DeleteEnrolledFingersWithOptionsArguments([.dictionary([user: .string("")])]) }),
            ("user too long", { _ = try ListEnrolledPrintsArguments([.dictionary([user: .string(String(repeating: "u", count: 257))])]) }),
            (
                "user not a string",
                {
                    _ = try DeleteEnrolledFingerWithOptionsArguments([
                        .string("left-thumb"),
                        .dictionary([user: .uint32(0)]),
                    ])
                }
            ),
            ("options not a{sv}", { _ = try ListReaderPrintsArguments([.string("all")]) }),
            ("options not a{sv}", { _ = try RemoveOrphanPrintsArguments([.uint32(0)]) }),
        ]
        for (what, parse) in bad {
            XCTAssertThrowsError(try parse(), what) { error in
                XCTAssertEqual((error as? ServiceError)?.kind, .invalidArgs, what)
            }
        }
    }
}
