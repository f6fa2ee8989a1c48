import DBusCore
@testable import LocalAuthentication
import LocalAuthShared
import XCTest

/// LAError behaves as on Apple's platforms: raw values, domain, bridging.
final class LAErrorTests: XCTestCase {
    func testRawValuesAreApples() {
        let expected: [LAError.Code: Int] = [
            .authenticationFailed: -1, .userCancel: -2, .userFallback: -3, .systemCancel: -4, .passcodeNotSet: -5,
            .biometryNotAvailable: -6, .biometryNotEnrolled: -7, .biometryLockout: -8, .appCancel: -9,
            .invalidContext: -10, .watchNotAvailable: -11, .biometryNotPaired: -12, .biometryDisconnected: -13,
            .invalidDimensions: -14, .notInteractive: -1004,
        ]
        XCTAssertEqual(expected.count, LAError.Code.allCases.count)
        for (code, raw) in expected { XCTAssertEqual(code.rawValue, raw, "\(code)") }
        XCTAssertEqual(LAError.Code.biometryNotEnrolled.rawValue, -7)
        XCTAssertEqual(kLAErrorBiometryLockout, -8)
        XCTAssertEqual(kLAErrorNotInteractive, -1004)
        XCTAssertEqual(kLAErrorTouchIDLockout, kLAErrorBiometryLockout)
        XCTAssertEqual(LAPolicy.deviceOwnerAuthenticationWithBiometrics.rawValue, 1)
        XCTAssertEqual(LAPolicy.deviceOwnerAuthentication.rawValue, 2)
        XCTAssertEqual([LABiometryType.none, .touchID, .faceID, .opticID].map(\.rawValue), [0, 1, 2, 4])
        XCTAssertEqual(LATouchIDAuthenticationMaximumAllowableReuseDuration, 300)
    }

    func testBridgesToAndFromNSErrorAndError() throws {
        let error = LAError(.biometryLockout)
        let nsError = error as NSError
        XCTAssertEqual(nsError.domain, LAErrorDomain)
        XCTAssertEqual(nsError.code, -8)
        XCTAssertEqual(error.errorCode, -8)
        XCTAssertEqual(error._code, -8)
        XCTAssertEqual(Int32(error.errorCode), kLAErrorBiometryLockout)

        // From an NSError, as canEvaluatePolicy hands one out.
        let plain = NSError(domain: LAErrorDomain, code: LAError.Code.userCancel.rawValue)
        let cast = plain as! LAError
        XCTAssertEqual(cast.code, .userCancel)
        let optional: NSError? = plain
        XCTAssertEqual((optional as? LAError)?.code, .userCancel)
        XCTAssertNil(NSError(domain: "other", code: -2) as? LAError, "another domain is not an LAError")

        // Pattern matching on codes, as `catch LAError.userCancel` does.
        let thrown: Error = LAError(.userFallback)
        switch thrown {
        case LAError.userCancel: XCTFail("wrong code matched")
        case LAError.userFallback: break
        default: XCTFail("no code matched")
        }
        XCTAssertEqual((thrown as? LAError)?.code, .userFallback)
    }

    func testEveryCodeHasARealDescription() {
        var seen = Set<String>()
        for code in LAError.Code.allCases {
            let text = LAError(code).localizedDescription
            XCTAssertFalse(text.contains("could not be completed"), "\(code): \(text)")
            XCTAssertGreaterThan(text.count, 15)
            XCTAssertTrue(seen.insert(text).inserted, "\(code) shares its description")
        }
    }

    func testReuseDurationIsCapped() {
        let context = LAContext()
        context.touchIDAuthenticationAllowableReuseDuration = 10_000
        XCTAssertEqual(context.touchIDAuthenticationAllowableReuseDuration, 300)
        context.touchIDAuthenticationAllowableReuseDuration = -5
        XCTAssertEqual(context.touchIDAuthenticationAllowableReuseDuration, 0)
        XCTAssertNil(context.localizedFallbackTitle)
        context.localizedFallbackTitle = ""
        XCTAssertEqual(context.localizedFallbackTitle, "")
    }

    /// The wire's table (LocalAuthErrorCode) names the codes the service
    /// sends; LAError.Code is Apple's enum and holds Apple's numbers. Every
    /// code on the wire must arrive as the LAError case of the same name.
    func testEveryCodeOnTheWireIsTheSameLAErrorCase() {
        for wire in LocalAuthErrorCode.allCases {
            XCTAssertEqual(String(describing: LAError.Code(wire)), String(describing: wire))
            let error = LAError(DBusError(DBusError.Name(rawValue: wire.dbusName), "from the service"))
            XCTAssertEqual(error.code, LAError.Code(wire), wire.dbusName)
            XCTAssertEqual(error.dbusErrorName, wire.dbusName)
        }
    }
}
