import DBusCore
@testable import LocalAuthService
import LocalAuthShared
import XCTest

/// The rules of the world around the reader (EnvironmentRules.swift), in
/// milliseconds: where a reader sits, what a closed lid leaves, who can be at
/// the reader, the password after boot, the per-app domain state.
final class EnvironmentRulesTests: XCTestCase {
    private typealias Rules = EnvironmentRules
    private let inside = Readers.Identity(driver: "goodixmoc", deviceID: "0")
    private let outside = Readers.Identity(driver: "synaptics", deviceID: "1")

    private func suffix(_ error: ServiceError?) -> String? {
        error.map { String(ErrorTable.localAuth.name(of: $0.kind).split(separator: ".").last ?? "") }
    }

    func testTheKernelsRemovableAttributePlacesAReaderAndOverridesWin() {
        func place(_ removable: String?, builtIn: [String] = [], external: [String] = []) -> ReaderPlacement {
            ReaderPlacement.of(driver: "synaptics", deviceID: "1", builtInOverrides: builtIn.compactMap(ReaderSelector.init),
                            externalOverrides: external.compactMap(ReaderSelector.init), removable: removable)
        }
        XCTAssertEqual(place("fixed\n"), .builtIn)
        XCTAssertEqual(place("removable\n"), .external)
        XCTAssertEqual(place("unknown\n"), .builtIn, "a reader the kernel cannot place counts as under the lid")
        XCTAssertEqual(place(nil), .builtIn, "no USB port (libfprint's virtual readers): built in")
        XCTAssertEqual(place("fixed", external: ["synaptics"]), .external)
        XCTAssertEqual(place("removable", builtIn: ["synaptics/1"]), .builtIn)
        XCTAssertEqual(place("removable", builtIn: ["synaptics/2"]), .external, "another device id is not overridden")
        XCTAssertEqual(ReaderPlacement.sysfsName(platformID: "usb:01:03:02"), "1-3.2")
        XCTAssertEqual(ReaderPlacement.sysfsName(platformID: "usb:0a:0c"), "10-12")
        XCTAssertNil(ReaderPlacement.sysfsName(platformID: "usb:01"))
        XCTAssertNil(ReaderPlacement.sysfsName(platformID: "/sys/devices/x"))
        XCTAssertNil(ReaderPlacement.sysfsName(platformID: "usb:zz:01"))
    }

    func testAClosedLidLeavesOnlyExternalReaders() {
        XCTAssertEqual(ReaderChoice.reachable([inside, outside], builtIn: [inside], lidClosed: false), [inside, outside])
        XCTAssertEqual(ReaderChoice.reachable([inside, outside], builtIn: [inside], lidClosed: true), [outside])
        XCTAssertEqual(ReaderChoice.reachable([inside], builtIn: [inside], lidClosed: true), [])
        // With no reader left, policy 1 fails at once and policy 2 asks the password alone.
        let none = ServiceErrors.la(.biometryNotAvailable, "the lid is closed")
        XCTAssertEqual(EvaluationPlan.decide(policy: .deviceOwnerAuthentication, biometrics: none, enrolledSet: [],
                                             hasPassword: true, interactionNotAllowed: false, reuseDuration: 0,
                                             lastMatch: nil, now: .now), .run(fingerprint: false, password: true))
    }

    func testOnlyTheActiveLocalSessionOnASeatIsOfferedBiometrics() {
        XCTAssertEqual(Presence.of(remote: false, seat: "seat0", active: true, state: "active"), .local)
        XCTAssertEqual(Presence.of(remote: true, seat: "seat0", active: true, state: "active"), .remote)
        XCTAssertEqual(Presence.of(remote: false, seat: "", active: true, state: "active"), .noSeat)
        // Switched away from (another user is in front), or logged out and lingering.
        XCTAssertEqual(Presence.of(remote: false, seat: "seat0", active: false, state: "online"), .inactive)
        XCTAssertEqual(Presence.of(remote: false, seat: "seat0", active: true, state: "closing"), .inactive)
        XCTAssertEqual(Presence.of(remote: false, seat: "seat0", active: true, state: "online"), .inactive)
        XCTAssertEqual(suffix(Presence.refusal(.inactive)), "NotAtTheReader")
        XCTAssertNil(Presence.refusal(.local))
        XCTAssertNil(Presence.refusal(.unknown), "no logind on the bus: callers count as local")
        XCTAssertEqual(suffix(Presence.refusal(.remote)), "NotAtTheReader")
        XCTAssertEqual(suffix(Presence.refusal(.noSeat)), "NotAtTheReader")
    }

    func testRequirePasswordAfterParses() {
        var requirement = PasswordRequirement()
        XCTAssertFalse(requirement.isActive)
        XCTAssertTrue(PasswordRequirement.parse("boot", into: &requirement))
        XCTAssertTrue(PasswordRequirement.parse("48h", into: &requirement))
        XCTAssertEqual(requirement, PasswordRequirement(sinceBoot: true, within: 172_800))
        for (text, seconds) in [("90", 90.0), ("30m", 1800), ("2d", 172_800), ("15s", 15)] {
            var parsed = PasswordRequirement()
            XCTAssertTrue(PasswordRequirement.parse(text, into: &parsed), text)
            XCTAssertEqual(parsed.within, seconds, text)
        }
        for bad in ["", "h", "-1h", "0", "soon", "1w", "nan"] {
            var parsed = PasswordRequirement()
            XCTAssertFalse(PasswordRequirement.parse(bad, into: &parsed), bad)
        }
        var configuration = Configuration(stateDirectory: "/tmp/x")
        XCTAssertTrue(configuration.requirePassword(after: "boot"))
        XCTAssertTrue(configuration.requirePassword(after: "1h"))
        XCTAssertEqual(configuration.passwordRequirement, PasswordRequirement(sinceBoot: true, within: 3600))
    }

    func testBiometricsWaitForThePasswordSinceBootAndWithinThePeriod() {
        let boot = PasswordRequirement(sinceBoot: true)
        let day = PasswordRequirement(within: 86_400)
        let both = PasswordRequirement(sinceBoot: true, within: 86_400)
        let now: Int64 = 1_000_000
        let given = Rules.Stored.record(.init(bootID: "b1", time: now - 60))
        // Off: never.
        XCTAssertNil(Rules.passwordNeeded(.init(), stored: .none, bootID: "b1", now: now))
        // Since boot.
        XCTAssertEqual(suffix(Rules.passwordNeeded(boot, stored: .none, bootID: "b1", now: now)), "BiometryLockout")
        XCTAssertNil(Rules.passwordNeeded(boot, stored: given, bootID: "b1", now: now))
        XCTAssertNotNil(Rules.passwordNeeded(boot, stored: given, bootID: "b2", now: now), "another boot")
        XCTAssertNotNil(Rules.passwordNeeded(boot, stored: given, bootID: nil, now: now), "boot unknown: closed")
        // Within a period.
        XCTAssertNil(Rules.passwordNeeded(day, stored: given, bootID: "b2", now: now))
        XCTAssertNotNil(Rules.passwordNeeded(day, stored: given, bootID: "b1", now: now + 86_400))
        XCTAssertNotNil(Rules.passwordNeeded(day, stored: given, bootID: "b1", now: now - 3600), "a record from the future")
        // Both.
        XCTAssertNil(Rules.passwordNeeded(both, stored: given, bootID: "b1", now: now))
        XCTAssertNotNil(Rules.passwordNeeded(both, stored: given, bootID: "b2", now: now))
        // Damaged fails closed.
        XCTAssertNotNil(Rules.passwordNeeded(boot, stored: .damaged, bootID: "b1", now: now))
        XCTAssertNil(Rules.PasswordRecord(text: "garbage"))
        XCTAssertNil(Rules.PasswordRecord(text: "b1 notanumber"))
        XCTAssertNil(Rules.PasswordRecord(text: " 12"))
        XCTAssertEqual(Rules.PasswordRecord(text: "b1 12\n"), Rules.PasswordRecord(bootID: "b1", time: 12))
        XCTAssertEqual(Rules.PasswordRecord(text: Rules.PasswordRecord(bootID: "b1", time: 12).text),
                       Rules.PasswordRecord(bootID: "b1", time: 12))
    }

    func testTheDomainStateIsPerAppAndFollowsTheEnrolledSet() {
        let set1 = Digest.sha256(Array("set 1".utf8))
        let set2 = Digest.sha256(Array("set 2".utf8))
        let a1 = ReaderChoice.appStateHash(enrolledSetHash: set1, app: "keepassxc")
        XCTAssertEqual(a1, ReaderChoice.appStateHash(enrolledSetHash: set1, app: "keepassxc"), "stable")
        XCTAssertNotEqual(a1, ReaderChoice.appStateHash(enrolledSetHash: set1, app: "firefox"), "differs per app")
        XCTAssertNotEqual(a1, ReaderChoice.appStateHash(enrolledSetHash: set2, app: "keepassxc"), "changes with the set")
        XCTAssertNotEqual(a1, set1, "the enrolled set's own hash is never shown")
        XCTAssertEqual(a1.count, 32)
    }
}
