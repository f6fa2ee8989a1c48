import DBusCore
import Foundation
@testable import LocalAuthService
import LocalAuthCrypto
import LocalAuthRights
import LocalAuthShared
import XCTest

/// The login secret's rules of issue 37 (LoginSecret/, docs/KEYRING.md) over
/// fakes (Fakes/FakeLoginSecretSeams.swift): the person proves it is them to
/// turn it on, the record is created once, a TPM's machine wrap never goes
/// to the software key unless the administrator says so, and a passwd whose
/// re-wrap could not run leaves the wrap marked stale. Milliseconds.
final class LoginSecretRulesTests: XCTestCase {
    override func setUp() {
        super.setUp()
        _ = ServiceLoop.running
    }

    let nonce = [UInt8](repeating: 0x5A, count: 32)

    // MARK: Who turns it on

    /// Any program of the session could turn the login secret on with a
    /// password key of its own (polkit said yes for an active session), and
    /// the owner's password would then neither turn it off nor on again.
    /// The keyring action asks the person, every time; the rows let polkit ask.
    func testTurningItOnOrOffAsksThePersonEveryTime() throws {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        let policy = try String(contentsOf: url.appendingPathComponent("polkit/org.example.LocalAuth.policy"), encoding: .utf8)
        let keyring = try XCTUnwrap(policy.components(separatedBy: "<action id=\"org.example.LocalAuth.keyring\">").dropFirst().first)
            .components(separatedBy: "</action>")[0]
        XCTAssertTrue(keyring.contains("<allow_active>auth_self</allow_active>"), keyring)
        XCTAssertTrue(keyring.contains("<allow_inactive>no</allow_inactive>"), keyring)
        XCTAssertTrue(keyring.contains("<allow_any>no</allow_any>"), keyring)
        XCTAssertFalse(keyring.contains("_keep"), keyring)
        for method in [LocalAuthLoginSecretBus.Method.enable, LocalAuthLoginSecretBus.Method.disable] {
            let row = try XCTUnwrap(LocalAuthContract.loginSecretMethods[method], method)
            XCTAssertEqual(row.authorization.actions, [PolkitAction.keyring.rawValue], method)
            XCTAssertTrue(row.authorization.interactive, "\(method): polkit may ask the person")
        }
    }

    // MARK: One record, created once

    /// Two enables of one uid racing on the protector's first open (a TPM's
    /// unseal suspends the call): both saw "no record yet". The second to
    /// save gets AlreadyEnrolled and changes nothing; the first's record,
    /// whose K its localauthctl gives the keyring, stays.
    @ServiceActor
    func testTwoEnablesRacingOnTheFirstOpenOneWinsAndTheLoserChangesNothing() async throws {
        let rig = try LoginSecretRig()
        var arrived = 0
        rig.whileOpening = {
            arrived += 1
            for _ in 0..<10_000 where arrived < 2 { await Task.yield() }
        }
        let first = Task { @ServiceActor in try await rig.enable("first password", salt: 1) }
        let second = Task { @ServiceActor in try await rig.enable("second password", salt: 2) }
        var won: [(String, [UInt8])] = []
        var lost: [ServiceError.Kind] = []
        for (password, task) in [("first password", first), ("second password", second)] {
            do {
                won.append((password, try await task.value))
            } catch let error as ServiceError {
                lost.append(error.kind)
            }
        }
        XCTAssertEqual(arrived, 2, "both were inside the open at once")
        XCTAssertEqual(won.count, 1, "exactly one enable wins")
        XCTAssertEqual(lost, [.alreadyEnrolled])
        let (password, secret) = try XCTUnwrap(won.first)
        let record = try XCTUnwrap(try rig.store.load(1000), "the winner's record is there")
        XCTAssertEqual(try ECIES.decrypt(record.passwordWrap, with: try LoginSecretRig.passwordKey(password)), secret)
        rig.secrets.matchSeen(uid: 1000, caller: rig.pamHost.caller, nonce: nonce)
        let released = try await rig.release(nonce: nonce).secret
        XCTAssertEqual(released, secret, "a finger releases the K the winner's keyring got")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: rig.store.directory), ["1000"], "no temporary file left")
    }

    // MARK: The TPM's wrap stays the TPM's

    /// `--tpm auto` on a boot without the TPM falls back to software: the
    /// TPM's machine wrap does not open, and a password login must not seal
    /// K to the on-disk machine key. The password still opens the keyring.
    /// With `--tpm off` (the administrator chose software) it may.
    @ServiceActor
    func testATPMsWrapIsNeverResealedToTheSoftwareKeyUnlessTheAdministratorSaysSo() async throws {
        let rig = try LoginSecretRig()
        rig.backendName = TPMKeyProtector.name
        let secret = try await rig.enable("old password")
        rig.backendName = SoftwareKeyProtector.name

        let wrap = try await passwordWrap(rig)
        XCTAssertEqual(wrap[LocalAuthLoginSecretBus.Key.machineWrapOK]?.bool, false)
        XCTAssertNil(wrap[LocalAuthLoginSecretBus.Key.resealKey], "no reseal offered to the software key")
        let opened = try ECIES.decrypt(
            try XCTUnwrapBytes(wrap[LocalAuthLoginSecretBus.Key.passwordWrap]), with: try LoginSecretRig.passwordKey("old password"))
        XCTAssertEqual(opened, secret, "the password opens the keyring all the same")
        XCTAssertEqual(try rig.store.load(1000)?.backend, TPMKeyProtector.name)

        rig.softwareChosen = true
        let offered = try await passwordWrap(rig)
        let key = try P256.PublicKey(x963Representation: try XCTUnwrapBytes(offered[LocalAuthLoginSecretBus.Key.resealKey]))
        // The administrator changes their mind between the offer and the reseal: decided at the reseal.
        rig.softwareChosen = false
        let sealed = try ECIES.encrypt(opened, to: key)
        do {
            _ = try await rig.secrets.reseal(rig.pamHost, try ResealLoginSecretArguments([.string("alice"), .bytes(sealed)]))
            XCTFail("resealed to software without --tpm off")
        } catch {
            XCTAssertEqual(error.kind, .permissionDenied)
        }
        XCTAssertEqual(try rig.store.load(1000)?.backend, TPMKeyProtector.name, "nothing changed")

        rig.softwareChosen = true
        let again = try P256.PublicKey(x963Representation: try XCTUnwrapBytes(try await passwordWrap(rig)[LocalAuthLoginSecretBus.Key.resealKey]))
        _ = try await rig.secrets.reseal(rig.pamHost, try ResealLoginSecretArguments([.string("alice"), .bytes(try ECIES.encrypt(opened, to: again))]))
        XCTAssertEqual(try rig.store.load(1000)?.backend, SoftwareKeyProtector.name, "the administrator said so")
    }

    func testTheResealRuleNamesOnlyTheTPMToSoftwareStep() {
        let (tpm, software) = (TPMKeyProtector.name, SoftwareKeyProtector.name)
        XCTAssertNotNil(LoginSecrets.resealRefusal(from: tpm, to: software, softwareChosen: false))
        XCTAssertNil(LoginSecrets.resealRefusal(from: tpm, to: software, softwareChosen: true))
        XCTAssertNil(LoginSecrets.resealRefusal(from: tpm, to: tpm, softwareChosen: false), "a new TPM, or a new sealed key")
        XCTAssertNil(LoginSecrets.resealRefusal(from: software, to: tpm, softwareChosen: false), "up to the TPM")
        XCTAssertNil(LoginSecrets.resealRefusal(from: software, to: software, softwareChosen: false), "a rotated machine key")
    }

    // MARK: A passwd whose re-wrap could not run

    /// The PAM host could not derive the new password's key (no Argon2id
    /// slot): it marks the wrap stale. A password login then offers its
    /// verified password's key as pending, and the owner's finger makes the
    /// wrap for it; the old password's wrap is gone then.
    @ServiceActor
    func testAMissedRewrapMarksTheWrapStaleUntilTheNewPasswordsKeyAndTheOwnersFinger() async throws {
        let rig = try LoginSecretRig()
        let secret = try await rig.enable("old password")
        let mark = try ChangeLoginSecretPasswordArguments([.string("alice"), .dictionary([LocalAuthLoginSecretBus.Key.staleMark: .boolean(true)])])
        XCTAssertNil(mark.password)
        let changed = try await rig.secrets.changePassword(rig.pamHost, mark)
        let answer = try XCTUnwrap(changed.first?.stringKeyedDictionary)
        XCTAssertEqual(answer[LocalAuthLoginSecretBus.Key.stale]?.bool, true)
        XCTAssertEqual(answer[LocalAuthLoginSecretBus.Key.pending]?.bool, false)
        XCTAssertEqual(try rig.secrets.status(rig.alice).first?.stringKeyedDictionary?[LocalAuthLoginSecretBus.Key.stale]?.bool, true)
        var wrap = try await passwordWrap(rig)
        XCTAssertEqual(wrap[LocalAuthLoginSecretBus.Key.stale]?.bool, true)
        XCTAssertEqual(wrap[LocalAuthLoginSecretBus.Key.pending]?.bool, false, "no new key yet: the password login offers one")
        XCTAssertEqual(try rig.store.load(1000)?.missedPasswordChange, true, "kept on disk")

        // A finger alone cannot renew it: there is no new key.
        rig.secrets.matchSeen(uid: 1000, caller: rig.pamHost.caller, nonce: nonce)
        let early = try await rig.release(nonce: nonce)
        XCTAssertEqual(early.answer[LocalAuthLoginSecretBus.Key.renewed]?.bool, false)
        XCTAssertEqual(early.answer[LocalAuthLoginSecretBus.Key.stale]?.bool, true)

        // The password login's key (no proof, as root's reset), then the finger.
        let offer = try ChangeLoginSecretPasswordArguments([.string("alice"), .dictionary(try LoginSecretRig.options("new password", salt: 4))])
        _ = try await rig.secrets.changePassword(rig.pamHost, offer)
        wrap = try await passwordWrap(rig)
        XCTAssertEqual(wrap[LocalAuthLoginSecretBus.Key.pending]?.bool, true)
        rig.secrets.matchSeen(uid: 1000, caller: rig.pamHost.caller, nonce: nonce)
        let renewed = try await rig.release(nonce: nonce)
        XCTAssertEqual(renewed.answer[LocalAuthLoginSecretBus.Key.renewed]?.bool, true)
        let record = try XCTUnwrap(try rig.store.load(1000))
        XCTAssertFalse(record.isPasswordWrapStale)
        XCTAssertFalse(record.missedPasswordChange)
        XCTAssertEqual(try ECIES.decrypt(record.passwordWrap, with: try LoginSecretRig.passwordKey("new password")), secret)
        XCTAssertThrowsError(try ECIES.decrypt(record.passwordWrap, with: try LoginSecretRig.passwordKey("old password")))
    }

    /// The mark comes alone and only as true: anything else is InvalidArgs before the handler.
    @ServiceActor
    func testTheStaleMarkComesAloneAndTrue() async throws {
        let mark = LocalAuthLoginSecretBus.Key.staleMark
        var withKey = try LoginSecretRig.options("new password")
        withKey[mark] = .boolean(true)
        for options in [[mark: .boolean(false)], [mark: .string("yes")], withKey] as [[String: DBusValue]] {
            XCTAssertThrowsError(try ChangeLoginSecretPasswordArguments([.string("alice"), .dictionary(options)]), "\(options)") {
                XCTAssertEqual(($0 as? ServiceError)?.kind, .invalidArgs)
            }
        }
    }

    @ServiceActor
    func passwordWrap(_ rig: LoginSecretRig) async throws -> [String: DBusValue] {
        let answer = try await rig.secrets.passwordWrap(rig.pamHost, try GetLoginSecretPasswordWrapArguments([.string("alice"), .dictionary([:])]))
        return try XCTUnwrap(answer.first?.stringKeyedDictionary)
    }
}
