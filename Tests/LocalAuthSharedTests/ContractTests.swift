import XCTest
import LocalAuthShared

/// The names of the D-Bus contract (DESIGN.md); Apple's numbers are the
/// client library's (LAErrorTests).
final class ErrorCodeTests: XCTestCase {
    func testDBusNamesFollowTheContract() {
        let expected: [LocalAuthErrorCode: String] = [
            .authenticationFailed: "AuthenticationFailed", .userCancel: "UserCancel", .userFallback: "UserFallback",
            .systemCancel: "SystemCancel", .passcodeNotSet: "PasscodeNotSet",
            .biometryNotAvailable: "BiometryNotAvailable", .biometryNotEnrolled: "BiometryNotEnrolled",
            .biometryLockout: "BiometryLockout", .appCancel: "AppCancel", .invalidContext: "InvalidContext",
            .notInteractive: "NotInteractive",
        ]
        XCTAssertEqual(expected.count, LocalAuthErrorCode.allCases.count)
        for code in LocalAuthErrorCode.allCases {
            XCTAssertEqual(code.dbusSuffix, expected[code])
            XCTAssertEqual(code.dbusName, "org.example.LocalAuth.Error." + (expected[code] ?? "?"))
        }
    }

    func testDBusNameRoundTrips() {
        for code in LocalAuthErrorCode.allCases {
            XCTAssertEqual(LocalAuthErrorCode(dbusName: code.dbusName), code)
        }
        XCTAssertEqual(Set(LocalAuthErrorCode.allCases.map(\.dbusName)).count, LocalAuthErrorCode.allCases.count)
    }

    func testUnknownNamesGiveNil() {
        let unknown = [
            "", "UserCancel", "org.example.LocalAuth.Error.", "org.example.LocalAuth.Error.NoSuchThing",
            "org.example.LocalAuth.Error.usercancel", "org.example.LocalAuth.Error.UserCancel.Extra",
            "org.example.LocalAuth.Error.UserCancel ", "org.freedesktop.DBus.Error.UserCancel",
            "org.freedesktop.DBus.Error.InvalidArgs", "org.example.LocalAuth.UserCancel",
            LocalAuthServiceError.permissionDenied, LocalAuthServiceError.busy,
        ]
        for name in unknown {
            XCTAssertNil(LocalAuthErrorCode(dbusName: name), name)
        }
    }

    func testServiceErrorNamesShareThePrefix() {
        XCTAssertEqual(LocalAuthServiceError.permissionDenied, "org.example.LocalAuth.Error.PermissionDenied")
        for name in [LocalAuthServiceError.alreadyEnrolled, LocalAuthServiceError.notEnrolled,
                     LocalAuthServiceError.busy, LocalAuthServiceError.storageFailed] {
            XCTAssertTrue(name.hasPrefix(LocalAuthBus.errorPrefix), name)
        }
    }
}

final class ContractValueTests: XCTestCase {
    func testBusNames() {
        XCTAssertEqual(LocalAuthBus.serviceName, "org.example.LocalAuth")
        XCTAssertEqual(LocalAuthBus.interface, "org.example.LocalAuth")
        XCTAssertEqual(LocalAuthBus.objectPath, "/org/example/LocalAuth")
        XCTAssertEqual(LocalAuthBus.errorPrefix, "org.example.LocalAuth.Error.")
        XCTAssertEqual(LocalAuthBus.maximumReuseDuration, 300)
    }

    func testFingerNamesInLibfprintOrder() {
        let expected: [(FingerName, UInt32, String)] = [
            (.leftThumb, 1, "left-thumb"), (.leftIndex, 2, "left-index-finger"),
            (.leftMiddle, 3, "left-middle-finger"), (.leftRing, 4, "left-ring-finger"),
            (.leftLittle, 5, "left-little-finger"), (.rightThumb, 6, "right-thumb"),
            (.rightIndex, 7, "right-index-finger"), (.rightMiddle, 8, "right-middle-finger"),
            (.rightRing, 9, "right-ring-finger"), (.rightLittle, 10, "right-little-finger"),
        ]
        XCTAssertEqual(FingerName.allCases.count, expected.count)
        for (finger, number, name) in expected {
            XCTAssertEqual(finger.fpFinger, number, "\(finger)")
            XCTAssertEqual(finger.rawValue, name)
            XCTAssertEqual(FingerName(fpFinger: number), finger)
            XCTAssertEqual(FingerName(rawValue: name), finger)
        }
    }

    func testFingerRoundTripAndOutOfRange() {
        for finger in FingerName.allCases {
            XCTAssertEqual(FingerName(fpFinger: finger.fpFinger), finger)
            XCTAssertEqual(FingerName(rawValue: finger.rawValue), finger)
        }
        // FP_FINGER_UNKNOWN is 0.
        XCTAssertNil(FingerName(fpFinger: 0))
        XCTAssertNil(FingerName(fpFinger: 11))
        XCTAssertNil(FingerName(fpFinger: .max))
        XCTAssertNil(FingerName(rawValue: "right-index"))
        XCTAssertNil(FingerName(rawValue: "any"))
    }

    func testPolicyValues() {
        XCTAssertEqual(PolicyValue.deviceOwnerAuthenticationWithBiometrics.rawValue, 1)
        XCTAssertEqual(PolicyValue.deviceOwnerAuthentication.rawValue, 2)
        XCTAssertEqual(PolicyValue.allCases.count, 2)
        XCTAssertNil(PolicyValue(rawValue: 0))
        XCTAssertNil(PolicyValue(rawValue: 3))
        XCTAssertEqual(PolicyValue(rawValue: 2), .deviceOwnerAuthentication)
    }

    func testBiometryKinds() {
        XCTAssertEqual(BiometryKind.none.rawValue, 0)
        XCTAssertEqual(BiometryKind.touchID.rawValue, 1)
        XCTAssertEqual(BiometryKind.faceID.rawValue, 2)
        XCTAssertEqual(BiometryKind.opticID.rawValue, 4)
        XCTAssertNil(BiometryKind(rawValue: 3))
        XCTAssertEqual(BiometryKind(rawValue: 4), .opticID)
    }

    func testProgressAndActionNames() {
        XCTAssertEqual(EvaluationProgress.allCases.map(\.rawValue),
                       ["place-finger", "retry-scan", "swipe-too-short", "finger-not-centered", "remove-and-retry", "too-fast",
                        "no-match", "reader-busy"])
        XCTAssertEqual(PolkitAction.evaluate.rawValue, "org.example.LocalAuth.evaluate")
        XCTAssertEqual(PolkitAction.authenticateOwner.rawValue, "org.example.LocalAuth.authenticate-owner")
        XCTAssertEqual(PolkitAction.enroll.rawValue, "org.example.LocalAuth.enroll")
        XCTAssertEqual(PolkitAction.manage.rawValue, "org.example.LocalAuth.manage")
        XCTAssertEqual(LocalAuthBus.Option.requestID, "request-id")
        XCTAssertEqual(LocalAuthBus.Option.reuseDuration, "reuse-duration")
        XCTAssertEqual(LocalAuthBus.Option.interactionNotAllowed, "interaction-not-allowed")
    }
}
