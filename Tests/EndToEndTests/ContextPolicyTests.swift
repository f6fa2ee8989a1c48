import Foundation
import Glibc
import LocalAuthentication
import RigSupport
import XCTest

/// Where the finger is enough (docs/POLICY.md) on the rig: each context with
/// the policy off and on, through the real clients of each contract (the
/// library's EvaluatePolicy and rights, pam_localauth in the real libpam
/// through pamtester, fprintd's contract through a GDBus client), the file
/// read again on SIGHUP, and a person tightening it and never loosening it.
final class ContextPolicyTests: RigTestCase, @unchecked Sendable {
    private var policyFile = ""
    private var serviceFiles: [String] = []

    override func setUpWithError() throws {
        try super.setUpWithError()
        policyFile = rig.directory + "/policy-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).conf"
    }

    override func tearDown() {
        for file in serviceFiles + [policyFile] { unlink(file) }
        serviceFiles = []
        try? rig.polkit("org.example.LocalAuth.context-policy", nil)
        super.tearDown()
    }

    /// The service again, reading `policyFile` (`text`, nil: no file).
    private func restart(policy text: String?, fprintd: Bool = false) throws {
        service.stop()
        if let text { try text.write(toFile: policyFile, atomically: true, encoding: .utf8) } else { unlink(policyFile) }
        service = try ServiceProcess(bus: rig, arguments: ["--policy", policyFile] + (fprintd ? ["--fprintd"] : []))
    }

    /// Writes the policy file and has the running service read it (SIGHUP,
    /// as `systemctl reload` sends it), waiting for its log line.
    private func reload(policy text: String) throws {
        let before = service.log.components(separatedBy: "policy \(policyFile)").count
        try text.write(toFile: policyFile, atomically: true, encoding: .utf8)
        service.child.signal(SIGHUP)
        try waitUntil("the service read \(policyFile) again") {
            service.log.components(separatedBy: "policy \(policyFile)").count > before
        }
        XCTAssertTrue(service.child.isRunning, "SIGHUP reloads, it does not stop the service")
    }

    private var refusals: Int { service.log.components(separatedBy: "fingerprint refused by policy").count - 1 }

    // MARK: Apps

    func testTheAppsContextOffRefusesAtOnceAndOnEvaluates() async throws {
        try restart(policy: "# the machine's policy\napps = off\n")
        try await enroll(as: "owner-finger")
        let started = Date()
        let refused = await evaluate()
        XCTAssertEqual(refused.code, .biometryNotAvailable, "\(refused)")
        XCTAssertLessThan(Date().timeIntervalSince(started), 5, "refused before any scan")
        XCTAssertFalse(service.log.contains("waits for the reader"), service.log)
        XCTAssertEqual(refusals, 1, service.log)
        XCTAssertTrue(service.log.contains("apps is off for uid 0 (the machine's policy \(policyFile))"), service.log)
        var error: NSError?
        XCTAssertFalse(LAContext().canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error))
        XCTAssertEqual(error?.code, LAError.Code.biometryNotAvailable.rawValue)
        XCTAssertEqual(refusals, 1, "a preflight refuses no finger: not logged as a refusal")

        // Other contexts are not touched: the terminal's VerifyUser scans and matches.
        present("owner-finger")
        let pam = try gdbus("VerifyUser", ["root", "{'pam-service': <'sudo'>}"])
        XCTAssertEqual(pam.status, 0, pam.output)

        try reload(policy: "apps = on\n")
        present("owner-finger")
        let granted = await evaluate()
        XCTAssertTrue(granted.succeeded, "\(granted)")
        XCTAssertTrue(LAContext().canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: nil))
    }

    // MARK: App secrets

    func testTheAppSecretsContextOffRefusesAuthorizeRightAndOnReleasesIt() async throws {
        // The library reads its app id once per process: the same one as
        // RightsTests', whichever class uses LARightStore first.
        setenv("LOCALAUTH_APP_ID", RightsTests.appID, 1)
        try restart(policy: "app-secrets = off\n")
        try await enroll(as: "owner-finger")
        _ = try await LARightStore.shared.saveRight(LARight(requirement: .biometry), identifier: "policy", secret: Data([7, 7]))
        let right = try await LARightStore.shared.right(forIdentifier: "policy")
        do {
            try await right.authorize(localizedReason: "Open the test vault")
            XCTFail("authorized while app-secrets is off")
        } catch let error as LAError {
            XCTAssertEqual(error.code, .biometryNotAvailable, "\(error)")
        }
        XCTAssertFalse(service.log.contains("waits for the reader"), service.log)
        XCTAssertTrue(service.log.contains("app-secrets is off for uid 0"), service.log)
        // Apps are another context: EvaluatePolicy still scans.
        present("owner-finger")
        let scanned = await evaluate().succeeded
        XCTAssertTrue(scanned)

        try reload(policy: "app-secrets = on\n")
        present("owner-finger")
        try await right.authorize(localizedReason: "Open the test vault")
        let secret = try await right.secret.loadData()
        XCTAssertEqual(secret, Data([7, 7]))
    }

    // MARK: PAM

    private static let module = Paths.root + "/.build/pam/pam_localauth.so"

    /// A PAM service file `name` (a random one, read as the terminal context);
    /// MODULE stands for the module.
    private func pamService(_ name: String? = nil) throws -> String {
        if !FileManager.default.fileExists(atPath: Self.module) { _ = try runProgram("/usr/bin/make", ["-C", Paths.root, "pam"]) }
        let name = name ?? "localauth-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let path = "/etc/pam.d/" + name
        XCTAssertFalse(FileManager.default.fileExists(atPath: path), "the test never replaces a PAM service of this machine")
        try "auth required \(Self.module) timeout=20\n".write(toFile: path, atomically: true, encoding: .utf8)
        serviceFiles.append(path)
        return name
    }

    private func pamtester(_ service: String) throws -> Outcome {
        try runProgram(
            "/usr/bin/pamtester", ["-v", service, "root", "authenticate"],
            environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address], timeout: 60)
    }

    /// sudo's context: pam_localauth sends its PAM service name; any service
    /// not a login, lock screen or polkit's is the terminal. Off: the module
    /// answers PAM_AUTHINFO_UNAVAIL at once (the password comes next).
    func testTheTerminalContextOffSendsThePamStackToThePasswordAtOnce() async throws {
        try restart(policy: "terminal = off\n")
        try await enroll(as: "owner-finger")
        let service = try pamService()
        let started = Date()
        let refused = try pamtester(service)
        XCTAssertTrue(refused.output.contains("Authentication service cannot retrieve authentication info"), refused.output)
        XCTAssertLessThan(Date().timeIntervalSince(started), 5, "no wait for a finger")
        XCTAssertTrue(self.service.log.contains("terminal is off for uid 0"), self.service.log)
        XCTAssertTrue(self.service.log.contains("VerifyUser from /usr/bin/pamtester"), self.service.log)

        try reload(policy: "terminal = on\nadmin = off\n")
        present("owner-finger")
        let granted = try pamtester(service)
        XCTAssertTrue(granted.output.contains("successfully authenticated"), granted.output)
    }

    /// A lock screen's PAM service name (one this machine does not have)
    /// reaches the lock-screen context through the real module.
    func testALockScreenServiceNameMeetsTheLockScreenContext() async throws {
        guard !FileManager.default.fileExists(atPath: "/etc/pam.d/xsecurelock") else { throw XCTSkip("this machine has an xsecurelock PAM service") }
        try restart(policy: "lock-screen = off\n")
        try await enroll(as: "owner-finger")
        let service = try pamService("xsecurelock")
        let refused = try pamtester(service)
        XCTAssertTrue(refused.output.contains("cannot retrieve authentication info"), refused.output)
        XCTAssertTrue(self.service.log.contains("lock-screen is off for uid 0"), self.service.log)
        try reload(policy: "lock-screen = on\nterminal = off\n")
        present("owner-finger")
        XCTAssertTrue(try pamtester(service).output.contains("successfully authenticated"))
    }

    /// Each PAM service name VerifyUser may carry, against its context: off
    /// is BiometryNotAvailable at once; on reaches the next check (no print
    /// enrolled here: BiometryNotEnrolled).
    func testEachPamServiceNameMeetsItsContext() async throws {
        let names = [
            "polkit-1": "admin", "gdm-password": "login", "login": "login", "sddm": "login",
            "xscreensaver": "lock-screen", "sudo": "terminal", "su": "terminal", "cron": "terminal",
        ]
        try restart(policy: nil)
        for (name, _) in names {
            let call = try gdbus("VerifyUser", ["root", "{'pam-service': <'\(name)'>}"])
            XCTAssertTrue(call.output.contains("BiometryNotEnrolled"), "\(name) with no policy: \(call.output)")
        }
        for context in Set(names.values) {
            try reload(policy: "\(context) = off\n")
            for (name, its) in names {
                let call = try gdbus("VerifyUser", ["root", "{'pam-service': <'\(name)'>}"])
                let expected = its == context ? "BiometryNotAvailable" : "BiometryNotEnrolled"
                XCTAssertTrue(call.output.contains(expected), "\(name) with \(context) off: \(call.output)")
            }
        }
        let long = try gdbus("VerifyUser", ["root", "{'pam-service': <'\(String(repeating: "x", count: 65))'>}"])
        XCTAssertTrue(long.output.contains("InvalidArgs"), long.output)
    }

    // MARK: fprintd

    /// fprintd's VerifyStart from a program that is no PAM host: the apps
    /// context, refused in fprintd's words (NoSuchDevice, as with no reader).
    func testFprintdsVerifyStartMeetsTheContextOfItsProgram() async throws {
        try restart(policy: "apps = off\n", fprintd: true)
        try await enroll(as: "owner-finger")
        let client = try testScript("fprintd-client.py")
        let refused = try runProgram(
            "/usr/bin/python3", [client, "calls", "Claim:", "VerifyStart:any", "Release"],
            environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address])
        XCTAssertTrue(refused.output.contains("VerifyStart error net.reactivated.Fprint.Error.NoSuchDevice"), refused.output)
        XCTAssertTrue(service.log.contains("apps is off for uid 0"), service.log)

        try reload(policy: "apps = on\n")
        let allowed = try runProgram(
            "/usr/bin/python3", [client, "calls", "Claim:", "VerifyStart:any", "VerifyStop", "Release"],
            environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address])
        XCTAssertTrue(allowed.output.contains("VerifyStart ok"), allowed.output)
    }

    // MARK: The file and the person

    /// A typo in the machine's file: the error, with its line, is logged and
    /// every context is off (the safest reading) until it is fixed.
    func testAFileWithAnErrorTurnsEveryContextOff() async throws {
        try restart(policy: "apps = on\nlockscreen = off\n")
        try await enroll(as: "owner-finger")
        XCTAssertTrue(service.log.contains("policy \(policyFile):2: unknown context \"lockscreen\""), service.log)
        let refused = await evaluate().code
        XCTAssertEqual(refused, .biometryNotAvailable)
        let pam = try gdbus("VerifyUser", ["root", "{'pam-service': <'sudo'>}"])
        XCTAssertTrue(pam.output.contains("BiometryNotAvailable"), pam.output)
        try reload(policy: "lock-screen = off\n")
        present("owner-finger")
        let fixed = await evaluate().succeeded
        XCTAssertTrue(fixed)
    }

    /// A person turns a context off for their own account; "on" undoes only
    /// that, never the machine's off. Only the account itself or root
    /// changes its choices, and they are kept in one small file per uid.
    func testAPersonTightensTheirOwnPolicyAndNeverLoosensTheMachines() async throws {
        try restart(policy: "terminal = off\n")
        try await enroll(as: "owner-finger")
        let ctl = Paths.localauthctl
        let environment = ["DBUS_SYSTEM_BUS_ADDRESS": rig.address]
        XCTAssertEqual(try runProgram(ctl, ["policy", "set", "apps", "off"], environment: environment).status, 0)
        let ownChoice = await evaluate().code
        XCTAssertEqual(ownChoice, .biometryNotAvailable)
        XCTAssertTrue(service.log.contains("apps is off for uid 0 (the user's own choice)"), service.log)
        let shown = try runProgram(ctl, ["policy", "show"], environment: environment)
        XCTAssertTrue(shown.stdout.contains("apps         on       off    not asked"), shown.output)
        XCTAssertTrue(shown.stdout.contains("terminal     off      on     not asked"), shown.output)
        XCTAssertTrue(shown.stdout.contains("login        on       on     asked"), shown.output)

        // "on" for the machine's off: accepted as the person's choice, and still off.
        let loosen = try runProgram(ctl, ["policy", "set", "terminal", "on"], environment: environment)
        XCTAssertEqual(loosen.status, 0, loosen.output)
        XCTAssertTrue(loosen.stderr.contains("this machine's policy keeps the fingerprint off there"), loosen.output)
        let pam = try gdbus("VerifyUser", ["root", "{'pam-service': <'sudo'>}"])
        XCTAssertTrue(pam.output.contains("BiometryNotAvailable"), pam.output)

        XCTAssertEqual(try runProgram(ctl, ["policy", "set", "apps", "on"], environment: environment).status, 0)
        present("owner-finger")
        let undone = await evaluate().succeeded
        XCTAssertTrue(undone)
        XCTAssertFalse(FileManager.default.fileExists(atPath: service.stateDirectory + "/context-policy/0"), "all on: no file")

        // Another uid: its own choice with polkit's yes; never root's.
        try rig.polkit("org.example.LocalAuth.context-policy", "yes")
        let own = try runAs(65534, ctl, ["policy", "set", "admin", "off"])
        XCTAssertEqual(own.status, 0, own.output)
        let file = try String(contentsOfFile: service.stateDirectory + "/context-policy/65534", encoding: .utf8)
        XCTAssertTrue(file.contains("admin = off"), file)
        XCTAssertLessThanOrEqual(file.utf8.count, 128)
        let others = try runAs(65534, ctl, ["policy", "set", "apps", "off", "--user", "root"])
        XCTAssertNotEqual(others.status, 0, others.output)
        XCTAssertTrue(others.stderr.contains("PermissionDenied"), others.output)
        XCTAssertFalse(FileManager.default.fileExists(atPath: service.stateDirectory + "/context-policy/0"))
        let unknown = try gdbus("SetContextPolicy", ["sudo", "false", "{}"])
        XCTAssertTrue(unknown.output.contains("InvalidArgs"), unknown.output)
    }
}
