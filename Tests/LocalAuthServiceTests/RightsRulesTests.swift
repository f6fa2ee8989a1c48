import DBusCore
import Foundation
@testable import LocalAuthService
import LocalAuthCrypto
import LocalAuthRights
import LocalAuthShared
import XCTest

/// Whose app a rights call is for (AppIdentity.swift), and the rights part of
/// the contract file.
final class RightsRulesTests: XCTestCase {
    override func setUp() {
        super.setUp()
        _ = ServiceLoop.running
    }

    func testAFlatpakInfoNamesTheApp() {
        let info = "[Application]\nname=org.example.Vault\nruntime=runtime/org.gnome.Platform/x86_64/45\n\n[Instance]\nname=other\n"
        XCTAssertEqual(AppIdentity.flatpakAppID(info: info), "org.example.Vault")
        XCTAssertNil(AppIdentity.flatpakAppID(info: "[Instance]\nname=org.example.Vault\n"))
        XCTAssertNil(AppIdentity.flatpakAppID(info: "[Application]\nname=\n"))
    }

    func testTheCgroupNamesFlatpakAndSnapApps() {
        XCTAssertEqual(AppIdentity.sandboxID(cgroup: "0::/user.slice/user-1000.slice/user@1000.service/app.slice/app-flatpak-org.example.Vault-4242.scope\n"),
                       "flatpak:org.example.Vault")
        XCTAssertEqual(AppIdentity.sandboxID(cgroup: "0::/user.slice/user-1000.slice/user@1000.service/app.slice/snap.vault.vault-1f2e.scope\n"),
                       "snap:vault")
        XCTAssertNil(AppIdentity.sandboxID(cgroup: "0::/user.slice/user-1000.slice/session-2.scope\n"))
        XCTAssertNil(AppIdentity.sandboxID(cgroup: "0::/user.slice/user-1000.slice/user@1000.service/app.slice/app-gnome-org.example.Vault-42.scope\n"))
    }

    func testMountinfoShowsAFlatpakSandbox() {
        let line = "812 790 0:44 /org.example.Vault/x /.flatpak-info ro,nosuid,nodev - tmpfs tmpfs rw"
        XCTAssertTrue(AppIdentity.mountsFlatpakInfo(mountinfo: "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n" + line + "\n"))
        XCTAssertFalse(AppIdentity.mountsFlatpakInfo(mountinfo: "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n"))
    }

    private func decide(cgroup: String?, info: String? = nil, mountinfo: String? = nil, ownMounts: Bool? = true,
                        label: String? = nil) -> AppIdentity {
        AppIdentity.decide(.init(cgroup: cgroup, flatpakInfo: info, mountinfo: mountinfo, ownRoot: ownMounts,
                                 securityLabel: label))
    }

    func testTheDecisionFailsClosed() {
        let host = "0::/user.slice/user-1000.slice/session-2.scope\n"
        XCTAssertEqual(decide(cgroup: nil), .unreadable)
        XCTAssertEqual(decide(cgroup: host, mountinfo: ""), .host)
        XCTAssertEqual(decide(cgroup: host, info: "[Application]\nname=org.example.Vault\n"),
                       .sandboxed("flatpak:org.example.Vault"))
        // A sandbox whose /.flatpak-info the service cannot read and whose cgroup says nothing.
        XCTAssertEqual(decide(cgroup: host, mountinfo: "9 8 0:4 /x /.flatpak-info ro - tmpfs tmpfs rw\n"), .unknownSandbox)
        XCTAssertEqual(decide(cgroup: host, info: "[Application]\n"), .unknownSandbox)
    }

    /// A scope's name is no proof: any host program can run in a scope it
    /// names itself (`systemd-run --user --scope --unit=app-flatpak-ID-1`).
    func testASandboxNamedOnlyByTheCgroupIsUnproven() {
        let forged = "0::/user.slice/user-1000.slice/user@1000.service/app.slice/app-flatpak-org.example.Vault-1.scope\n"
        XCTAssertEqual(decide(cgroup: forged, mountinfo: "", ownMounts: false), .unprovenSandbox("flatpak:org.example.Vault"))
        // A /.flatpak-info counts only in a root of the process's own.
        XCTAssertEqual(decide(cgroup: forged, info: nil, ownMounts: false), .unprovenSandbox("flatpak:org.example.Vault"))
        // The sandbox's metadata and its scope must name the same app.
        XCTAssertEqual(decide(cgroup: forged, info: "[Application]\nname=org.example.Other\n"),
                       .unprovenSandbox("flatpak:org.example.Vault"))
        XCTAssertEqual(decide(cgroup: forged, info: "[Application]\nname=org.example.Vault\n"),
                       .sandboxed("flatpak:org.example.Vault"))
        let snap = "0::/user.slice/user-1000.slice/user@1000.service/app.slice/snap.vault.vault-1f2e.scope\n"
        XCTAssertEqual(decide(cgroup: snap, ownMounts: false), .unprovenSandbox("snap:vault"))
        XCTAssertEqual(decide(cgroup: snap, ownMounts: false, label: "snap.vault.vault (enforce)"), .sandboxed("snap:vault"))
        XCTAssertEqual(decide(cgroup: snap, ownMounts: false, label: "unconfined"), .unprovenSandbox("snap:vault"))
        XCTAssertThrowsError(try AppIdentity.appID(.unprovenSandbox("flatpak:org.example.Vault"), declared: nil)) { error in
            XCTAssertEqual((error as? ServiceError)?.kind, .unprovenSandbox)
        }
    }

    func testProcessStartTimeIsField22() {
        let stat = "4242 (a) b (c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 100 18446744073709551615"
        XCTAssertEqual(ProcessFacts.startTime(stat: stat), 987654)
        XCTAssertNil(ProcessFacts.startTime(stat: "4242 (x) S 1"))
        XCTAssertNotNil(ProcessFacts.startTime(pid: UInt32(getpid())))
        // The byte parser agrees with the fields as proc(5) numbers them, and with the kernel's own file.
        let bytes = Array(stat.utf8)
        XCTAssertEqual(ProcessFacts.statNumber(bytes, field: 4), 1, "the parent")
        XCTAssertEqual(ProcessFacts.statNumber(bytes, field: 8), -1, "a negative field")
        XCTAssertNil(ProcessFacts.statNumber(bytes, field: 3), "the state is no number")
        XCTAssertNil(ProcessFacts.statNumber(bytes, field: 40), "past the end")
        XCTAssertEqual(ProcessFacts.parentPID(pid: UInt32(getpid())), UInt32(getppid()))
        XCTAssertEqual(ProcessFacts.statNumber(Array((stat + "\n").utf8), field: 22), 987654, "the file's newline")
    }

    /// A sandboxed caller's declared id is ignored; a host caller cannot
    /// claim a sandbox's namespace; unknown sandboxes and invisible callers get nothing.
    func testWhoseAppTheCallIsFor() throws {
        XCTAssertEqual(try AppIdentity.appID(.sandboxed("flatpak:org.example.Vault"), declared: "org.example.Host"),
                       "flatpak:org.example.Vault")
        XCTAssertEqual(try AppIdentity.appID(.host, declared: "org.example.Host"), "org.example.Host")
        XCTAssertThrowsError(try AppIdentity.appID(.host, declared: "flatpak:org.example.Vault"))
        XCTAssertThrowsError(try AppIdentity.appID(.host, declared: nil))
        XCTAssertThrowsError(try AppIdentity.appID(.host, declared: ""))
        for identity in [AppIdentity.unreadable, .unknownSandbox] {
            XCTAssertThrowsError(try AppIdentity.appID(identity, declared: "org.example.Host")) { error in
                XCTAssertEqual((error as? ServiceError)?.kind, .permissionDenied)
            }
        }
    }

    /// Its methods and errors are checked with every other row's and kind's
    /// (MethodTableTests, ContractErrorTableTests).
    func testTheRightsContractNamesItsOptionsAndActions() throws {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        let xml = try String(contentsOf: url.appendingPathComponent("dbus/org.example.LocalAuth.xml"), encoding: .utf8)
        for (key, type) in [(LocalAuthRightsBus.Option.appID, "s"), (LocalAuthRightsBus.Option.secret, "ay"),
                            (LocalAuthRightsBus.Option.requestedSize, "u"), (LocalAuthRightsBus.Option.sharedInfo, "ay"),
                            (LocalAuthRightsBus.RightKey.identifier, "s"), (LocalAuthRightsBus.RightKey.created, "x"),
                            (LocalAuthRightsBus.RightKey.publicKey, "ay"), (LocalAuthRightsBus.RightKey.requirement, "s")] {
            XCTAssertTrue(xml.contains("\(key) (\(type))") || xml.contains("\"\(key)\" (\(type))"), "\(key) (\(type))")
        }
        for requirement in RightRequirementName.allCases { XCTAssertTrue(xml.contains(requirement.rawValue), requirement.rawValue) }
        let policy = try String(contentsOf: url.appendingPathComponent("polkit/org.example.LocalAuth.rights.policy"), encoding: .utf8)
        for action in [PolkitAction.rightsUse, .rightsManage] {
            XCTAssertTrue(policy.contains("<action id=\"\(action.rawValue)\">"), action.rawValue)
        }
        // Only elements, comments and whitespace between them (sd-bus's parser, as busctl's, refuses text there).
        var rest = Substring(xml.components(separatedBy: "<node>")[1])
        while let open = rest.range(of: "<!--") {
            let before = rest[..<open.lowerBound]
            let text = before.replacingOccurrences(of: "<[^>]*>", with: "", options: .regularExpression)
            XCTAssertEqual(text.trimmingCharacters(in: .whitespacesAndNewlines), "", "text outside a comment: \(text.prefix(80))")
            guard let close = rest.range(of: "-->", range: open.upperBound..<rest.endIndex) else { return XCTFail("an unclosed comment") }
            XCTAssertFalse(rest[open.upperBound..<close.lowerBound].contains("--"), "\"--\" inside a comment")
            rest = rest[close.upperBound...]
        }
    }

    // MARK: Authorizations (RightsState)

    @ServiceActor
    static func checkAuthorizationsAreBounded() throws {
        let state = RightsState(stateDirectory: "/nonexistent", keyBackend: .off)
        let owner = try RightOwner(uid: 1000, appID: "org.example.App", identifier: "key")
        let key = try P256.PrivateKey().publicKey
        func authorization(_ sender: String, expires: ContinuousClock.Instant = .now + .seconds(300)) -> RightAuthorization {
            RightAuthorization(sender: sender, uid: 1000, owner: owner, publicKeyPoint: key.x963Representation, expires: expires)
        }
        // One connection keeps at most 32: the oldest goes.
        var handles: [String] = []
        for index in 0..<(RightsServiceLimits.authorizationsPerConnection + 1) {
            handles.append(try state.authorize(authorization(":1.5", expires: .now + .seconds(100 + Double(index)))))
        }
        XCTAssertEqual(state.authorizations.count, RightsServiceLimits.authorizationsPerConnection)
        XCTAssertNil(state.authorizations[handles[0]])
        XCTAssertNotNil(state.authorizations[handles.last!])
        XCTAssertEqual(Set(handles).count, handles.count, "handles are random")
        XCTAssertEqual(handles[0].count, 32, "128 bits in hex")
        // Expired ones are pruned; the caller leaving ends its own only.
        let expired = try state.authorize(authorization(":1.6", expires: .now - .seconds(1)))
        let other = try state.authorize(authorization(":1.7"))
        XCTAssertNil(state.authorizations[expired], "an expired one is dropped at the next authorization")
        state.callerVanished(":1.5")
        XCTAssertEqual(Array(state.authorizations.keys), [other])
    }

    func testAuthorizationsAreBoundedAndEndWithTheirCaller() async throws {
        try await Self.checkAuthorizationsAreBounded()
    }
}
