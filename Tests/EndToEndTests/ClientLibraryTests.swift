import Foundation
import Glibc
import RigSupport
import XCTest

/// liblocalauth-1 (clients/liblocalauth, docs/CLIENTS.md) from every
/// language it is for: the examples in Examples/LibLocalAuth run on the rig
/// against the real service, polkitd and the virtual reader, each the same
/// flow: preflight, an evaluation with the enrolled finger, an evaluation
/// cancelled through a GCancellable (the service's AppCancel), and a secret
/// kept, loaded after the finger, and removed.
final class ClientLibraryTests: RigTestCase, @unchecked Sendable {
    /// Builds the library once per test process (ninja: only what changed).
    static let library: Result<String, RigError> = {
        let build = Paths.root + "/.build/clientlib"
        guard let outcome = try? runProgram("/usr/bin/make", ["-C", Paths.root, "clientlib"], timeout: 600),
              outcome.status == 0 else {
            return .failure(RigError("make clientlib failed"))
        }
        return .success(build)
    }()

    var build: String { get throws { try Self.library.get() } }

    override func setUpWithError() throws {
        try super.setUpWithError()
        for action in ["org.example.LocalAuth.rights.use", "org.example.LocalAuth.rights.manage"] { try rig.polkit(action, nil) }
    }

    /// What a program using the uninstalled library needs.
    func environment(appID: String) throws -> [String: String] {
        let build = try build
        return ["DBUS_SYSTEM_BUS_ADDRESS": rig.address, "GI_TYPELIB_PATH": build, "LD_LIBRARY_PATH": build,
                "LOCALAUTH_APP_ID": appID]
    }

    // MARK: The flow, from each language

    func testThePythonExampleUnlocks() throws {
        try runTheFlow(["/usr/bin/python3", Paths.root + "/Examples/LibLocalAuth/python/unlock.py"], appID: "org.example.PyUnlock")
    }

    func testTheGJSExampleUnlocks() throws {
        try runTheFlow(["/usr/bin/gjs", "-m", Paths.root + "/Examples/LibLocalAuth/gjs/unlock.js"], appID: "org.example.GjsUnlock")
    }

    func testTheCExampleUnlocks() throws {
        let build = try build
        let binary = rig.directory + "/c-unlock"
        let compiled = try runProgram("/bin/sh", ["-c", "cc -Wall -Werror -o '\(binary)' '\(Paths.root)/Examples/LibLocalAuth/c/unlock.c' "
                                                  + "$(pkg-config --cflags --libs liblocalauth-1)"],
                                      environment: ["PKG_CONFIG_PATH": build + "/meson-uninstalled"])
        XCTAssertEqual(compiled.status, 0, compiled.output)
        try runTheFlow([binary], appID: "org.example.CUnlock")
    }

    func testTheValaExampleUnlocks() throws {
        let build = try build
        let binary = rig.directory + "/vala-unlock"
        // The .deps file (gio-2.0) is written only at install: name it here.
        let compiled = try runProgram("/usr/bin/valac", [
            "--vapidir", build, "--pkg", "gio-2.0", "--pkg", "liblocalauth-1",
            "-X", "-I" + build, "-X", "-I" + Paths.root + "/clients/liblocalauth", "-X", "-L" + build, "-X", "-llocalauth-1",
            "--directory", rig.directory, "-o", binary, Paths.root + "/Examples/LibLocalAuth/vala/unlock.vala"], timeout: 300)
        XCTAssertEqual(compiled.status, 0, compiled.output)
        try runTheFlow([binary], appID: "org.example.ValaUnlock")
    }

    // MARK: The library's contract

    /// The import line of docs/CLIENTS.md, and the error domain: a wrong
    /// finger is LAError.authenticationFailed (-1) with the service's name.
    func testPythonImportsTheTypelibAndAWrongFingerFails() throws {
        try feedingEnrollScans(of: "owner-finger") { _ = try localauthctl(["enroll"]) }
        let script = """
            import gi; gi.require_version("LocalAuth", "1.0"); from gi.repository import GLib, LocalAuth
            context = LocalAuth.Context()
            loop = GLib.MainLoop()
            context.connect("status", lambda c, s: print("status:", s, flush=True))
            def done(source, result):
                try:
                    print("success", source.evaluate_policy_finish(result))
                except GLib.Error as error:
                    print("error", error.domain, error.code, LocalAuth.error_get_dbus_error_name(error))
                loop.quit()
            context.evaluate_policy(LocalAuth.Policy.DEVICE_OWNER_AUTHENTICATION_WITH_BIOMETRICS, "Try", None, done)
            loop.run()
            """
        let output = rig.directory + "/python-wrong-finger.out"
        let child = try Child("/usr/bin/python3", ["-c", script], environment: try environment(appID: "org.example.Py"),
                              stdoutPath: output, stderrPath: output)
        // The service allows a few tries within one evaluation: a scan after each "no-match".
        try waitForCount("status: place-finger", 1, in: output)
        for attempt in 1...3 {
            try service.sensor("SCAN someone-else")
            if attempt < 3 { try waitForCount("status: no-match", attempt, in: output) }
        }
        XCTAssertEqual(child.wait(timeout: 30), 0, readText(output))
        XCTAssertTrue(readText(output).hasSuffix("error la-error-quark -1 org.example.LocalAuth.Error.AuthenticationFailed\n"),
                      readText(output))
    }

    /// A right's private key signs in the service (LaPrivateKey, Apple's
    /// LAPrivateKey) once the right is authorized; openssl verifies the
    /// signature with the right's public key. Before, it is NotInteractive.
    func testAPythonAppSignsWithARightsKey() throws {
        try feedingEnrollScans(of: "owner-finger") { _ = try localauthctl(["enroll"]) }
        let script = """
            import sys, gi; gi.require_version("LocalAuth", "1.0"); from gi.repository import GLib, LocalAuth
            store, loop, answer = LocalAuth.RightStore.get_default(), GLib.MainLoop(), {}
            def wait(start):
                start(lambda source, result: (answer.__setitem__("r", result), loop.quit()))
                loop.run()
                return answer["r"]
            right = store.save_right_finish(wait(lambda done: store.save_right(
                LocalAuth.Right.new(LocalAuth.RightRequirement.BIOMETRY), "signer", None, None, done)))
            key, message = right.get_key(), GLib.Bytes.new(b"signed by the service")
            try:
                key.sign_finish(wait(lambda done: key.sign(message, LocalAuth.KEY_ALGORITHM_ECDSA_SIGNATURE_MESSAGE_X962_SHA256, None, done)))
            except GLib.Error as error:
                print("before:", error.code, LocalAuth.error_get_dbus_error_name(error), flush=True)
            right.connect("status", lambda r, s: print("status:", s, flush=True))
            right.authorize_finish(wait(lambda done: right.authorize("Sign", None, done)))
            signature = key.sign_finish(wait(lambda done: key.sign(message, LocalAuth.KEY_ALGORITHM_ECDSA_SIGNATURE_MESSAGE_X962_SHA256, None, done)))
            spki = bytes.fromhex("3059301306072a8648ce3d020106082a8648ce3d030107034200") + bytes(key.get_public_key().get_data())
            open(sys.argv[1] + ".der", "wb").write(spki)
            open(sys.argv[1] + ".sig", "wb").write(bytes(signature.get_data()))
            open(sys.argv[1] + ".msg", "wb").write(bytes(message.get_data()))
            print("signed", flush=True)
            """
        let base = rig.directory + "/python-sign"
        let output = base + ".out"
        let child = try Child("/usr/bin/python3", ["-c", script, base], environment: try environment(appID: "org.example.PySigner"),
                              stdoutPath: output, stderrPath: output)
        defer { if child.isRunning { child.signal(SIGKILL); child.wait() } }
        try waitForCount("status: place-finger", 1, in: output)
        try service.sensor("SCAN owner-finger")
        XCTAssertEqual(child.wait(timeout: 30), 0, readText(output))
        XCTAssertEqual(readText(output), """
            before: -1004 org.example.LocalAuth.Error.NotAuthorized
            status: place-finger
            signed

            """)
        let verified = try runProgram("/usr/bin/openssl", ["dgst", "-sha256", "-verify", base + ".der", "-keyform", "DER",
                                                          "-signature", base + ".sig", base + ".msg"])
        XCTAssertEqual(verified.stdout, "Verified OK\n", verified.output)
    }

    /// An evaluation takes as long as the person takes: the library sends
    /// EvaluatePolicy without a reply timeout, so a finger that comes after
    /// GDBus's default 25 s still unlocks (a naive client gets NoReply).
    func testAnEvaluationOutlastsTheDefaultReplyTimeout() throws {
        service.stop()
        service = try ServiceProcess(bus: rig, arguments: ["--scan-timeout", "60"])
        try feedingEnrollScans(of: "owner-finger") { _ = try localauthctl(["enroll"]) }
        let script = """
            import gi; gi.require_version("LocalAuth", "1.0"); from gi.repository import GLib, LocalAuth
            context = LocalAuth.Context()
            loop = GLib.MainLoop()
            context.connect("status", lambda c, s: print("status:", s, flush=True))
            def done(source, result):
                try:
                    print("success", source.evaluate_policy_finish(result))
                except GLib.Error as error:
                    print("error", error.code, LocalAuth.error_get_dbus_error_name(error))
                loop.quit()
            context.evaluate_policy(LocalAuth.Policy.DEVICE_OWNER_AUTHENTICATION_WITH_BIOMETRICS, "Take your time", None, done)
            loop.run()
            """
        let output = rig.directory + "/python-slow-finger.out"
        let child = try Child("/usr/bin/python3", ["-c", script], environment: try environment(appID: "org.example.Py"),
                              stdoutPath: output, stderrPath: output)
        defer { if child.isRunning { child.signal(SIGKILL); child.wait() } }
        try waitForCount("status: place-finger", 1, in: output)
        // The time itself is what this test is about: past GDBus's 25 s.
        Thread.sleep(forTimeInterval: 27)
        XCTAssertTrue(child.isRunning, readText(output))
        try service.sensor("SCAN owner-finger")
        XCTAssertEqual(child.wait(timeout: 30), 0, readText(output))
        XCTAssertEqual(readText(output), "status: place-finger\nsuccess True\n")
    }

    /// EnvironmentChanged reaches LaEnvironment::changed: deleting the
    /// enrolled finger turns biometry-enrolled off.
    func testTheEnvironmentTellsOfAChange() throws {
        try feedingEnrollScans(of: "owner-finger") { _ = try localauthctl(["enroll"]) }
        let script = """
            import gi; gi.require_version("LocalAuth", "1.0"); from gi.repository import GLib, LocalAuth
            environment = LocalAuth.Environment.get_current_user()
            environment.start_updates()
            print("enrolled:", environment.props.biometry_enrolled, flush=True)
            loop = GLib.MainLoop()
            def changed(env):
                print("changed: enrolled:", env.props.biometry_enrolled, flush=True)
                loop.quit()
            environment.connect("changed", changed)
            loop.run()
            """
        let output = rig.directory + "/python-environment.out"
        let child = try Child("/usr/bin/python3", ["-c", script], environment: try environment(appID: "org.example.Py"),
                              stdoutPath: output, stderrPath: output)
        try waitForText("enrolled: True", in: output)
        XCTAssertEqual(try localauthctl(["delete", "right-index-finger"]).status, 0)
        XCTAssertEqual(child.wait(timeout: 30), 0, readText(output))
        XCTAssertEqual(readText(output), "enrolled: True\nchanged: enrolled: False\n")
    }

    /// Any program on the bus can send a signal named EnvironmentChanged to
    /// the app's connection: the library believes only the service's owner.
    /// Another uid forges "no reader"; the app must hear only the real change.
    func testAForgedEnvironmentChangeIsIgnored() throws {
        try feedingEnrollScans(of: "owner-finger") { _ = try localauthctl(["enroll"]) }
        let script = """
            import gi; gi.require_version("LocalAuth", "1.0"); from gi.repository import Gio, GLib, LocalAuth
            environment = LocalAuth.Environment.get_current_user()
            environment.start_updates()
            print("name:", Gio.bus_get_sync(Gio.BusType.SYSTEM).get_unique_name(), flush=True)
            loop = GLib.MainLoop()
            def changed(env):
                print("changed: type", int(env.props.biometry_type), "enrolled", env.props.biometry_enrolled, flush=True)
                loop.quit()
            environment.connect("changed", changed)
            loop.run()
            """
        let output = rig.directory + "/python-forged.out"
        let child = try Child("/usr/bin/python3", ["-c", script], environment: try environment(appID: "org.example.Py"),
                              stdoutPath: output, stderrPath: output)
        defer { if child.isRunning { child.signal(SIGKILL); child.wait() } }
        try waitForText("name: :", in: output)
        let name = readText(output).split(separator: " ").last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) } ?? ""
        let forged = try runAs(65534, "/usr/bin/gdbus", [
            "emit", "--system", "--dest", name, "--object-path", "/org/example/LocalAuth",
            "--signal", "org.example.LocalAuth.EnvironmentChanged",
            "{'biometry-type': <uint32 0>, 'biometry-enrolled': <false>}"])
        XCTAssertEqual(forged.status, 0, forged.output)
        // The forged signal is in the app's queue before the real change is made.
        XCTAssertEqual(try localauthctl(["delete", "right-index-finger"]).status, 0)
        XCTAssertEqual(child.wait(timeout: 30), 0, readText(output))
        XCTAssertEqual(readText(output), "name: \(name)\nchanged: type 1 enrolled False\n")
    }

    // MARK: Helpers

    /// Enrolls the owner's finger, runs `command` with an identifier and a
    /// secret, presents the finger when the evaluation and the authorization
    /// wait for it (not when the cancelled one does), and checks every line.
    func runTheFlow(_ command: [String], appID: String) throws {
        try feedingEnrollScans(of: "owner-finger") {
            let enrolled = try localauthctl(["enroll"])
            XCTAssertEqual(enrolled.status, 0, enrolled.output)
        }
        let secret = "s3cr3t from \(appID)"
        let output = rig.directory + "/flow-\(appID).out"
        let child = try Child(command[0], Array(command.dropFirst()) + ["example-secret", secret],
                              environment: try environment(appID: appID), stdoutPath: output, stderrPath: output)
        defer { if child.isRunning { child.signal(SIGKILL); child.wait() } }
        try waitForCount("status: place-finger", 1, in: output)
        try service.sensor("SCAN owner-finger")
        try waitForText("cancel: error", in: output)
        try waitForCount("status: place-finger", 3, in: output)
        try service.sensor("SCAN owner-finger")
        XCTAssertEqual(child.wait(timeout: 60), 0, readText(output))
        XCTAssertEqual(readText(output), """
            preflight: ok biometry-type=1
            domain-state: 32 bytes
            status: place-finger
            evaluate: success
            status: place-finger
            cancel: error -9 org.example.LocalAuth.Error.AppCancel
            store: ok
            status: place-finger
            load: \(secret)
            remove: ok

            """)
        // The right is gone from the service too.
        let listed = try callService("ListRights", "a{sv}", ["1", "app-id", "s", appID])
        XCTAssertEqual(listed.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "aa{sv} 0", listed.output)
    }

    func waitForCount(_ text: String, _ count: Int, in path: String, timeout: Double = 20) throws {
        try waitUntil("\(count) × '\(text)' in \(path): \(readText(path))", timeout: timeout) {
            readText(path).components(separatedBy: text).count - 1 >= count
        }
    }
}
