import DBusCore
@testable import LocalAuthService
import LocalAuthShared
import XCTest

/// What EvaluatePolicy decides before anything waits, case by case, in
/// milliseconds: which ways run, which errors come at once, when a recent
/// fingerprint match is reused.
final class EvaluationPlanTests: XCTestCase {
    private let set = [Array("right-index-finger localauth stamp-1".utf8)]
    private let now = ContinuousClock.now
    private let notEnrolled = ServiceError(.la(.biometryNotEnrolled), "none")

    private func plan(_ policy: PolicyValue, biometrics: ServiceError? = nil, hasPassword: Bool = true,
                      interactionNotAllowed: Bool = false, reuse: Double = 0,
                      last: EvaluationPlan.LastMatch? = nil, enrolledSet: [[UInt8]]? = nil) -> EvaluationPlan {
        EvaluationPlan.decide(policy: policy, biometrics: biometrics, enrolledSet: enrolledSet ?? set,
                              hasPassword: hasPassword, interactionNotAllowed: interactionNotAllowed,
                              reuseDuration: reuse, lastMatch: last, now: now)
    }

    private func code(_ plan: EvaluationPlan) -> String? {
        guard case .fail(let error) = plan else { return nil }
        return String(ErrorTable.localAuth.name(of: error.kind).split(separator: ".").last ?? "")
    }

    func testPolicyOneNeedsUsableBiometrics() {
        XCTAssertEqual(plan(.deviceOwnerAuthenticationWithBiometrics), .run(fingerprint: true, password: false))
        XCTAssertEqual(code(plan(.deviceOwnerAuthenticationWithBiometrics, biometrics: notEnrolled)), "BiometryNotEnrolled")
    }

    func testPolicyTwoOffersBothOrThePasswordAlone() {
        XCTAssertEqual(plan(.deviceOwnerAuthentication), .run(fingerprint: true, password: true))
        XCTAssertEqual(plan(.deviceOwnerAuthentication, biometrics: notEnrolled), .run(fingerprint: false, password: true))
        XCTAssertEqual(code(plan(.deviceOwnerAuthentication, biometrics: notEnrolled, hasPassword: false)), "PasscodeNotSet")
    }

    func testInteractionNotAllowedFailsOnlyWhenSomethingWouldWait() {
        XCTAssertEqual(code(plan(.deviceOwnerAuthenticationWithBiometrics, interactionNotAllowed: true)), "NotInteractive")
        XCTAssertEqual(code(plan(.deviceOwnerAuthenticationWithBiometrics, biometrics: notEnrolled, interactionNotAllowed: true)),
                       "BiometryNotEnrolled", "the reason biometrics cannot be used comes first")
    }

    func testARecentMatchOfTheSameSetIsReused() {
        let recent = EvaluationPlan.LastMatch(time: now - .seconds(10), enrolledSet: set)
        XCTAssertEqual(plan(.deviceOwnerAuthenticationWithBiometrics, interactionNotAllowed: true, reuse: 30, last: recent), .reuse)
        XCTAssertEqual(plan(.deviceOwnerAuthentication, reuse: 30, last: recent), .reuse)
    }

    func testReuseNeedsTheWindowTheSetAndUsableBiometrics() {
        let recent = EvaluationPlan.LastMatch(time: now - .seconds(10), enrolledSet: set)
        XCTAssertNotEqual(plan(.deviceOwnerAuthenticationWithBiometrics, reuse: 5, last: recent), .reuse, "too old")
        XCTAssertNotEqual(plan(.deviceOwnerAuthenticationWithBiometrics, reuse: 0, last: recent), .reuse, "not asked")
        XCTAssertNotEqual(plan(.deviceOwnerAuthenticationWithBiometrics, reuse: 30, last: recent,
                               enrolledSet: set + [Array("left-thumb localauth stamp-2".utf8)]), .reuse, "a finger added")
        XCTAssertEqual(code(plan(.deviceOwnerAuthenticationWithBiometrics, biometrics: notEnrolled, reuse: 30, last: recent)),
                       "BiometryNotEnrolled", "prints deleted or locked out: no reuse")
        XCTAssertNotEqual(plan(.deviceOwnerAuthenticationWithBiometrics, reuse: 30, last: nil), .reuse, "no match yet")
    }
}
