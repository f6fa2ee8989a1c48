@testable import LocalAuthService
import LocalAuthShared
import XCTest

/// The service's rules that need neither a bus, polkit nor a reader, each
/// checked case by case in milliseconds: which reader serves a user, which
/// prints are offered, what polkit's answer means, what a no-match leads to.
/// The end-to-end tests prove the same rules through the real parts.
final class ServiceRulesTests: XCTestCase {
    private let builtIn = Readers.Identity(driver: "synaptics", deviceID: "1")
    private let usb = Readers.Identity(driver: "goodix", deviceID: "2")

    // MARK: Which reader serves a user

    func testAConfiguredReaderIsTheOnlyOne() {
        let configured = ReaderSelector("goodix")
        XCTAssertEqual(ReaderChoice.chooseReader(among: [builtIn, usb], configured: configured, withPrints: [builtIn]), usb)
        XCTAssertNil(ReaderChoice.chooseReader(among: [builtIn], configured: configured, withPrints: []),
                     "the configured reader is absent: no other is used instead")
    }

    func testOtherwiseTheFirstReaderWithTheUsersPrintsElseTheFirst() {
        XCTAssertEqual(ReaderChoice.chooseReader(among: [builtIn, usb], configured: nil, withPrints: [usb]), usb)
        XCTAssertEqual(ReaderChoice.chooseReader(among: [builtIn, usb], configured: nil, withPrints: []), builtIn)
        XCTAssertEqual(ReaderChoice.chooseReader(among: [builtIn, usb], configured: nil, withPrints: [usb, builtIn]), builtIn)
        XCTAssertNil(ReaderChoice.chooseReader(among: [], configured: nil, withPrints: [usb]))
    }

    // MARK: Which prints are offered (ours shadow fprintd's)

    private struct Print: OfferablePrint, Equatable {
        let finger: FingerName
        let source: PrintSource
        let reader: Readers.Identity
    }

    func testOursShadowFprintdsForTheSameFingerWhateverTheOrder() {
        let fprintds = Print(finger: .rightIndex, source: .fprintd, reader: builtIn)
        let ours = Print(finger: .rightIndex, source: .localauth, reader: builtIn)
        XCTAssertEqual(PrintStore.offered([fprintds, ours], on: builtIn), [ours])
        XCTAssertEqual(PrintStore.offered([ours, fprintds], on: builtIn), [ours])
    }

    func testOnlyTheReadersPrintsOneAFingerInFingerOrder() {
        let thumb = Print(finger: .leftThumb, source: .fprintd, reader: builtIn)
        let index = Print(finger: .rightIndex, source: .localauth, reader: builtIn)
        let elsewhere = Print(finger: .leftIndex, source: .localauth, reader: usb)
        XCTAssertEqual(PrintStore.offered([index, elsewhere, thumb], on: builtIn), [thumb, index])
        XCTAssertEqual(PrintStore.offered([index, elsewhere, thumb], on: usb), [elsewhere])
        let fprintdTwice = [thumb, Print(finger: .leftThumb, source: .fprintd, reader: builtIn)]
        XCTAssertEqual(PrintStore.offered(fprintdTwice, on: builtIn).count, 1)
    }

    // MARK: What polkit's answer means

    func testOnlyAnUndismissedAuthorizedIsYes() {
        XCTAssertEqual(Authorizer.decision(authorized: true, dismissed: false, action: .evaluate), .authorized)
        XCTAssertEqual(Authorizer.decision(authorized: false, dismissed: true, action: .evaluate), .dismissed)
        XCTAssertEqual(Authorizer.decision(authorized: true, dismissed: true, action: .evaluate), .dismissed,
                       "a dismissed prompt is never a yes")
        guard case .denied = Authorizer.decision(authorized: false, dismissed: false, action: .enroll) else {
            return XCTFail("no answer is a no")
        }
    }

    // MARK: What a no-match leads to

    func testTheLockoutWinsThenTheEvaluationsAttemptsThenScanAgain() {
        typealias Next = Verifier.AfterNoMatch
        XCTAssertEqual(Verifier.afterNoMatch(failures: 1, lockedOut: false, attemptsPerEvaluation: 3), Next.scanAgain)
        XCTAssertEqual(Verifier.afterNoMatch(failures: 2, lockedOut: false, attemptsPerEvaluation: 3), Next.scanAgain)
        XCTAssertEqual(Verifier.afterNoMatch(failures: 3, lockedOut: false, attemptsPerEvaluation: 3), Next.failed)
        XCTAssertEqual(Verifier.afterNoMatch(failures: 1, lockedOut: true, attemptsPerEvaluation: 3), Next.lockedOut)
        XCTAssertEqual(Verifier.afterNoMatch(failures: 3, lockedOut: true, attemptsPerEvaluation: 3), Next.lockedOut,
                       "the persisted lockout is what the caller hears, not the evaluation's own limit")
    }

    // MARK: Which print a verify-only reader tries

    func testTheLastMatchedFingerIsTriedFirstThenEachInTurn() {
        let fingers: [FingerName] = [.leftIndex, .rightIndex, .rightThumb]
        XCTAssertEqual((0..<4).map { Verifier.galleryStart(fingers, lastMatched: nil, missesSinceMatch: $0) }, [0, 1, 2, 0])
        XCTAssertEqual((0..<4).map { Verifier.galleryStart(fingers, lastMatched: .rightIndex, missesSinceMatch: $0) },
                       [1, 2, 0, 1])
        XCTAssertEqual(Verifier.galleryStart(fingers, lastMatched: .leftThumb, missesSinceMatch: 0), 0,
                       "a finger no longer enrolled: from the start")
        XCTAssertEqual(Verifier.galleryStart([], lastMatched: .rightIndex, missesSinceMatch: 3), 0)
    }
}
