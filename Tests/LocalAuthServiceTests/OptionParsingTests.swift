import DBusCore
@testable import LocalAuthService
import LocalAuthShared
import XCTest

/// The arguments the service accepts, and the named errors for the rest,
/// without the rig: policies, EvaluatePolicy's options, the print options,
/// finger names.
final class OptionParsingTests: XCTestCase {
    override func setUp() {
        super.setUp()
        _ = ServiceLoop.running
    }

    func testPoliciesAndFingers() async throws { try await Self.checkPoliciesAndFingers() }

    @ServiceActor
    private static func checkPoliciesAndFingers() throws {
        XCTAssertEqual(try PolicyValue(argument: .uint32(1)), .deviceOwnerAuthenticationWithBiometrics)
        XCTAssertEqual(try PolicyValue(argument: .uint32(2)), .deviceOwnerAuthentication)
        for bad in [DBusValue.uint32(0), .uint32(3), .uint32(.max), .string("1")] {
            XCTAssertThrowsError(try PolicyValue(argument: bad)) {
                XCTAssertEqual(($0 as? ServiceError)?.kind, .invalidArgs)
            }
        }
        XCTAssertEqual(try FingerName(argument: .string("left-thumb")), .leftThumb)
        XCTAssertThrowsError(try FingerName(argument: .string(String(repeating: "x", count: 5000)))) {
            XCTAssertLessThan(($0 as? ServiceError)?.message.utf8.count ?? .max, 500, "the name is not echoed in full")
        }
    }

    func testEvaluationOptions() async throws { try await Self.checkEvaluationOptions() }

    @ServiceActor
    private static func checkEvaluationOptions() throws {
        let options = try EvaluationOptions(.dictionary([
            LocalAuthBus.Option.requestID: .string("r1"), LocalAuthBus.Option.reuseDuration: .double(1_000),
            LocalAuthBus.Option.interactionNotAllowed: .boolean(true), LocalAuthBus.Option.fallbackTitle: .string(""),
            LocalAuthBus.Option.cancelTitle: .string("Not now"), "future-option": .uint32(1),
        ]))
        XCTAssertEqual(options.requestID, "r1")
        XCTAssertEqual(options.reuseDuration, LocalAuthBus.maximumReuseDuration, "capped at Apple's maximum")
        XCTAssertTrue(options.interactionNotAllowed)
        XCTAssertEqual(options.fallbackTitle, "", "an empty fallback title hides the button (Apple's rule)")
        XCTAssertEqual(options.cancelTitle, "Not now")
        let wrong: [[String: DBusValue]] = [
            [LocalAuthBus.Option.requestID: .uint32(1)],
            [LocalAuthBus.Option.requestID: .variant(.string("nested"))],
            [LocalAuthBus.Option.requestID: .string("")],
            [LocalAuthBus.Option.reuseDuration: .double(-1)],
            [LocalAuthBus.Option.reuseDuration: .double(.nan)],
            [LocalAuthBus.Option.interactionNotAllowed: .string("yes")],
            [LocalAuthBus.Option.cancelTitle: .string(String(repeating: "x", count: LocalAuthBus.maximumTextLength + 1))],
        ]
        for entries in wrong {
            XCTAssertThrowsError(try EvaluationOptions(.dictionary(entries)), "\(entries)") {
                XCTAssertEqual(($0 as? ServiceError)?.kind, .invalidArgs)
            }
        }
    }

    func testPrintOptions() async throws { try await Self.checkPrintOptions() }

    @ServiceActor
    private static func checkPrintOptions() throws {
        let options = try PrintOptions(.dictionary([LocalAuthBus.PrintOption.user: .string("alice"),
                                                                     LocalAuthBus.PrintOption.replace: .boolean(true)]))
        XCTAssertEqual(options.user, "alice")
        XCTAssertTrue(options.replace)
        for entries: [String: DBusValue] in [[LocalAuthBus.PrintOption.user: .string("")],
                                             [LocalAuthBus.PrintOption.user: .uint32(0)],
                                             [LocalAuthBus.PrintOption.replace: .variant(.boolean(true))]] {
            XCTAssertThrowsError(try PrintOptions(.dictionary(entries)), "\(entries)")
        }
    }
}
