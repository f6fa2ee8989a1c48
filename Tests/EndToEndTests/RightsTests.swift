import Foundation
import Glibc
import LocalAuthCrypto
import LocalAuthentication
import RigSupport
import XCTest

/// Rights and secrets (docs/RIGHTS.md) on the rig: the real service, polkitd
/// and the virtual reader, through the library, localauthctl and busctl.
final class RightsTests: RigTestCase, @unchecked Sendable {
    static let appID = "org.example.RightsTests"

    override func setUpWithError() throws {
        // The library's app id for this process (read once, at first use).
        setenv("LOCALAUTH_APP_ID", Self.appID, 1)
        try super.setUpWithError()
        for action in ["org.example.LocalAuth.rights.use", "org.example.LocalAuth.rights.manage"] { try rig.polkit(action, nil) }
    }

    private func laCode(_ body: () async throws -> Void) async -> (LAError.Code?, String?) {
        do {
            try await body()
            return (nil, nil)
        } catch let error as LAError {
            return (error.code, error.dbusErrorName)
        } catch {
            return (.systemCancel, "\(error)")
        }
    }

    private func authorize(_ right: LARight, finger: String = "owner-finger", times: Int = 1) async -> (LAError.Code?, String?) {
        present(finger, times: times)
        return await laCode { try await right.authorize(localizedReason: "Open the test vault") }
    }

    /// busctl call with the rights options (app-id) as its last argument.
    private func rightsCall(_ member: String, _ signature: String, _ values: [String], appID: String = RightsTests.appID,
                            asNobody: Bool = false) throws -> Outcome {
        try callService(member, signature + "a{sv}", values + ["1", "app-id", "s", appID], asNobody: asNobody)
    }

    // MARK: Round trip

    func testASecretRoundTripsOnlyWhileAuthorized() async throws {
        try await enroll(as: "owner-finger")
        let secret = Data("correct horse battery staple".utf8)
        let saved = try await LARightStore.shared.saveRight(LARight(requirement: .biometry), identifier: "round-trip", secret: secret)
        XCTAssertEqual(saved.state, .unknown)
        let right = try await LARightStore.shared.right(forIdentifier: "round-trip")
        let (before, name) = await laCode { _ = try await right.secret.loadData() }
        XCTAssertEqual(before, .notInteractive, name ?? "")
        try await right.checkCanAuthorize()
        let (code, error) = await authorize(right)
        XCTAssertNil(code, error ?? "")
        XCTAssertEqual(right.state, .authorized)
        let value1 = try await right.secret.loadData()
        XCTAssertEqual(value1, secret)
        await right.deauthorize()
        XCTAssertEqual(right.state, .notAuthorized)
        let (after, _) = await laCode { _ = try await right.secret.loadData() }
        XCTAssertEqual(after, .notInteractive)
        let (missing, missingName) = await laCode { _ = try await LARightStore.shared.right(forIdentifier: "no-such-right") }
        XCTAssertEqual(missing, .invalidContext)
        XCTAssertEqual(missingName, "org.example.LocalAuth.Error.RightNotFound")
    }

    func testAWrongFingerAndTheLockoutRefuse() async throws {
        try await enroll(as: "owner-finger")
        _ = try await LARightStore.shared.saveRight(LARight(requirement: .biometry), identifier: "guarded", secret: Data([1, 2, 3]))
        let right = try await LARightStore.shared.right(forIdentifier: "guarded")
        let (wrong, _) = await authorize(right, finger: "someone-else", times: 3)
        XCTAssertEqual(wrong, .authenticationFailed)
        XCTAssertEqual(right.state, .notAuthorized)
        let (lockout, _) = await authorize(right, finger: "someone-else", times: 2)
        XCTAssertEqual(lockout, .biometryLockout)
        let (locked, _) = await laCode { try await right.checkCanAuthorize() }
        XCTAssertEqual(locked, .biometryLockout)
        let (load, _) = await laCode { _ = try await right.secret.loadData() }
        XCTAssertEqual(load, .notInteractive)
    }

    // MARK: biometryCurrentSet

    func testACurrentSetRightDiesWhenAFingerIsAddedOrRemoved() async throws {
        try await enroll(as: "owner-finger")
        _ = try await LARightStore.shared.saveRight(LARight(requirement: .biometryCurrentSet), identifier: "set-1", secret: Data([1]))
        let right = try await LARightStore.shared.right(forIdentifier: "set-1")
        let (first, _) = await authorize(right)
        XCTAssertNil(first)
        let value2 = try await right.secret.loadData()
        XCTAssertEqual(value2, Data([1]))

        // A finger added: the authorization in force and every later one die.
        try await enroll("left-index-finger", as: "second-finger")
        let (load, loadName) = await laCode { _ = try await right.secret.loadData() }
        XCTAssertEqual(load, .invalidContext)
        XCTAssertEqual(loadName, "org.example.LocalAuth.Error.RightInvalidated")
        let (again, againName) = await authorize(right)
        XCTAssertEqual(again, .invalidContext)
        XCTAssertEqual(againName, "org.example.LocalAuth.Error.RightInvalidated")

        // Saved with two fingers; one removed: dead too.
        _ = try await LARightStore.shared.saveRight(LARight(requirement: .biometryCurrentSet), identifier: "set-2", secret: Data([2]))
        let second = try await LARightStore.shared.right(forIdentifier: "set-2")
        try await LAFingerprints.delete("left-index-finger")
        let (removed, removedName) = await laCode { try await second.checkCanAuthorize() }
        XCTAssertEqual(removed, .invalidContext)
        XCTAssertEqual(removedName, "org.example.LocalAuth.Error.RightInvalidated")

        // A plain .biometry right lives on.
        _ = try await LARightStore.shared.saveRight(LARight(requirement: .biometry), identifier: "plain", secret: Data([3]))
        try await enroll("left-index-finger", as: "third-finger")
        let plain = try await LARightStore.shared.right(forIdentifier: "plain")
        let (plainCode, _) = await authorize(plain)
        XCTAssertNil(plainCode)
    }

    // MARK: Whose rights

    func testAnotherUidAndAnotherAppGetNothing() async throws {
        try await enroll(as: "owner-finger")
        _ = try await LARightStore.shared.saveRight(LARight(requirement: .biometry), identifier: "mine", secret: Data("root's".utf8))

        // Another app of the same user: its own, empty namespace.
        let otherApp = try rightsCall("ListRights", "", [], appID: "org.example.Other")
        XCTAssertEqual(otherApp.status, 0, otherApp.output)
        XCTAssertTrue(otherApp.stdout.hasPrefix("aa{sv} 0"), otherApp.stdout)
        let key = try gdbus("GetPublicKey", ["mine", "{'app-id': <'org.example.Other'>}"])
        XCTAssertTrue(key.output.contains("RightNotFound"), key.output)
        // The same app id, claimed by another uid: that uid's own, empty namespace.
        let nobody = try localauthctl(["secret", "list", "--app-id", Self.appID], asNobody: true)
        XCTAssertEqual(nobody.status, 0, nobody.output)
        XCTAssertEqual(nobody.stdout, "")
        let nobodyLoad = try localauthctl(["secret", "load", "mine", "--app-id", Self.appID], asNobody: true)
        XCTAssertNotEqual(nobodyLoad.status, 0)
        XCTAssertEqual(nobodyLoad.stdout, "")
        // A host program may not name a sandbox's id.
        let claim = try gdbus("ListRights", ["{'app-id': <'flatpak:org.example.Vault'>}"])
        XCTAssertTrue(claim.output.contains("InvalidArgs"), claim.output)

        // A handle works only for the connection that got it, while it is on the bus.
        present("owner-finger")
        let authorized = try rightsCall("AuthorizeRight", "ss", ["mine", "Open"])
        XCTAssertEqual(authorized.status, 0, authorized.output)
        let handle = authorized.stdout.split(separator: "\"").dropFirst().first.map(String.init) ?? ""
        XCTAssertEqual(handle.count, 32, authorized.stdout)
        for asNobody in [false, true] {
            let load = try gdbus("LoadSecret", [handle], asNobody: asNobody)
            XCTAssertTrue(load.output.contains("NotAuthorized"), load.output)
        }
    }

    // MARK: At rest

    func testTheFilesOnDiskHoldNoPlaintextAndARestartKeepsEverything() async throws {
        try await enroll(as: "owner-finger")
        let marker = Data("PLAINTEXT-MARKER-4f1c9a".utf8)
        let secret = marker + Data(repeating: 0x41, count: 64 * 1024 - marker.count)   // the largest secret
        _ = try await LARightStore.shared.saveRight(LARight(requirement: .biometry), identifier: "at-rest", secret: secret)
        let (tooLarge, tooLargeName) = await laCode {
            _ = try await LARightStore.shared.saveRight(LARight(), identifier: "too-large", secret: secret + Data([0]))
        }
        XCTAssertEqual(tooLarge, .invalidContext)
        XCTAssertEqual(tooLargeName, "org.example.LocalAuth.Error.LimitExceeded")

        let state = service.stateDirectory
        let files = (FileManager.default.enumerator(atPath: state + "/rights")?.allObjects as? [String] ?? [])
            .filter { $0.hasSuffix(".right") }.map { state + "/rights/" + $0 }
        XCTAssertEqual(files.count, 1)
        for file in files {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: file))
            XCTAssertNil(bytes.range(of: marker), "the secret is in \(file) in plaintext")
            XCTAssertNil(bytes.range(of: Data(repeating: 0x41, count: 64)), "the secret's padding is in \(file)")
        }

        // A restart (same state directory) keeps the right and its secret.
        service.stop()
        service = try ServiceProcess(bus: rig, stateDirectory: state)
        let right = try await LARightStore.shared.right(forIdentifier: "at-rest")
        let (code, name) = await authorize(right)
        XCTAssertNil(code, name ?? "")
        let value3 = try await right.secret.loadData()
        XCTAssertEqual(value3, secret)
    }

    func testAKillDuringSaveLeavesTheOldOrTheNewRight() async throws {
        try await enroll(as: "owner-finger")
        _ = try await LARightStore.shared.saveRight(LARight(requirement: .biometry), identifier: "crash", secret: Data("old".utf8))
        let state = service.stateDirectory
        // Saves in a loop from another process while the service is killed.
        let script = "i=0; while [ $i -lt 200 ]; do echo -n new | '\(Paths.localauthctl)' secret store crash --requirement biometry --app-id '\(Self.appID)'; i=$((i+1)); done"
        let log = rig.directory + "/saver-\(UInt32.random(in: 0...UInt32.max)).log"
        let saver = try Child("/bin/sh", ["-c", script], environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address],
                              stdoutPath: log, stderrPath: log)
        // Saves are under way (one has completed) when the service dies.
        try waitForText("stored 3 bytes as crash", in: log)
        usleep(50_000)
        service.kill9()
        saver.signal(SIGKILL)
        saver.wait()
        service = try ServiceProcess(bus: rig, stateDirectory: state)
        let value4 = try await LARightStore.shared.identifiers()
        XCTAssertEqual(value4, ["crash"])
        let right = try await LARightStore.shared.right(forIdentifier: "crash")
        let (code, name) = await authorize(right)
        XCTAssertNil(code, name ?? "")
        let loaded = String(decoding: try await right.secret.loadData(), as: UTF8.self)
        XCTAssertTrue(loaded == "old" || loaded == "new", loaded)
        XCTAssertFalse(service.log.contains("damaged"), service.log)
    }

    // MARK: Keys

    func testASignatureVerifiesWithThePublicKeyAndWithOpenSSL() async throws {
        try await enroll(as: "owner-finger")
        _ = try await LARightStore.shared.saveRight(LARight(requirement: .biometry), identifier: "signer")
        let right = try await LARightStore.shared.right(forIdentifier: "signer")
        let message = Data("sign me, please".utf8)
        let (unauthorized, _) = await laCode { _ = try await right.key.sign(message, algorithm: .ecdsaSignatureMessageX962SHA256) }
        XCTAssertEqual(unauthorized, .notInteractive)
        let (code, name) = await authorize(right)
        XCTAssertNil(code, name ?? "")
        XCTAssertTrue(right.key.canSign(using: .ecdsaSignatureMessageX962SHA256))
        XCTAssertFalse(right.key.canSign(using: .ecdhKeyExchangeStandard))
        let signature = try await right.key.sign(message, algorithm: .ecdsaSignatureMessageX962SHA256)
        try await right.key.publicKey.verify(message, signature: signature, algorithm: .ecdsaSignatureMessageX962SHA256)
        let (forged, _) = await laCode {
            try await right.key.publicKey.verify(message + Data([0]), signature: signature, algorithm: .ecdsaSignatureMessageX962SHA256)
        }
        XCTAssertEqual(forged, .authenticationFailed)

        // The openssl tool agrees, from the exported bytes.
        let exported = try await right.key.publicKey.exportBytes()
        let publicKey = try P256.PublicKey(x963Representation: [UInt8](exported))
        let directory = rig.directory + "/openssl-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Data(publicKey.derRepresentation).write(to: URL(fileURLWithPath: directory + "/key.der"))
        try signature.write(to: URL(fileURLWithPath: directory + "/sig.der"))
        try message.write(to: URL(fileURLWithPath: directory + "/message"))
        let verified = try runProgram("/usr/bin/openssl", ["dgst", "-sha256", "-verify", directory + "/key.der", "-keyform", "DER",
                                                           "-signature", directory + "/sig.der", directory + "/message"])
        XCTAssertEqual(verified.status, 0, verified.output)
        XCTAssertTrue(verified.stdout.contains("Verified OK"), verified.output)

        // ECIES round trip: encrypted here, decrypted in the service; ECDH agrees.
        let ciphertext = try await right.key.publicKey.encrypt(message, algorithm: .eciesEncryptionCofactorVariableIVX963SHA256AESGCM)
        let value5 = try await right.key.decrypt(ciphertext, algorithm: .eciesEncryptionCofactorVariableIVX963SHA256AESGCM)
        XCTAssertEqual(value5, message)
        let peer = try P256.PrivateKey()
        let shared = try await right.key.exchangeKeys(publicKey: Data(peer.publicKey.x963Representation),
                                                      algorithm: .ecdhKeyExchangeStandard, parameters: [:])
        XCTAssertEqual([UInt8](shared), try peer.sharedSecretFromKeyAgreement(with: publicKey))
    }

    // MARK: Sandboxes and polkit

    /// Runs localauthctl as root in a private mount namespace whose root
    /// holds a /.flatpak-info naming `flatpakID`: what the service sees of a
    /// Flatpak app. Nothing outside the namespace changes.
    private func localauthctlInFakeFlatpak(_ flatpakID: String, _ arguments: [String], stdin: String? = nil) throws -> Outcome {
        let tool = rig.directory + "/localauthctl"
        if !FileManager.default.fileExists(atPath: tool) {
            try FileManager.default.copyItem(atPath: Paths.localauthctl, toPath: tool)
            chmod(tool, 0o755)
        }
        let quoted = arguments.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        let input = stdin.map { "printf '%s' '\($0)' | " } ?? ""
        let script = """
            R=$(mktemp -d /tmp/fake-flatpak.XXXXXX) && mount -t tmpfs tmpfs "$R" || exit 90
            for entry in /*; do
                name=${entry#/}
                if [ -L "$entry" ]; then ln -s "$(readlink "$entry")" "$R/$name"
                elif [ -d "$entry" ]; then mkdir "$R/$name" && mount --rbind "$entry" "$R/$name"
                fi
            done
            printf '[Application]\nname=\(flatpakID)\n' > "$R/.flatpak-info"
            \(input)chroot "$R" env DBUS_SYSTEM_BUS_ADDRESS='\(rig.address)' '\(tool)' \(quoted)
            """
        return try runProgram("/usr/bin/unshare", ["--mount", "--propagation", "private", "/bin/sh", "-c", script])
    }

    func testASandboxedCallerCannotReachAHostAppsRights() async throws {
        _ = try await LARightStore.shared.saveRight(LARight(requirement: .biometry), identifier: "host-only", secret: Data([9]))
        // Same uid, claiming the host app's id: the sandbox's id wins.
        let listed = try localauthctlInFakeFlatpak("org.example.Vault", ["secret", "list", "--app-id", Self.appID])
        XCTAssertEqual(listed.status, 0, listed.output)
        XCTAssertEqual(listed.stdout, "")
        let stored = try localauthctlInFakeFlatpak("org.example.Vault", ["secret", "store", "sandboxed", "--app-id", Self.appID],
                                                   stdin: "from the sandbox")
        XCTAssertEqual(stored.status, 0, stored.output)
        let again = try localauthctlInFakeFlatpak("org.example.Vault", ["secret", "list"])
        XCTAssertEqual(again.stdout, "sandboxed\n", again.output)
        // The host app does not see it, and its own right is intact.
        let hostList = try await LARightStore.shared.identifiers()
        XCTAssertEqual(hostList, ["host-only"])
        XCTAssertTrue(service.log.contains("flatpak:org.example.Vault"), service.log)
    }

    func testAnAdministratorCanForbidRights() throws {
        // Another uid keeps its own right when polkit allows it ...
        try rig.polkit("org.example.LocalAuth.rights.manage", "yes")
        let input = rig.directory + "/nobody-secret"
        try Data("nobody's".utf8).write(to: URL(fileURLWithPath: input))
        chmod(input, 0o644)
        let store = "'\(Paths.localauthctl)' secret store token --app-id org.example.Nobody < '\(input)'"
        let allowed = try runProgram("/usr/bin/setpriv", Self.dropTo(65534) + ["/bin/sh", "-c", store],
                                     environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address])
        XCTAssertEqual(allowed.status, 0, allowed.output)
        let listed = try localauthctl(["secret", "list", "--app-id", "org.example.Nobody"], asNobody: true)
        XCTAssertEqual(listed.stdout, "token\n", listed.output)
        // ... and gets PermissionDenied once a site rule says no.
        try rig.polkit("org.example.LocalAuth.rights.manage", "no")
        let forbidden = try runProgram("/usr/bin/setpriv", Self.dropTo(65534) + ["/bin/sh", "-c", store],
                                       environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address])
        XCTAssertEqual(forbidden.status, 3, forbidden.output)
        XCTAssertTrue(forbidden.output.contains("PermissionDenied"), forbidden.output)
        try rig.polkit("org.example.LocalAuth.rights.use", "no")
        let use = try gdbus("AuthorizeRight", ["token", "Open", "{'app-id': <'org.example.Nobody'>}"], asNobody: true)
        XCTAssertTrue(use.output.contains("PermissionDenied"), use.output)
        // Root's own rights are untouched: polkit always authorizes root.
        XCTAssertEqual(try localauthctl(["secret", "list"]).stdout, "")
    }

    func testAPythonAppKeepsASecretOverDBus() throws {
        try feedingEnrollScans(of: "owner-finger") { _ = try localauthctl(["enroll"]) }
        let script = Paths.root + "/Examples/Python/vault.py"
        let environment = ["DBUS_SYSTEM_BUS_ADDRESS": rig.address]
        let stored = try runProgram("/usr/bin/python3", [script, "store", "py-key", "from python"], environment: environment)
        XCTAssertEqual(stored.status, 0, stored.output)
        XCTAssertEqual(try runProgram("/usr/bin/python3", [script, "list"], environment: environment).stdout, "py-key\n")
        present("owner-finger")
        let loaded = try runProgram("/usr/bin/python3", [script, "load", "py-key"], environment: environment)
        XCTAssertEqual(loaded.stdout, "from python\n", loaded.output)
        // Another app id (the Swift tool's) does not see it.
        XCTAssertEqual(try localauthctl(["secret", "list"]).stdout, "")
    }

    // MARK: Authorization: a real evaluation, for a while

    func testAPlainRightAuthorizesWithAnEvaluation() async throws {
        try await enroll(as: "owner-finger")
        let right = LARight(requirement: .biometry)
        try await right.checkCanAuthorize()
        let (code, name) = await authorize(right)
        XCTAssertNil(code, name ?? "")
        XCTAssertEqual(right.state, .authorized)
        await right.deauthorize()
        XCTAssertEqual(right.state, .notAuthorized)
    }

    func testAnAuthorizationEndsAfterItsTimeLimit() async throws {
        service.stop()
        service = try ServiceProcess(bus: rig, arguments: ["--rights-authorization-timeout", "1"])
        try await enroll(as: "owner-finger")
        _ = try await LARightStore.shared.saveRight(LARight(requirement: .biometry), identifier: "brief", secret: Data([5]))
        let right = try await LARightStore.shared.right(forIdentifier: "brief")
        let (code, name) = await authorize(right)
        XCTAssertNil(code, name ?? "")
        let first = try await right.secret.loadData()
        XCTAssertEqual(first, Data([5]))
        // The time limit itself is what this waits for.
        try await Task.sleep(for: .milliseconds(1300))
        let (expired, expiredName) = await laCode { _ = try await right.secret.loadData() }
        XCTAssertEqual(expired, .notInteractive)
        XCTAssertEqual(expiredName, "org.example.LocalAuth.Error.NotAuthorized")
        XCTAssertEqual(right.state, .notAuthorized)
    }

    /// `.default` and `.biometry(fallback: .devicePasscode)` take the account
    /// password (policy 2, polkit's agent, PAM); `.biometry` never does.
    func testThePasswordUnlocksOnlyARightThatAllowsIt() throws {
        let uid = try TestAccount.ensure()
        try rig.polkit("org.example.LocalAuth.rights.manage", "yes")
        try rig.polkit("org.example.LocalAuth.rights.use", "yes")
        for (id, requirement) in [("pw-default", "default"), ("pw-fallback", "biometry-or-password"), ("pw-biometry", "biometry")] {
            let saved = try runAs(uid, "/usr/bin/gdbus", [
                "call", "--system", "--dest", "org.example.LocalAuth", "--object-path", "/org/example/LocalAuth",
                "--method", "org.example.LocalAuth.SaveRight", id, requirement,
                "{'app-id': <'org.example.Owner'>, 'secret': <b'\(id) secret'>}"])
            XCTAssertEqual(saved.status, 0, saved.output)
        }
        for id in ["pw-default", "pw-fallback"] {
            let loaded = try localauthctlAsOwner(["secret", "load", id, "--app-id", "org.example.Owner"], password: TestAccount.password)
            XCTAssertEqual(loaded.status, 0, loaded.output)
            XCTAssertTrue(loaded.output.contains("\(id) secret"), loaded.output)
        }
        let wrong = try localauthctlAsOwner(["secret", "load", "pw-default", "--app-id", "org.example.Owner"],
                                            password: "not-the-password")
        XCTAssertEqual(wrong.status, 1, wrong.output)
        XCTAssertFalse(wrong.output.contains("pw-default secret"), wrong.output)
        let biometry = try localauthctlAsOwner(["secret", "load", "pw-biometry", "--app-id", "org.example.Owner"],
                                               password: TestAccount.password)
        XCTAssertEqual(biometry.status, 3, biometry.output)
        XCTAssertTrue(biometry.output.contains("BiometryNotEnrolled"), biometry.output)
        XCTAssertFalse(biometry.output.contains("pw-biometry secret"), biometry.output)
    }

    func testACProgramKeepsASecretOverDBus() throws {
        try feedingEnrollScans(of: "owner-finger") { _ = try localauthctl(["enroll"]) }
        let binary = rig.directory + "/c-vault-\(UInt32.random(in: 0...UInt32.max))"
        let compiled = try runProgram("/bin/sh", ["-c", "cc -Wall -Werror -o '\(binary)' '\(Paths.root)/Examples/C/vault.c' "
                                                  + "$(pkg-config --cflags --libs gio-2.0)"])
        XCTAssertEqual(compiled.status, 0, compiled.output)
        let environment = ["DBUS_SYSTEM_BUS_ADDRESS": rig.address]
        let stored = try runProgram(binary, ["store", "c-key", "from C"], environment: environment)
        XCTAssertEqual(stored.status, 0, stored.output)
        present("owner-finger")
        let loaded = try runProgram(binary, ["load", "c-key"], environment: environment)
        XCTAssertEqual(loaded.stdout, "from C\n", loaded.output)
        present("someone-else", times: 3)
        let refused = try runProgram(binary, ["load", "c-key"], environment: environment)
        XCTAssertEqual(refused.status, 1, refused.output)
        XCTAssertTrue(refused.stderr.contains("AuthenticationFailed") || refused.stderr.contains("did not match"), refused.output)
    }

    // MARK: The tool and the example

    func testLocalauthctlStoresListsLoadsAndRemovesASecret() throws {
        try feedingEnrollScans(of: "owner-finger") {
            let enrolled = try localauthctl(["enroll"])
            XCTAssertEqual(enrolled.status, 0, enrolled.output)
        }
        let input = rig.directory + "/secret-input"
        try Data("s3cr3t\n".utf8).write(to: URL(fileURLWithPath: input))
        let stored = try runProgram("/bin/sh", ["-c", "'\(Paths.localauthctl)' secret store api-token --requirement biometry < '\(input)'"],
                                    environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address])
        XCTAssertEqual(stored.status, 0, stored.output)
        let listed = try localauthctl(["secret", "list"])
        XCTAssertEqual(listed.stdout, "api-token\n", listed.output)
        present("owner-finger")
        let loaded = try localauthctl(["secret", "load", "api-token"])
        XCTAssertEqual(loaded.status, 0, loaded.output)
        XCTAssertEqual(loaded.stdout, "s3cr3t\n")
        present("someone-else", times: 3)
        let refused = try localauthctl(["secret", "load", "api-token"])
        XCTAssertEqual(refused.status, 1, refused.output)
        XCTAssertEqual(refused.stdout, "")
        XCTAssertEqual(try localauthctl(["secret", "remove", "api-token"]).status, 0)
        XCTAssertEqual(try localauthctl(["secret", "list"]).stdout, "")
    }

    func testTheVaultExampleOpensItsNoteAfterARestart() throws {
        try feedingEnrollScans(of: "owner-finger") { _ = try localauthctl(["enroll"]) }
        let note = rig.directory + "/vault-\(UInt32.random(in: 0...UInt32.max)).note"
        let environment = ["DBUS_SYSTEM_BUS_ADDRESS": rig.address]
        let created = try runProgram(try Paths.example("SecretVault"), [note, "Meet at noon"], environment: environment)
        XCTAssertEqual(created.stdout, "Stored the note; its key is behind your fingerprint.\n", created.output)
        let sealed = try Data(contentsOf: URL(fileURLWithPath: note))
        XCTAssertNil(sealed.range(of: Data("Meet at noon".utf8)))

        let state = service.stateDirectory
        service.stop()
        service = try ServiceProcess(bus: rig, stateDirectory: state)
        present("owner-finger")
        let opened = try runProgram(try Paths.example("SecretVault"), [note], environment: environment)
        XCTAssertEqual(opened.stdout, "Note: Meet at noon\n", opened.output)
        present("someone-else", times: 3)
        let refused = try runProgram(try Paths.example("SecretVault"), [note], environment: environment)
        XCTAssertEqual(refused.status, 1, refused.output)
        XCTAssertTrue(refused.stdout.hasPrefix("Refused:"), refused.output)
    }
}
