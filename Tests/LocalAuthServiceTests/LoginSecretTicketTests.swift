import DBusCore
@testable import LocalAuthService
import LocalAuthCrypto
import LocalAuthRights
import LocalAuthShared
import XCTest

/// The login secret's release rules (LoginSecret/, docs/KEYRING.md) over
/// fakes (Fakes/FakeLoginSecretSeams.swift): a secret leaves through the
/// machine wrap only for a ticket the service recorded when it saw a match,
/// for that user, that process, that nonce, within 10 s, once. Milliseconds.
final class LoginSecretTicketTests: XCTestCase {
    override func setUp() {
        super.setUp()
        _ = ServiceLoop.running
    }

    let nonce = [UInt8](repeating: 0xA5, count: 32)

    @ServiceActor
    func expectRefused(
        _ kind: ServiceError.Kind, _ message: String, file: StaticString = #filePath, line: UInt = #line,
        _ body: () async throws -> Void
    ) async {
        do {
            try await body()
            XCTFail("not refused: \(message)", file: file, line: line)
        } catch let error as ServiceError {
            XCTAssertEqual(error.kind, kind, "\(message): \(error)", file: file, line: line)
        } catch {
            XCTFail("\(message): \(error)", file: file, line: line)
        }
    }

    @ServiceActor
    func testAMatchReleasesTheSameSecretTheEnablingGaveOnce() async throws {
        let rig = try LoginSecretRig()
        let secret = try await rig.enable()
        rig.secrets.matchSeen(uid: 1000, caller: rig.pamHost.caller, nonce: nonce)
        let released = try await rig.release(nonce: nonce)
        XCTAssertEqual(released.secret, secret)
        XCTAssertEqual(released.answer[LocalAuthLoginSecretBus.Key.stale]?.bool, false)
        await expectRefused(.notAuthorized, "a replayed ticket") { _ = try await rig.release(nonce: nonce) }
    }

    @ServiceActor
    func testNoMatchNoRelease() async throws {
        let rig = try LoginSecretRig()
        _ = try await rig.enable()
        await expectRefused(.notAuthorized, "no match was seen") { _ = try await rig.release(nonce: nonce) }
        await expectRefused(.notAuthorized, "no match, empty nonce (the fprintd form)") { _ = try await rig.release(nonce: []) }
    }

    @ServiceActor
    func testAMatchOfAnotherUserReleasesNothing() async throws {
        let rig = try LoginSecretRig()
        _ = try await rig.enable()
        rig.secrets.matchSeen(uid: 1001, caller: rig.pamHost.caller, nonce: nonce)
        await expectRefused(.notAuthorized, "bob's match, alice's secret") { _ = try await rig.release("alice", nonce: nonce) }
        // The attempt cost the process its ticket: with it, bob's release
        // would have reached his (missing) record, NoSecret; now it is refused first.
        await expectRefused(.notAuthorized, "the ticket went with the wrong attempt") { _ = try await rig.release("bob", nonce: nonce) }
    }

    @ServiceActor
    func testAnotherProcessAnotherNonceOrANonRootCallerGetsNothing() async throws {
        let rig = try LoginSecretRig()
        let secret = try await rig.enable()
        // Another root process (pid reused: same pid, another start time).
        rig.secrets.matchSeen(uid: 1000, caller: rig.pamHost.caller, nonce: nonce)
        let reused = LoginSecretRig.request(uid: 0, sender: ":1.11", process: CallerProcess(pid: 4242, startTime: 778))
        await expectRefused(.notAuthorized, "a pid reused") { _ = try await rig.release(nonce: nonce, by: reused) }
        // The same process on another connection is the same process.
        let sameProcess = LoginSecretRig.request(uid: 0, sender: ":1.12", process: CallerProcess(rig.pamHost.caller))
        let value1 = try await rig.release(nonce: nonce, by: sameProcess).secret
        XCTAssertEqual(value1, secret)
        // Another nonce: another transaction of the same process.
        rig.secrets.matchSeen(uid: 1000, caller: rig.pamHost.caller, nonce: nonce)
        await expectRefused(.notAuthorized, "another nonce") { _ = try await rig.release(nonce: [1, 2, 3]) }
        await expectRefused(.notAuthorized, "a wrong guess took the ticket") { _ = try await rig.release(nonce: nonce) }
        // Not root, even the owner: refused before any ticket is looked at.
        rig.secrets.matchSeen(uid: 1000, caller: rig.alice.caller, nonce: nonce)
        await expectRefused(.permissionDenied, "alice herself") { _ = try await rig.release(nonce: nonce, by: rig.alice) }
        // A root caller whose process could not be pinned records and gets nothing.
        let unpinned = LoginSecretRig.request(uid: 0, sender: ":1.13", process: nil)
        rig.secrets.matchSeen(uid: 1000, caller: unpinned.caller, nonce: nonce)
        await expectRefused(.permissionDenied, "an unpinned process") { _ = try await rig.release(nonce: nonce, by: unpinned) }
    }

    @ServiceActor
    func testATicketExpiresAfterTenSeconds() async throws {
        let rig = try LoginSecretRig()
        let secret = try await rig.enable()
        rig.secrets.matchSeen(uid: 1000, caller: rig.pamHost.caller, nonce: nonce)
        rig.clock.advance(by: 9.9)
        let value2 = try await rig.release(nonce: nonce).secret
        XCTAssertEqual(value2, secret, "within 10 s")
        rig.secrets.matchSeen(uid: 1000, caller: rig.pamHost.caller, nonce: nonce)
        rig.clock.advance(by: 10)
        await expectRefused(.notAuthorized, "expired") { _ = try await rig.release(nonce: nonce) }
    }

    func testTicketsAreBoundedPerUserAndInAll() {
        var tickets = LoginSecretTickets()
        let now = ContinuousClock.now
        for pid in UInt32(1)...10 { tickets.record(uid: 1000, process: CallerProcess(pid: pid, startTime: 1), nonce: [1], now: now) }
        XCTAssertEqual(tickets.tickets.count, LoginSecretTickets.perUser)
        XCTAssertEqual(tickets.tickets.map(\.process.pid), [7, 8, 9, 10], "the oldest go")
        for uid in UInt32(0)..<300 { tickets.record(uid: uid, process: CallerProcess(pid: uid, startTime: 2), nonce: [1], now: now) }
        XCTAssertEqual(tickets.tickets.count, LoginSecretTickets.inTotal)
    }

    @ServiceActor
    func testAPasswordResetByRootWaitsForTheOwnersFinger() async throws {
        let rig = try LoginSecretRig()
        let secret = try await rig.enable("old password")
        // root's passwd: no proof.
        let reset = try ChangeLoginSecretPasswordArguments([.string("alice"), .dictionary(try LoginSecretRig.options("new password", salt: 2))])
        let answer = try await rig.secrets.changePassword(rig.pamHost, reset)
        XCTAssertEqual(answer.first?.stringKeyedDictionary?[LocalAuthLoginSecretBus.Key.pending]?.bool, true)
        let wrap = try await passwordWrap(rig)
        XCTAssertEqual(wrap[LocalAuthLoginSecretBus.Key.stale]?.bool, true)
        let stale = try XCTUnwrapBytes(wrap[LocalAuthLoginSecretBus.Key.passwordWrap])
        XCTAssertThrowsError(try ECIES.decrypt(stale, with: try LoginSecretRig.passwordKey("new password")), "root's password opens nothing yet")
        XCTAssertEqual(try ECIES.decrypt(stale, with: try LoginSecretRig.passwordKey("old password")), secret)
        // The owner's finger: the wrap follows the new password.
        rig.secrets.matchSeen(uid: 1000, caller: rig.pamHost.caller, nonce: nonce)
        let released = try await rig.release(nonce: nonce)
        XCTAssertEqual(released.answer[LocalAuthLoginSecretBus.Key.renewed]?.bool, true)
        let renewed = try XCTUnwrapBytes(try await passwordWrap(rig)[LocalAuthLoginSecretBus.Key.passwordWrap])
        XCTAssertEqual(try ECIES.decrypt(renewed, with: try LoginSecretRig.passwordKey("new password")), secret)
        XCTAssertThrowsError(try ECIES.decrypt(renewed, with: try LoginSecretRig.passwordKey("old password")))
    }

    @ServiceActor
    func testPasswdWithTheOldPasswordRewrapsAtOnceAndAForgedProofIsRefused() async throws {
        let rig = try LoginSecretRig()
        let secret = try await rig.enable("old password")
        var options = try LoginSecretRig.options("new password", salt: 3)
        let payload = try LoginSecretRig.passwordKey("new password").publicKey.x963Representation + [UInt8](repeating: 3, count: 16)
        let message = LocalAuthLoginSecretBus.ProofLabel.message(
            LocalAuthLoginSecretBus.ProofLabel.change, uid: 1000, sender: rig.pamHost.sender,
            payload: payload)
        options[LocalAuthLoginSecretBus.Key.proof] = .bytes(try LoginSecretRig.passwordKey("a guess").signature(for: message))
        await expectRefused(.notAuthorized, "a proof by another password") {
            _ = try await rig.secrets.changePassword(rig.pamHost, try ChangeLoginSecretPasswordArguments([.string("alice"), .dictionary(options)]))
        }
        options[LocalAuthLoginSecretBus.Key.proof] = .bytes(try LoginSecretRig.passwordKey("old password").signature(for: message))
        let other = LoginSecretRig.request(uid: 0, sender: ":1.66", process: CallerProcess(rig.pamHost.caller))
        await expectRefused(.notAuthorized, "a proof replayed on another connection") {
            _ = try await rig.secrets.changePassword(other, try ChangeLoginSecretPasswordArguments([.string("alice"), .dictionary(options)]))
        }
        let answer = try await rig.secrets.changePassword(rig.pamHost, try ChangeLoginSecretPasswordArguments([.string("alice"), .dictionary(options)]))
        XCTAssertEqual(answer.first?.stringKeyedDictionary?[LocalAuthLoginSecretBus.Key.pending]?.bool, false)
        let wrap = try XCTUnwrapBytes(try await passwordWrap(rig)[LocalAuthLoginSecretBus.Key.passwordWrap])
        XCTAssertEqual(try ECIES.decrypt(wrap, with: try LoginSecretRig.passwordKey("new password")), secret)
        XCTAssertThrowsError(try ECIES.decrypt(wrap, with: try LoginSecretRig.passwordKey("old password")), "the old password no longer opens it")
    }

    @ServiceActor
    func testAfterTheMachineKeyChangedAPasswordLoginResealsTheSameSecret() async throws {
        let rig = try LoginSecretRig()
        let secret = try await rig.enable("old password")
        rig.machineKey = [UInt8](repeating: 0x22, count: 32)
        rig.secrets.matchSeen(uid: 1000, caller: rig.pamHost.caller, nonce: nonce)
        await expectRefused(.storageFailed, "the machine wrap no longer opens") { _ = try await rig.release(nonce: nonce) }
        // A password login: the wrap, a reseal key, K back.
        let wrap = try await passwordWrap(rig)
        XCTAssertEqual(wrap[LocalAuthLoginSecretBus.Key.machineWrapOK]?.bool, false)
        let opened = try ECIES.decrypt(
            try XCTUnwrapBytes(wrap[LocalAuthLoginSecretBus.Key.passwordWrap]),
            with: try LoginSecretRig.passwordKey("old password"))
        let resealKey = try P256.PublicKey(x963Representation: try XCTUnwrapBytes(wrap[LocalAuthLoginSecretBus.Key.resealKey]))
        // A wrong K is refused (the commitment), and costs the reseal key.
        await expectRefused(.notAuthorized, "not K") {
            _ = try await rig.secrets.reseal(
                rig.pamHost, try ResealLoginSecretArguments([.string("alice"), .bytes(try ECIES.encrypt([UInt8](repeating: 9, count: 32), to: resealKey))]))
        }
        let again = try P256.PublicKey(x963Representation: try XCTUnwrapBytes(try await passwordWrap(rig)[LocalAuthLoginSecretBus.Key.resealKey]))
        _ = try await rig.secrets.reseal(rig.pamHost, try ResealLoginSecretArguments([.string("alice"), .bytes(try ECIES.encrypt(opened, to: again))]))
        let value3 = try await passwordWrap(rig)[LocalAuthLoginSecretBus.Key.machineWrapOK]?.bool
        XCTAssertEqual(value3, true)
        rig.secrets.matchSeen(uid: 1000, caller: rig.pamHost.caller, nonce: nonce)
        let value4 = try await rig.release(nonce: nonce).secret
        XCTAssertEqual(value4, secret, "the same keyring secret")
    }

    /// A TPM that no longer opens at all (cleared, replaced): the password
    /// wrap is still answered, so the password opens the keyring.
    @ServiceActor
    func testWithoutAnyKeyProtectorThePasswordWrapIsStillAnswered() async throws {
        let rig = try LoginSecretRig()
        let secret = try await rig.enable("old password")
        rig.machineKey = []
        let wrap = try await passwordWrap(rig)
        XCTAssertEqual(wrap[LocalAuthLoginSecretBus.Key.machineWrapOK]?.bool, false)
        XCTAssertNil(wrap[LocalAuthLoginSecretBus.Key.resealKey], "nothing to reseal with")
        let opened = try ECIES.decrypt(
            try XCTUnwrapBytes(wrap[LocalAuthLoginSecretBus.Key.passwordWrap]),
            with: try LoginSecretRig.passwordKey("old password"))
        XCTAssertEqual(opened, secret)
    }

    @ServiceActor
    func testEnableStatusAndDisableNeedThePassword() async throws {
        let rig = try LoginSecretRig()
        XCTAssertEqual(try rig.secrets.status(rig.alice).first?.stringKeyedDictionary?[LocalAuthLoginSecretBus.Key.enabled]?.bool, false)
        let secret = try await rig.enable("old password")
        await expectRefused(.alreadyEnrolled, "twice") { _ = try await rig.enable("x") }
        let status = try XCTUnwrap(rig.secrets.status(rig.alice).first?.stringKeyedDictionary)
        XCTAssertEqual(status[LocalAuthLoginSecretBus.Key.enabled]?.bool, true)
        XCTAssertEqual(status[LocalAuthLoginSecretBus.Key.backend]?.string, SoftwareKeyProtector.name)
        XCTAssertNil(status[LocalAuthLoginSecretBus.Key.passwordWrap], "the status carries no wrap")
        // The user's side never reaches the PAM host's methods.
        await expectRefused(.permissionDenied, "alice asks her own wrap as a PAM host would") {
            _ = try await rig.secrets.passwordWrap(rig.alice, try GetLoginSecretPasswordWrapArguments([.string("alice"), .dictionary([:])]))
        }
        let message = LocalAuthLoginSecretBus.ProofLabel.message(LocalAuthLoginSecretBus.ProofLabel.disable, uid: 1000, sender: rig.alice.sender)
        await expectRefused(.notAuthorized, "a disable without the password") {
            _ = try rig.secrets.disable(
                rig.alice,
                try DisableLoginSecretArguments([
                    .bytes(try LoginSecretRig.passwordKey("guess").signature(for: message)),
                    .dictionary([LocalAuthLoginSecretBus.Key.commit: .boolean(true)]),
                ]))
        }
        let proof = try LoginSecretRig.passwordKey("old password").signature(for: message)
        let wrap = try XCTUnwrapBytes(try rig.secrets.disable(rig.alice, try DisableLoginSecretArguments([.bytes(proof), .dictionary([:])])).first)
        XCTAssertEqual(try ECIES.decrypt(wrap, with: try LoginSecretRig.passwordKey("old password")), secret)
        XCTAssertNotNil(try rig.store.load(1000), "kept until commit")
        _ = try rig.secrets.disable(
            rig.alice, try DisableLoginSecretArguments([.bytes(proof), .dictionary([LocalAuthLoginSecretBus.Key.commit: .boolean(true)])]))
        XCTAssertNil(try rig.store.load(1000))
    }

    func testVerifyUserReadsTheNonce() throws {
        let plain = try VerifyUserArguments([.string("alice"), .dictionary([LocalAuthBus.Option.requestID: .string("r")])])
        XCTAssertNil(plain.loginSecretNonce)
        let with = try VerifyUserArguments([.string("alice"), .dictionary([LocalAuthLoginSecretBus.Key.nonce: .bytes(nonce)])])
        XCTAssertEqual(with.loginSecretNonce, nonce)
        XCTAssertThrowsError(try VerifyUserArguments([.string("alice"), .dictionary([LocalAuthLoginSecretBus.Key.nonce: .bytes([])])]))
        XCTAssertThrowsError(try VerifyUserArguments([.string("alice"), .dictionary([LocalAuthLoginSecretBus.Key.nonce: .string("x")])]))
    }

    @ServiceActor
    func passwordWrap(_ rig: LoginSecretRig) async throws -> [String: DBusValue] {
        let answer = try await rig.secrets.passwordWrap(rig.pamHost, try GetLoginSecretPasswordWrapArguments([.string("alice"), .dictionary([:])]))
        return try XCTUnwrap(answer.first?.stringKeyedDictionary)
    }
}
