import Foundation
import RigSupport
import XCTest

/// Runs the Apple-style programs in Examples/ against the rig: they compile
/// from code as Apple's documentation writes it, and they behave.
final class ExamplesTests: RigTestCase, @unchecked Sendable {
    private func example(_ name: String) throws -> Outcome {
        try runProgram(try Paths.example(name), [], environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address], timeout: 60)
    }

    func testPreflightSwitchesOnTheErrorCode() async throws {
        let before = try example("BiometricPreflight")
        XCTAssertEqual(before.status, 1)
        XCTAssertEqual(before.stdout, "Biometry is not enrolled.\n")
        try await enroll(as: "owner-finger")
        let after = try example("BiometricPreflight")
        XCTAssertEqual(after.status, 0)
        XCTAssertEqual(after.stdout, "Touch ID is available.\n")
    }

    func testSingletonManagerMapsSuccessAndFailure() async throws {
        let notEnrolled = try example("BiometricAuthManager")
        XCTAssertEqual(notEnrolled.stdout, "Biometry: Touch ID\nFailed: Biometry is not set up.\n")
        try await enroll(as: "owner-finger")
        present("owner-finger")
        let success = try example("BiometricAuthManager")
        XCTAssertEqual(success.stdout, "Biometry: Touch ID\nAuthenticated\n", success.output)
        present("someone-else", times: 3)
        let failure = try example("BiometricAuthManager")
        XCTAssertEqual(failure.stdout, "Biometry: Touch ID\nFailed: There was a problem verifying your identity.\n", failure.output)
        present("someone-else", times: 2)
        let lockout = try example("BiometricAuthManager")
        XCTAssertEqual(lockout.stdout, "Biometry: Touch ID\nFailed: Too many failed attempts. Use your passcode.\n", lockout.output)
    }

    func testAsyncUnlockUsesTheFingerprint() async throws {
        try await enroll(as: "owner-finger")
        present("owner-finger")
        let unlocked = try example("AsyncUnlock")
        XCTAssertEqual(unlocked.stdout, "unlocked\n", unlocked.output)
    }
}
