import LocalAuthShared
import XCTest

/// The enrollment names of the contract (dbus/org.example.LocalAuth.xml).
final class EnrollmentContractTests: XCTestCase {
    func testMethodNames() {
        XCTAssertEqual(LocalAuthBus.Method.enrollWithOptions, "EnrollWithOptions")
        XCTAssertEqual(LocalAuthBus.Method.listEnrolledPrints, "ListEnrolledPrints")
        XCTAssertEqual(LocalAuthBus.Method.deleteEnrolledFingerWithOptions, "DeleteEnrolledFingerWithOptions")
        XCTAssertEqual(LocalAuthBus.Method.deleteEnrolledFingersWithOptions, "DeleteEnrolledFingersWithOptions")
    }

    func testEnrollStatusValues() {
        XCTAssertEqual(EnrollProgress.allCases.map(\.rawValue), [
            "enroll-place-finger", "enroll-stage-passed", "enroll-retry-scan", "enroll-swipe-too-short",
            "enroll-finger-not-centered", "enroll-remove-and-retry", "enroll-too-fast", "enroll-completed", "enroll-failed",
            "enroll-duplicate", "enroll-data-full", "enroll-reader-busy",
        ])
    }

    func testOptionAndListKeys() {
        XCTAssertEqual(LocalAuthBus.PrintOption.user, "user")
        XCTAssertEqual(LocalAuthBus.PrintOption.replace, "replace")
        XCTAssertEqual([LocalAuthBus.PrintKey.finger, LocalAuthBus.PrintKey.source, LocalAuthBus.PrintKey.driver,
                        LocalAuthBus.PrintKey.deviceID, LocalAuthBus.PrintKey.created, LocalAuthBus.PrintKey.inUse],
                       ["finger", "source", "driver", "device-id", "created", "in-use"])
        XCTAssertEqual(PrintSource.allCases.map(\.rawValue), ["localauth", "fprintd"])
        XCTAssertEqual(LocalAuthServiceError.readOnly, "org.example.LocalAuth.Error.ReadOnly")
        XCTAssertNil(LocalAuthErrorCode(dbusName: LocalAuthServiceError.readOnly))
    }
}
