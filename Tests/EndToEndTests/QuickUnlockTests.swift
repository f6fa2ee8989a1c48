import Foundation
import Glibc
import RigSupport
import XCTest

/// LaQuickUnlock (clients/liblocalauth/la-quick-unlock.c, docs/APPS.md): a
/// password manager's quick-unlock key kept by one process of the app and
/// released to a later one only after the owner's finger, driven through
/// Examples/QuickUnlock (Python over the typelib, and C with the blocking
/// calls) on the rig: the real service, polkitd and the virtual reader.
final class QuickUnlockTests: RigTestCase, @unchecked Sendable {
    static let appID = "org.example.QuickUnlock"
    static let python = Paths.root + "/Examples/QuickUnlock/quick-unlock.py"

    override func setUpWithError() throws {
        try super.setUpWithError()
        for action in ["org.example.LocalAuth.rights.use", "org.example.LocalAuth.rights.manage"] { try rig.polkit(action, nil) }
        try feedingEnrollScans(of: "owner-finger") {
            let enrolled = try localauthctl(["enroll"])
            XCTAssertEqual(enrolled.status, 0, enrolled.output)
        }
    }

    func environment(appID: String) throws -> [String: String] {
        let build = try ClientLibraryTests.library.get()
        return ["DBUS_SYSTEM_BUS_ADDRESS": rig.address, "GI_TYPELIB_PATH": build, "LD_LIBRARY_PATH": build, "LOCALAUTH_APP_ID": appID]
    }

    /// One run of the example that asks for no finger: its one line.
    func quick(_ arguments: [String], appID: String = QuickUnlockTests.appID, program: [String]? = nil) throws -> String {
        let command = program ?? ["/usr/bin/python3", Self.python]
        let outcome = try runProgram(command[0], Array(command.dropFirst()) + arguments, environment: try environment(appID: appID))
        return outcome.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// `get DATABASE` in a new process, `fingers` presented one after each
    /// request for a finger; everything it printed.
    func get(_ database: String, fingers: [String], appID: String = QuickUnlockTests.appID, program: [String]? = nil) throws -> String {
        let command = program ?? ["/usr/bin/python3", Self.python]
        let output = rig.directory + "/quick-get-\(UUID().uuidString).out"
        let child = try Child(
            command[0], Array(command.dropFirst()) + ["get", database], environment: try environment(appID: appID),
            stdoutPath: output, stderrPath: output)
        defer {
            if child.isRunning {
                child.signal(SIGKILL)
                child.wait()
            }
        }
        for (index, finger) in fingers.enumerated() {
            // The first request is "place-finger", each later one "no-match".
            try waitUntil("request \(index + 1) for a finger: \(readText(output))", timeout: 20) {
                readText(output).components(separatedBy: "status: ").count - 1 > index
            }
            XCTAssertFalse(readText(output).contains("get: ok"), "a key before the finger: \(readText(output))")
            try service.sensor("SCAN \(finger)")
        }
        _ = child.wait(timeout: 30)
        return readText(output)
    }

    func digest(of line: String) -> String { line.components(separatedBy: "sha256=").last ?? "" }

    // MARK: The owner's app, across processes and a restart of the service

    func testANewProcessOfTheAppGetsTheKeyOnlyAfterTheOwnersFinger() throws {
        let set = try quick(["set", "3f1c-db"])
        XCTAssertTrue(set.hasPrefix("set: ok sha256="), set)
        XCTAssertEqual(try quick(["has", "3f1c-db"]), "has: yes")
        XCTAssertEqual(try quick(["has", "another-db"]), "has: no")

        let got = try get("3f1c-db", fingers: ["owner-finger"])
        XCTAssertEqual(got, "status: place-finger\nget: ok sha256=\(digest(of: set))\n")
        // The key is the app's right quick-unlock:ID (the rule of la_quick_unlock_right_identifier).
        let listed = try callService("ListRights", "a{sv}", ["1", "app-id", "s", Self.appID])
        XCTAssertTrue(listed.stdout.contains("quick-unlock:3f1c-db"), listed.output)
    }

    func testAWrongFingerGetsNothing() throws {
        XCTAssertTrue(try quick(["set", "db1"]).hasPrefix("set: ok"))
        let got = try get("db1", fingers: ["someone-else", "someone-else", "someone-else"])
        XCTAssertFalse(got.contains("get: ok"), got)
        XCTAssertTrue(got.hasSuffix("get: error -1 org.example.LocalAuth.Error.AuthenticationFailed\n"), got)
    }

    func testAServiceRestartKeepsTheKey() throws {
        let set = try quick(["set", "db1"])
        let state = service.stateDirectory
        XCTAssertEqual(service.stop(), 0)
        service = try ServiceProcess(bus: rig, stateDirectory: state)
        XCTAssertEqual(try quick(["has", "db1"]), "has: yes")
        XCTAssertEqual(try get("db1", fingers: ["owner-finger"]), "status: place-finger\nget: ok sha256=\(digest(of: set))\n")
    }

    /// The C example: the blocking calls in a worker thread, the status in
    /// the main loop; the key set from Python comes back to C (same app id).
    func testTheCExampleGetsTheKeyWithTheBlockingCalls() throws {
        let build = try ClientLibraryTests.library.get()
        let binary = rig.directory + "/c-quick-unlock"
        let compiled = try runProgram(
            "/bin/sh",
            [
                "-c",
                "cc -Wall -Werror -o '\(binary)' '\(Paths.root)/Examples/QuickUnlock/quick-unlock.c' "
                    + "$(pkg-config --cflags --libs liblocalauth-1)",
            ],
            environment: ["PKG_CONFIG_PATH": build + "/meson-uninstalled"])
        XCTAssertEqual(compiled.status, 0, compiled.output)
        let set = try quick(["set", "db1"])
        XCTAssertEqual(try quick(["has", "db1"], program: [binary]), "has: yes")
        XCTAssertEqual(try get("db1", fingers: ["owner-finger"], program: [binary]), "status: place-finger\nget: ok sha256=\(digest(of: set))\n")
        XCTAssertEqual(try quick(["forget", "db1"], program: [binary]), "forget: ok")
        XCTAssertEqual(try quick(["has", "db1"]), "has: no")
    }

    /// A GCancellable ends the wait for the finger: AppCancel (-9), no key,
    /// and the key is still there for the next unlock.
    func testCancellingTheWaitForTheFingerGetsNoKey() throws {
        XCTAssertTrue(try quick(["set", "db1"]).hasPrefix("set: ok"))
        let script = """
            import gi; gi.require_version("LocalAuth", "1.0"); from gi.repository import Gio, GLib, LocalAuth
            quick, loop, cancellable = LocalAuth.QuickUnlock.new(), GLib.MainLoop(), Gio.Cancellable()
            def status(_quick, status):
                print("status:", status, flush=True)
                cancellable.cancel()
            def done(_source, result):
                try:
                    print("key", quick.get_key_finish(result).get_size())
                except GLib.Error as error:
                    print("error", error.code, LocalAuth.error_get_dbus_error_name(error))
                loop.quit()
            quick.connect("status", status)
            quick.get_key("db1", "Unlock, then cancel", cancellable, done)
            loop.run()
            """
        let cancelled = try runProgram("/usr/bin/python3", ["-c", script], environment: try environment(appID: Self.appID))
        XCTAssertEqual(cancelled.output, "status: place-finger\nerror -9 org.example.LocalAuth.Error.AppCancel\n")
        XCTAssertEqual(try quick(["has", "db1"]), "has: yes")
    }

    // MARK: Nobody else

    func testAnotherProgramOfTheUserAndAnotherUidGetNothing() throws {
        XCTAssertTrue(try quick(["set", "db1"]).hasPrefix("set: ok"))
        // Another program of the same user (its own app id): nothing there, and no scan asked for.
        XCTAssertEqual(try quick(["has", "db1"], appID: "org.example.Other"), "has: no")
        XCTAssertEqual(
            try get("db1", fingers: [], appID: "org.example.Other"),
            "get: error -10 org.example.LocalAuth.Error.RightNotFound\n")
        // Another uid naming the same app id: its own, empty namespace.
        let build = try ClientLibraryTests.library.get()
        let nobody = try runAs(
            65534, "/usr/bin/env",
            [
                "GI_TYPELIB_PATH=\(build)", "LD_LIBRARY_PATH=\(build)", "LOCALAUTH_APP_ID=\(Self.appID)",
                "/usr/bin/python3", Self.python, "has", "db1",
            ])
        XCTAssertEqual(nobody.output.trimmingCharacters(in: .whitespacesAndNewlines), "has: no")
        let nobodyGet = try runAs(
            65534, "/usr/bin/env",
            [
                "GI_TYPELIB_PATH=\(build)", "LD_LIBRARY_PATH=\(build)", "LOCALAUTH_APP_ID=\(Self.appID)",
                "/usr/bin/python3", Self.python, "get", "db1",
            ])
        XCTAssertNotEqual(nobodyGet.status, 0, nobodyGet.output)
        XCTAssertFalse(nobodyGet.output.contains("get: ok") || nobodyGet.output.contains("status:"), nobodyGet.output)
        // The owner's key is still there.
        XCTAssertEqual(try quick(["has", "db1"]), "has: yes")
    }

    // MARK: Forgetting, and what it leaves

    func testResetForgetsEveryKeyAndLeavesTheAppsOtherRights() throws {
        XCTAssertTrue(try quick(["set", "db1"]).hasPrefix("set: ok"))
        XCTAssertTrue(try quick(["set", "db2"]).hasPrefix("set: ok"))
        let other = try runProgram(
            "/bin/sh", ["-c", "echo other | \(Paths.localauthctl) secret store not-a-key --app-id \(Self.appID)"],
            environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address])
        XCTAssertEqual(other.status, 0, other.output)

        XCTAssertEqual(try quick(["forget", "db1"]), "forget: ok")
        XCTAssertEqual(try quick(["has", "db1"]), "has: no")
        XCTAssertEqual(try quick(["has", "db2"]), "has: yes")
        XCTAssertEqual(try quick(["forget", "db1"]), "forget: ok", "a key forgotten already is forgotten")
        XCTAssertEqual(try quick(["reset"]), "reset: ok")
        XCTAssertEqual(try quick(["has", "db2"]), "has: no")
        XCTAssertEqual(try get("db2", fingers: []), "get: error -10 org.example.LocalAuth.Error.RightNotFound\n")
        let listed = try callService("ListRights", "a{sv}", ["1", "app-id", "s", Self.appID])
        XCTAssertTrue(listed.stdout.hasPrefix("aa{sv} 1 "), listed.output)
        XCTAssertTrue(listed.stdout.contains("not-a-key"), listed.output)
    }

    // MARK: Bad input changes nothing

    func testABadDatabaseIdOrKeyIsANamedErrorAndChangesNothing() throws {
        XCTAssertTrue(try quick(["set", "db1"]).hasPrefix("set: ok"))
        for bad in ["", "../db1", "quick-unlock:db1", "{3f1c}", "-db1", String(repeating: "a", count: 129)] {
            for command in ["set", "has", "forget"] {
                XCTAssertEqual(try quick([command, bad]), "\(command): error -10 org.freedesktop.DBus.Error.InvalidArgs", "\(command) '\(bad)'")
            }
        }
        XCTAssertEqual(try quick(["has", String(repeating: "a", count: 128)]), "has: no", "128 bytes is a valid id")
        let script = """
            import gi; gi.require_version("LocalAuth", "1.0"); from gi.repository import GLib, LocalAuth
            quick = LocalAuth.QuickUnlock.new()
            for key in (b"", b"k" * (LocalAuth.QUICK_UNLOCK_MAX_KEY_SIZE + 1)):
                try:
                    quick.set_key_sync("db1", GLib.Bytes.new(key), None)
                    print("kept", len(key))
                except GLib.Error as error:
                    print(len(key), error.code, LocalAuth.error_get_dbus_error_name(error))
            quick.set_key_sync("largest", GLib.Bytes.new(b"k" * LocalAuth.QUICK_UNLOCK_MAX_KEY_SIZE), None)
            print("kept", LocalAuth.QUICK_UNLOCK_MAX_KEY_SIZE)
            """
        let sizes = try runProgram("/usr/bin/python3", ["-c", script], environment: try environment(appID: Self.appID))
        XCTAssertEqual(
            sizes.output,
            """
            0 -10 org.freedesktop.DBus.Error.InvalidArgs
            4097 -10 org.example.LocalAuth.Error.LimitExceeded
            kept 4096

            """)
        // Nothing else was kept: db1 and "largest" only.
        let listed = try callService("ListRights", "a{sv}", ["1", "app-id", "s", Self.appID])
        XCTAssertTrue(listed.stdout.hasPrefix("aa{sv} 2 "), listed.output)
        XCTAssertTrue(listed.stdout.contains("quick-unlock:db1") && listed.stdout.contains("quick-unlock:largest"), listed.output)
    }
}
