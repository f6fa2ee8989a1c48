import DBusCore
import Foundation
@testable import LocalAuthService
import LocalAuthCrypto
import LocalAuthRights
import LocalAuthShared
import XCTest

/// The rights component (Sources/LocalAuthService/Rights) with fakes for its
/// seams (Fakes/FakeRightsSeams.swift) and the real storage and cryptography
/// (the software key backend in a temporary state directory): who may use a
/// right, for how long, what ends an authorization, what kills a right, and
/// the per-uid bounds. Milliseconds, no root, no rig; the rig tests
/// (RightsTests, UserBoundsTests) run the same rules over the bus.
final class RightsAuthorizationTests: XCTestCase {
    override func setUp() {
        super.setUp()
        _ = ServiceLoop.running
    }

    // MARK: Authorizing

    @ServiceActor
    func testAnAuthorizationServesOnlyTheConnectionThatAuthorized() async throws {
        let rig = try RightsRig()
        try await rig.save("token", secret: Array("hunter2".utf8))
        let handle = try await rig.authorize("token", reason: "open the vault")
        XCTAssertEqual(try rig.loadSecret(handle), Array("hunter2".utf8))
        XCTAssertEqual(rig.evaluation.evaluations.map(\.policy), [.deviceOwnerAuthentication])
        XCTAssertEqual(rig.evaluation.evaluations.first?.reason, "open the vault")
        // Another connection of the same uid, and another uid on the same connection name, get nothing.
        await rig.expect(LocalAuthRightsError.notAuthorized) { try rig.loadSecret(handle, sender: ":1.99") }
        await rig.expect(LocalAuthRightsError.notAuthorized) { try rig.loadSecret(handle, uid: 4343) }
        await rig.expect(LocalAuthRightsError.notAuthorized) { try rig.loadSecret("00" + handle.dropFirst(2)) }
        XCTAssertEqual(try rig.loadSecret(handle), Array("hunter2".utf8), "the owner's handle still works")
    }

    @ServiceActor
    func testAFailedEvaluationAuthorizesNothing() async throws {
        let rig = try RightsRig()
        try await rig.save("token", secret: [1, 2, 3])
        rig.evaluation.failure = ServiceErrors.la(.authenticationFailed, "no match")
        await rig.expect(LocalAuthErrorCode.authenticationFailed.dbusName) { _ = try await rig.authorize("token") }
        rig.evaluation.failure = ServiceErrors.la(.userCancel, "cancelled")
        await rig.expect(LocalAuthErrorCode.userCancel.dbusName) { _ = try await rig.authorize("token") }
        XCTAssertTrue(rig.rights.state.authorizations.isEmpty)
        XCTAssertEqual(rig.evaluation.evaluations.count, 2)
    }

    /// A right is released only for a new verification: the caller's
    /// `reuse-duration` is dropped; its other options reach the evaluation.
    @ServiceActor
    func testTheEvaluationGetsTheCallersOptionsButNoReuse() async throws {
        let rig = try RightsRig()
        try await rig.save("token", requirement: .biometry)
        _ = try await rig.authorize(
            "token",
            options: [
                LocalAuthBus.Option.reuseDuration: .double(300),
                LocalAuthBus.Option.requestID: .string("r1"),
            ])
        let evaluation = try XCTUnwrap(rig.evaluation.evaluations.first)
        XCTAssertEqual(evaluation.policy, .deviceOwnerAuthenticationWithBiometrics)
        XCTAssertEqual(evaluation.options.reuseDuration, 0)
        XCTAssertEqual(evaluation.options.requestID, "r1")
    }

    @ServiceActor
    func testARightReplacedDuringTheEvaluationIsNotAuthorized() async throws {
        let rig = try RightsRig()
        try await rig.save("token", secret: [1])
        rig.evaluation.meanwhile = { [unowned rig] in _ = try? await rig.save("token", secret: [2]) }
        await rig.expect(LocalAuthRightsError.rightNotFound) { _ = try await rig.authorize("token") }
        XCTAssertTrue(rig.rights.state.authorizations.isEmpty)
    }

    // MARK: What ends an authorization

    @ServiceActor
    func testAnAuthorizationEndsAfterItsLifetime() async throws {
        let rig = try RightsRig()
        try await rig.save("token", secret: [7])
        let handle = try await rig.authorize("token")
        rig.clock.advance(by: .seconds(RightsServiceLimits.authorizationSeconds) - .milliseconds(1))
        XCTAssertEqual(try rig.loadSecret(handle), [7], "still within its 5 minutes")
        rig.clock.advance(by: .milliseconds(1))
        await rig.expect(LocalAuthRightsError.notAuthorized) { try rig.loadSecret(handle) }
        XCTAssertNil(rig.rights.state.authorizations[handle], "an expired handle is dropped")
    }

    @ServiceActor
    func testTheLifetimeIsTheConfiguredOneAndAtMostFiveMinutes() async throws {
        let short = try RightsRig(authorizationSeconds: 10)
        try await short.save("token", secret: [7])
        let handle = try await short.authorize("token")
        short.clock.advance(by: .seconds(10))
        await short.expect(LocalAuthRightsError.notAuthorized) { try short.loadSecret(handle) }

        let long = try RightsRig(authorizationSeconds: 3600)
        try await long.save("token", secret: [7])
        let other = try await long.authorize("token")
        long.clock.advance(by: .seconds(RightsServiceLimits.authorizationSeconds))
        await long.expect(LocalAuthRightsError.notAuthorized) { try long.loadSecret(other) }
    }

    @ServiceActor
    func testDeauthorizeAndTheCallerLeavingEndTheAuthorization() async throws {
        let rig = try RightsRig()
        try await rig.save("token", secret: [7])
        let first = try await rig.authorize("token")
        _ = try rig.rights.deauthorize(rig.call([.string(first)], sender: ":1.99"))
        XCTAssertEqual(try rig.loadSecret(first), [7], "another connection cannot end it")
        _ = try rig.rights.deauthorize(rig.call([.string(first)]))
        await rig.expect(LocalAuthRightsError.notAuthorized) { try rig.loadSecret(first) }

        let second = try await rig.authorize("token")
        let elsewhere = try await rig.authorize("token", sender: ":1.99")
        rig.rights.callerVanished(RightsRig.sender)
        await rig.expect(LocalAuthRightsError.notAuthorized) { try rig.loadSecret(second) }
        XCTAssertEqual(try rig.loadSecret(elsewhere, sender: ":1.99"), [7], "only the leaver's end")
    }

    @ServiceActor
    func testRemovingOrReplacingTheRightEndsItsAuthorizations() async throws {
        let rig = try RightsRig()
        try await rig.save("token", secret: [7])
        let handle = try await rig.authorize("token")
        try await rig.save("token", secret: [8])
        await rig.expect(LocalAuthRightsError.notAuthorized) { try rig.loadSecret(handle) }
        let again = try await rig.authorize("token")
        _ = try await rig.rights.removeRight(rig.call([.string("token"), rig.app()]))
        await rig.expect(LocalAuthRightsError.notAuthorized) { try rig.loadSecret(again) }
    }

    // MARK: The enrolled set

    @ServiceActor
    func testACurrentSetRightDiesWhenTheEnrolledSetChanges() async throws {
        let rig = try RightsRig()
        try await rig.save("token", requirement: .biometryCurrentSet, secret: [7])
        let handle = try await rig.authorize("token")
        XCTAssertEqual(rig.evaluation.evaluations.map(\.policy), [.deviceOwnerAuthenticationWithBiometrics])
        XCTAssertEqual(try rig.loadSecret(handle), [7], "the set has not changed")
        XCTAssertEqual(try rig.loadSecret(handle), [7])

        rig.enrolledSets.standard = .enrolled(digest: Array(repeating: 0xB2, count: 32))
        await rig.expect(LocalAuthRightsError.rightInvalidated) { try rig.loadSecret(handle) }
        XCTAssertNil(rig.rights.state.authorizations[handle], "a dead right's handle is dropped")
        await rig.expect(LocalAuthRightsError.rightInvalidated) { _ = try await rig.authorize("token") }
        await rig.expect(LocalAuthRightsError.rightInvalidated) {
            _ = try await rig.rights.canAuthorizeRight(rig.call([.string("token"), rig.app()]))
        }
        XCTAssertEqual(rig.evaluation.evaluations.count, 1, "a dead right asks nobody for a finger")
    }

    @ServiceActor
    func testACurrentSetRightNeedsPrintsToBeSaved() async throws {
        let rig = try RightsRig()
        rig.enrolledSets.standard = .empty
        await rig.expect(LocalAuthErrorCode.biometryNotEnrolled.dbusName) {
            try await rig.save("token", requirement: .biometryCurrentSet)
        }
        rig.enrolledSets.standard = .noReader
        await rig.expect(LocalAuthErrorCode.biometryNotAvailable.dbusName) {
            try await rig.save("token", requirement: .biometryCurrentSet)
        }
        let listed = try await rig.list()
        XCTAssertEqual(listed, [])
    }

    @ServiceActor
    func testABiometryAnyRightSurvivesAChangeOfTheEnrolledSet() async throws {
        let rig = try RightsRig()
        try await rig.save("token", requirement: .biometry, secret: [7])
        let handle = try await rig.authorize("token")
        rig.enrolledSets.standard = .enrolled(digest: Array(repeating: 0xB2, count: 32))
        XCTAssertEqual(try rig.loadSecret(handle), [7])
        let again = try await rig.authorize("token")
        XCTAssertEqual(try rig.loadSecret(again), [7])
    }

    // MARK: Per-uid bounds

    @ServiceActor
    func testAuthorizationsAreBoundedPerUid() async throws {
        let rig = try RightsRig()
        try await rig.save("token", secret: [7])
        // 32 a connection: 8 connections reach the uid's 256.
        let perConnection = RightsServiceLimits.authorizationsPerConnection
        for index in 0..<RightsServiceLimits.authorizationsPerUser {
            _ = try await rig.authorize("token", sender: ":1.\(100 + index / perConnection)")
        }
        let before = rig.rights.state.authorizations
        XCTAssertEqual(before.count, RightsServiceLimits.authorizationsPerUser)
        await rig.expect(LocalAuthServiceError.limitExceeded) { _ = try await rig.authorize("token", sender: ":1.900") }
        XCTAssertEqual(Set(rig.rights.state.authorizations.keys), Set(before.keys), "nothing changed")
        // Another uid is not held back by this one.
        try await rig.save("token", uid: 4343)
        _ = try await rig.authorize("token", sender: ":1.901", uid: 4343)
    }

    @ServiceActor
    func testTooManyRightsOfOneUidAreRefusedAndChangeNothing() async throws {
        let rig = try RightsRig()
        // 1,024 right files over 4 apps (256 each): the uid's bound, not an app's.
        for app in 0..<4 { try rig.plantFiles(app: "planted-\(app)", count: RightLimits.rightsPerApp) }
        try await rig.expectRefusedSave(LocalAuthServiceError.limitExceeded)
    }

    @ServiceActor
    func testTooManyAppIDsOfOneUidAreRefusedAndChangeNothing() async throws {
        let rig = try RightsRig()
        for app in 0..<RightLimits.appsPerUser { try rig.plantFiles(app: "planted-\(app)", count: 1) }
        try await rig.expectRefusedSave(LocalAuthServiceError.limitExceeded)
    }

    @ServiceActor
    func testTooManyBytesOfOneUidAreRefusedAndChangeNothing() async throws {
        let rig = try RightsRig()
        try rig.plantFiles(app: "planted", count: 1, bytes: RightLimits.bytesPerUser - 100)
        try await rig.expectRefusedSave(LocalAuthServiceError.limitExceeded)
    }

    // MARK: Whose rights

    @ServiceActor
    func testAnotherAppOrUidCannotReachARight() async throws {
        let rig = try RightsRig()
        try await rig.save("token", secret: [7])
        let other = rig.app("org.example.Other")
        await rig.expect(LocalAuthRightsError.rightNotFound) {
            _ = try await rig.rights.getPublicKey(rig.call([.string("token"), other]))
        }
        await rig.expect(LocalAuthRightsError.rightNotFound) { _ = try await rig.authorize("token", app: "org.example.Other") }
        await rig.expect(LocalAuthRightsError.rightNotFound) { _ = try await rig.authorize("token", uid: 4343) }
        // A sandboxed caller naming the host app's id gets its sandbox's rights, not the host app's.
        rig.callerApps.apps[":1.50"] = .sandboxed("flatpak:org.example.App")
        await rig.expect(LocalAuthRightsError.rightNotFound) { _ = try await rig.authorize("token", sender: ":1.50") }
        XCTAssertTrue(rig.evaluation.evaluations.isEmpty, "nobody was asked for a finger")
        let listed = try await rig.list()
        XCTAssertEqual(listed, ["token"])
    }

    @ServiceActor
    func testAnUnprovenSandboxIsRefused() async throws {
        let rig = try RightsRig()
        try await rig.save("token", secret: [7])
        rig.callerApps.apps[":1.50"] = .unprovenSandbox("flatpak:org.example.App")
        await rig.expect(LocalAuthServiceError.unprovenSandbox) { try await rig.save("token", secret: [8], sender: ":1.50") }
        await rig.expect(LocalAuthServiceError.unprovenSandbox) { _ = try await rig.authorize("token", sender: ":1.50") }
        await rig.expect(LocalAuthServiceError.unprovenSandbox) { _ = try await rig.list(sender: ":1.50") }
        let handle = try await rig.authorize("token")
        XCTAssertEqual(try rig.loadSecret(handle), [7], "the host app's right is unchanged")
    }

    @ServiceActor
    func testAUidGivenToAnotherAccountCannotReachTheOldRights() async throws {
        let rig = try RightsRig()
        rig.accounts.names[RightsRig.uid] = "alice"
        try await rig.save("token", secret: [7])
        rig.accounts.names[RightsRig.uid] = "mallory"
        await rig.expect(LocalAuthRightsError.accountChanged) { _ = try await rig.list() }
        await rig.expect(LocalAuthRightsError.accountChanged) { _ = try await rig.authorize("token") }
    }

    // MARK: Secrets and listing

    @ServiceActor
    func testLoadSecretOfAKeyOnlyRightIsNoSecret() async throws {
        let rig = try RightsRig()
        try await rig.save("key")
        let handle = try await rig.authorize("key")
        await rig.expect(LocalAuthRightsError.noSecret) { try rig.loadSecret(handle) }
        // The key itself works: a signature the public key verifies.
        let publicKey = try P256.PublicKey(x963Representation: try await rig.publicKey("key"))
        let message = Array("hello".utf8)
        let reply = try await rig.rights.sign(
            rig.call([
                .string(handle), .string(KeyAlgorithm.ecdsaSignatureMessageX962SHA256.rawValue),
                .bytes(message),
            ]))
        XCTAssertTrue(publicKey.isValidSignature(try XCTUnwrap(reply.first?.byteArray), for: message))
    }

    @ServiceActor
    func testListRightsOpensNothing() async throws {
        let rig = try RightsRig()
        try await rig.save("damaged", secret: [7])
        try await rig.save("whole", secret: [8])
        try rig.damageLastByte(of: "damaged")
        let fresh = try rig.reopened()  // nothing cached
        let listed = try await fresh.list()
        XCTAssertEqual(listed, ["damaged", "whole"], "the list reads the clear header only")
        await fresh.expect(LocalAuthServiceError.storageFailed) { _ = try await fresh.publicKey("damaged") }
        let whole = try await fresh.publicKey("whole")
        XCTAssertEqual(whole.count, 65)
    }
}
