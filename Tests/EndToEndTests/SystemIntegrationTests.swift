import Foundation
import Glibc
import LocalAuthentication
import RigSupport
import XCTest

// System integration (issue 5): what `make install` lays down, how the
// installed files behave under the system's own tools (dbus-daemon's
// activation, systemd-analyze, man), and the service's life cycle as a
// system service. `make install` runs with BINARIES= pointing at the binaries
// of this very test build, so no second (release) build is needed here.

/// A scratch directory under /tmp, reachable by other users (polkitd, nobody).
func scratchDirectory(_ name: String) throws -> String {
    let path = "/tmp/localauth-\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true,
                                            attributes: [.posixPermissions: 0o755])
    return path
}

/// A test case with a scratch directory of its own (`scratchName`), made
/// before each test and removed after it.
class ScratchDirectoryTestCase: XCTestCase, @unchecked Sendable {
    class var scratchName: String { "scratch" }
    var scratch: String!

    override func setUpWithError() throws {
        try super.setUpWithError()
        scratch = try scratchDirectory(Self.scratchName)
    }

    override func tearDown() {
        if let scratch { try? FileManager.default.removeItem(atPath: scratch) }
        super.tearDown()
    }
}

/// `make TARGET` in this checkout, installing this test build's binaries.
@discardableResult
func make(_ target: String, _ variables: [String: String]) throws -> Outcome {
    let assignments = variables.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
    let outcome = try runProgram("/usr/bin/make", ["-C", Paths.root, "--no-print-directory", target,
                                                   "BINARIES=\(Paths.binaries)"] + assignments, timeout: 120)
    guard outcome.status == 0 else { throw RigError("make \(target) failed (\(outcome.status)): \(outcome.output)") }
    return outcome
}

/// Every file and directory below `root` (paths relative to it, with a
/// leading slash) and its permission bits; directories end in "/".
func tree(_ root: String) -> [String: Int] {
    var found: [String: Int] = [:]
    guard let walker = FileManager.default.enumerator(atPath: root) else { return found }
    while let relative = walker.nextObject() as? String {
        var info = stat()
        guard lstat(root + "/" + relative, &info) == 0 else { continue }
        let isDirectory = (info.st_mode & S_IFMT) == S_IFDIR
        found["/" + relative + (isDirectory ? "/" : "")] = Int(info.st_mode & 0o7777)
    }
    return found
}

/// The files `make install` writes for a prefix, and their modes.
func expectedFiles(prefix: String, unitDirectory: String) -> [String: Int] {
    [
        "\(prefix)/bin/localauthctl": 0o755,
        "\(prefix)/libexec/localauthd": 0o755,
        "\(prefix)/share/dbus-1/system.d/org.example.LocalAuth.conf": 0o644,
        "\(prefix)/share/dbus-1/system-services/org.example.LocalAuth.service": 0o644,
        "\(prefix)/share/dbus-1/interfaces/org.example.LocalAuth.xml": 0o644,
        "\(prefix)/share/polkit-1/actions/org.example.LocalAuth.policy": 0o644,
        "\(prefix)/share/polkit-1/actions/org.example.LocalAuth.rights.policy": 0o644,
        "\(unitDirectory)/localauthd.service": 0o644,
        "\(prefix)/share/man/man8/localauthd.8": 0o644,
        "\(prefix)/share/man/man1/localauthctl.1": 0o644,
        "\(prefix)/share/localauth/install-manifest": 0o644,
        // The system sheet (issue 14): the agent, its protocol, its two ways of starting.
        "\(prefix)/libexec/localauth-prompt": 0o755,
        "\(prefix)/share/dbus-1/interfaces/org.example.LocalAuth.PromptAgent.xml": 0o644,
        "/etc/xdg/autostart/localauth-prompt.desktop": 0o644,
        "\(prefix)/lib/systemd/user/localauth-prompt.service": 0o644,
        // The PAM module (issue 16), where PAM finds it by name, its two
        // pam-auth-update profiles (off until enabled) and its man page.
        "/usr/lib/x86_64-linux-gnu/security/pam_localauth.so": 0o644,
        "/usr/share/pam-configs/localauth": 0o644,
        "/usr/share/pam-configs/localauth-reset-lockout": 0o644,
        "/usr/share/pam-configs/localauth-keyring": 0o644,
        "\(prefix)/share/man/man8/pam_localauth.8": 0o644,
    ]
}

func contents(_ path: String) throws -> String { try String(contentsOfFile: path, encoding: .utf8) }

/// `Key=value` lines of an ini-style file (the activation file, the unit).
func keys(_ text: String) -> [String: [String]] {
    var found: [String: [String]] = [:]
    for line in text.split(separator: "\n") where !line.hasPrefix("#") && line.contains("=") {
        let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
        found[parts[0], default: []].append(parts.count > 1 ? parts[1] : "")
    }
    return found
}

/// Installation, the installed files, and on-demand life through D-Bus
/// activation. Needs no rig: the activation test runs its own bus.
final class InstallationTests: ScratchDirectoryTestCase, @unchecked Sendable {
    override class var scratchName: String { "install" }

    func testInstallWritesExactlyTheExpectedFilesAndUninstallRemovesThem() throws {
        for (prefix, unitDirectory) in [("/usr", "/lib/systemd/system"), ("/usr/local", "/usr/local/lib/systemd/system")] {
            let destdir = scratch + "/root" + prefix.replacingOccurrences(of: "/", with: "-")
            try make("install", ["DESTDIR": destdir, "PREFIX": prefix])
            let installed = tree(destdir)
            let files = installed.filter { !$0.key.hasSuffix("/") }
            let expected = expectedFiles(prefix: prefix, unitDirectory: unitDirectory)
            XCTAssertEqual(files, expected, "PREFIX=\(prefix)")
            for (directory, mode) in installed where directory.hasSuffix("/") {
                XCTAssertEqual(mode, 0o755, "\(directory) (PREFIX=\(prefix))")
            }

            // What was installed: the built binaries, the contract files as they
            // are, and the generated ones with the prefix filled in.
            for binary in ["bin/localauthctl", "libexec/localauthd"] {
                let name = URL(fileURLWithPath: binary).lastPathComponent
                XCTAssertEqual(FileManager.default.contentsEqual(atPath: destdir + prefix + "/" + binary, andPath: Paths.binaries + "/" + name),
                               true, binary)
            }
            for (source, target) in [("dbus/org.example.LocalAuth.conf", "share/dbus-1/system.d/org.example.LocalAuth.conf"),
                                     ("dbus/org.example.LocalAuth.xml", "share/dbus-1/interfaces/org.example.LocalAuth.xml"),
                                     ("polkit/org.example.LocalAuth.policy", "share/polkit-1/actions/org.example.LocalAuth.policy"),
                                     ("polkit/org.example.LocalAuth.rights.policy", "share/polkit-1/actions/org.example.LocalAuth.rights.policy"),
                                     ("man/localauthctl.1", "share/man/man1/localauthctl.1")] {
                XCTAssertEqual(try contents(destdir + prefix + "/" + target), try contents(Paths.root + "/" + source), target)
            }
            let activation = keys(try contents(destdir + prefix + "/share/dbus-1/system-services/org.example.LocalAuth.service"))
            XCTAssertEqual(activation["Name"], ["org.example.LocalAuth"])
            XCTAssertEqual(activation["Exec"], ["\(prefix)/libexec/localauthd"])
            XCTAssertEqual(activation["User"], ["root"])
            XCTAssertEqual(activation["SystemdService"], ["localauthd.service"])
            let unit = keys(try contents(destdir + unitDirectory + "/localauthd.service"))
            XCTAssertEqual(unit["ExecStart"], ["\(prefix)/libexec/localauthd"])
            XCTAssertEqual(unit["Type"], ["dbus"])
            XCTAssertEqual(unit["BusName"], ["org.example.LocalAuth"])
            XCTAssertEqual(unit["StateDirectory"], ["localauth"])
            XCTAssertEqual(unit["StateDirectoryMode"], ["0700"])
            for file in expected.keys where !file.contains("/bin/") && !file.contains("/libexec/") && !file.hasSuffix(".so") {
                XCTAssertFalse(try contents(destdir + file).contains("@"  + "LIBEXECDIR@"), "template left in \(file)")
            }
            // The PAM module is the one `make pam` built, where PAM loads modules by name.
            XCTAssertEqual(FileManager.default.contentsEqual(atPath: destdir + "/usr/lib/x86_64-linux-gnu/security/pam_localauth.so",
                                                             andPath: Paths.root + "/.build/pam/pam_localauth.so"), true)
            let page = try contents(destdir + prefix + "/share/man/man8/localauthd.8")
            XCTAssertTrue(page.contains(".B \(prefix)/libexec/localauthd"), "SYNOPSIS names the installed path")
            XCTAssertTrue(page.contains(".I \(unitDirectory)/localauthd.service"))

            // The manifest lists the files (and the directories it created).
            let manifest = try contents(destdir + prefix + "/share/localauth/install-manifest")
            XCTAssertEqual(Set(manifest.split(separator: "\n").filter { $0.hasPrefix("f ") }.map { String($0.dropFirst(2)) }),
                           Set(expected.keys))

            // Installing again changes nothing; uninstalling removes exactly
            // what was installed, and leaves what was not.
            try make("install", ["DESTDIR": destdir, "PREFIX": prefix])
            XCTAssertEqual(tree(destdir), installed, "a second install is the same installation")
            try "keep me".write(toFile: destdir + prefix + "/bin/someone-elses-tool", atomically: true, encoding: .utf8)
            try make("uninstall", ["DESTDIR": destdir, "PREFIX": prefix])
            XCTAssertEqual(tree(destdir).filter { !$0.key.hasSuffix("/") }.keys.sorted(), ["\(prefix)/bin/someone-elses-tool"])
            let kept = prefix == "/usr" ? ["/usr/", "/usr/bin/"] : ["/usr/", "/usr/local/", "/usr/local/bin/"]
            XCTAssertEqual(tree(destdir).filter { $0.key.hasSuffix("/") }.keys.sorted(), kept,
                           "only the directories that still hold a file stay")
        }
    }

    func testManPagesRenderWithoutWarnings() throws {
        let destdir = scratch + "/root"
        try make("install", ["DESTDIR": destdir, "PREFIX": "/usr"])
        for (page, name) in [("man8/localauthd.8", "localauthd"), ("man1/localauthctl.1", "localauthctl")] {
            let path = destdir + "/usr/share/man/" + page
            let groff = try runProgram("/usr/bin/groff", ["-man", "-Tutf8", "-ww", "-z", path])
            XCTAssertEqual(groff.status, 0, groff.output)
            XCTAssertEqual(groff.output, "", "groff warnings for \(page)")
            let rendered = try runProgram("/usr/bin/man", ["--warnings", "-l", path], environment: ["MANWIDTH": "80", "MANPAGER": "cat", "PAGER": "cat"])
            XCTAssertEqual(rendered.status, 0, rendered.output)
            XCTAssertEqual(rendered.stderr, "", "man warnings for \(page)")
            XCTAssertTrue(rendered.stdout.contains("NAME"), rendered.stdout)
            let whatis = try runProgram("/usr/bin/lexgrog", [path])
            XCTAssertEqual(whatis.status, 0, whatis.output)
            XCTAssertTrue(whatis.stdout.contains("\"\(name) - "), whatis.output)
        }
    }

    /// Examples/UnlockApp uses the package as any SwiftPM user would (a
    /// dependency by path), which SwiftPM refuses if the root package has
    /// unsafeFlags. Building it is `make example` (a second full build, too
    /// slow for this suite); here, the two manifests.
    func testPackageCanBeUsedAsADependency() throws {
        let root = try contents(Paths.root + "/Package.swift")
        XCTAssertFalse(root.contains("unsafeFlags"), "a package with unsafeFlags cannot be a dependency")
        let example = try contents(Paths.root + "/Examples/UnlockApp/Package.swift")
        XCTAssertTrue(example.contains(#".package(name: "LocalAuth", path: "../..")"#), example)
        XCTAssertTrue(example.contains(#".product(name: "LocalAuthentication", package: "LocalAuth")"#), example)
        XCTAssertTrue(root.contains(#".library(name: "LocalAuthentication""#), root)
    }

    /// The packages' maintainer scripts (debian/) are valid POSIX sh (dash),
    /// and only the whitelisted systemctl daemon-reload is called directly (lintian).
    func testMaintainerScriptsParse() throws {
        for script in ["localauthd.postinst", "localauthd.prerm", "localauthd.postrm",
                       "libpam-localauth.postinst", "libpam-localauth.prerm"] {
            let path = Paths.root + "/debian/" + script
            let check = try runProgram("/bin/dash", ["-n", path])
            XCTAssertEqual(check.status, 0, "\(script): \(check.output)")
            let text = try contents(path)
            XCTAssertTrue(text.hasPrefix("#!/bin/sh\n"), script)
            for line in text.split(separator: "\n") where line.contains("systemctl ") && !line.trimmingCharacters(in: .whitespaces).hasPrefix("#") {
                XCTAssertTrue(line.contains("systemctl --system daemon-reload"), "\(script): \(line)")
            }
        }
    }

    /// `systemd-analyze security --offline=yes` on the installed unit: a
    /// property of the file, not of timing. fprintd's number is printed beside.
    func testInstalledUnitExposureIsAtMostTwo() throws {
        let destdir = scratch + "/root"
        try make("install", ["DESTDIR": destdir, "PREFIX": "/usr"])
        func exposure(_ unit: String) throws -> Double {
            let outcome = try runProgram("/usr/bin/systemd-analyze", ["security", "--offline=yes", "--no-pager", unit])
            let text = outcome.output
            guard let line = text.split(separator: "\n").first(where: { $0.contains("Overall exposure level") }),
                  let number = line.split(separator: ":").last?.split(separator: " ").first,
                  let value = Double(number) else {
                throw RigError("no exposure in systemd-analyze output (\(outcome.status)): \(text)")
            }
            return value
        }
        let unit = destdir + "/lib/systemd/system/localauthd.service"
        let ours = try exposure(unit)
        print("systemd-analyze security --offline=yes: localauthd.service \(ours)")
        XCTAssertLessThanOrEqual(ours, 2.0)
        let fprintd = "/lib/systemd/system/fprintd.service"
        if FileManager.default.fileExists(atPath: fprintd) {
            let theirs = try exposure(fprintd)
            print("systemd-analyze security --offline=yes: fprintd.service \(theirs)")
            XCTAssertLessThan(ours, theirs)
        }

        // systemd accepts the unit as a whole (ExecStart= must exist: install
        // for real under a scratch prefix).
        let prefix = scratch + "/prefix/usr"
        try make("install", ["PREFIX": prefix])
        let verify = try runProgram("/usr/bin/systemd-analyze", ["verify", "--man=no", prefix + "/lib/systemd/system/localauthd.service"])
        XCTAssertEqual(verify.status, 0, verify.output)
        XCTAssertEqual(verify.output, "", "systemd-analyze verify")
    }

    /// A system-type bus whose <servicedir> holds the installed activation
    /// file and which includes the installed bus policy: the first call starts
    /// localauthd, it exits after its idle timeout, the next call starts it again.
    ///
    /// dbus-daemon without --systemd-activation ignores SystemdService= and
    /// runs Exec= itself (it is root, so no setuid launch helper is needed);
    /// the test adapts only the Exec= line: the staged binary path, a 2 s idle
    /// timeout and a scratch state directory.
    func testBusActivationStartsTheServiceAndIdleTimeoutEndsIt() throws {
        let destdir = scratch + "/root"
        try make("install", ["DESTDIR": destdir, "PREFIX": "/usr"])
        let services = scratch + "/services"
        try FileManager.default.createDirectory(atPath: services, withIntermediateDirectories: true)
        let installed = try contents(destdir + "/usr/share/dbus-1/system-services/org.example.LocalAuth.service")
        let exec = "Exec=\(destdir)/usr/libexec/localauthd --idle-timeout 2 --state-dir \(scratch!)/state"
        let adapted = installed.split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.hasPrefix("Exec=") ? exec : String($0) }.joined(separator: "\n")
        XCTAssertNotEqual(adapted, installed)
        try adapted.write(toFile: services + "/org.example.LocalAuth.service", atomically: true, encoding: .utf8)

        let socket = scratch + "/bus"
        let address = "unix:path=\(socket)"
        // The rig's system-bus config, with the installed bus policy and
        // activation from the staged service file.
        let config = try runProgram(Paths.root + "/scripts/rig.sh",
                                    ["bus-config", socket, destdir + "/usr/share/dbus-1/system.d/org.example.LocalAuth.conf", services])
        XCTAssertEqual(config.status, 0, config.output)
        try config.stdout.write(toFile: scratch + "/bus.conf", atomically: true, encoding: .utf8)
        // The activated service inherits the bus daemon's environment: its bus
        // and libfprint's virtual reader.
        let bus = try Child("/usr/bin/dbus-daemon", ["--config-file=\(scratch!)/bus.conf", "--nofork"],
                            environment: ["DBUS_SYSTEM_BUS_ADDRESS": address, "FP_DRIVERS_WHITELIST": "virtual_device",
                                          "FP_VIRTUAL_DEVICE": scratch + "/vfp.sock"],
                            stdoutPath: scratch + "/bus.log", stderrPath: scratch + "/bus.log")
        var started: [pid_t] = []
        defer {
            for pid in started where kill(pid, 0) == 0 { kill(pid, SIGTERM) }
            bus.signal(SIGTERM)
            bus.wait(timeout: 5)
        }
        func busLog() -> String { (try? contents(scratch + "/bus.log")) ?? "" }
        func driver(_ method: String, _ argument: String) throws -> Outcome {
            try runProgram("/usr/bin/busctl", ["--address=\(address)", "call", "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                               "org.freedesktop.DBus", method, "s", argument])
        }
        func owned() throws -> Bool { try driver("NameHasOwner", "org.example.LocalAuth").stdout.contains("true") }
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: socket) && Date() < deadline && bus.isRunning { usleep(10_000) }
        XCTAssertTrue(bus.isRunning, busLog())

        for round in 1...2 {
            XCTAssertFalse(try owned(), "round \(round): nobody owns the name before the call")
            let call = try runProgram("/usr/bin/busctl", ["--address=\(address)", "get-property", "org.example.LocalAuth",
                                                          "/org/example/LocalAuth", "org.example.LocalAuth", "BiometryType"])
            XCTAssertEqual(call.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "u 1", "round \(round): \(call.output)\n\(busLog())")
            let answered = Date()
            let pidReply = try driver("GetConnectionUnixProcessID", "org.example.LocalAuth")
            guard let pid = pid_t(pidReply.stdout.split(separator: " ").last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") else {
                XCTFail("round \(round): no pid: \(pidReply.output)\n\(busLog())")
                return
            }
            XCTAssertFalse(started.contains(pid), "round \(round): a new process")
            started.append(pid)
            let command = (try? contents("/proc/\(pid)/cmdline"))?.replacingOccurrences(of: "\0", with: " ") ?? ""
            XCTAssertTrue(command.hasPrefix("\(destdir)/usr/libexec/localauthd --idle-timeout 2"), command)

            // Idle for 2 s: it lets go of the name and exits by itself.
            let idleDeadline = Date().addingTimeInterval(15)
            while try owned(), Date() < idleDeadline { usleep(50_000) }
            XCTAssertFalse(try owned(), "round \(round): still running after 15 s\n\(busLog())")
            let idle = Date().timeIntervalSince(answered)
            XCTAssertGreaterThan(idle, 1.5, "round \(round): exited before its idle timeout")
            while kill(pid, 0) == 0, Date() < idleDeadline {
                if let stat = try? contents("/proc/\(pid)/stat"), stat.split(separator: " ").dropFirst(2).first == "Z" { break }
                usleep(20_000)
            }
        }
        let log = busLog()
        XCTAssertEqual(log.components(separatedBy: "Successfully activated service 'org.example.LocalAuth'").count - 1, 2, log)
        XCTAssertEqual(log.components(separatedBy: "<6>idle for 2 s; exiting").count - 1, 2, log)
    }
}

/// The service's life as a system service, on the rig (private bus, polkitd,
/// virtual reader).
final class ServiceLifeTests: RigTestCase, @unchecked Sendable {

    func testInstalledInterfaceFileIsWhatIntrospectReturns() throws {
        let destdir = try scratchDirectory("introspect")
        defer { try? FileManager.default.removeItem(atPath: destdir) }
        try make("install", ["DESTDIR": destdir, "PREFIX": "/usr"])
        let installed = try contents(destdir + "/usr/share/dbus-1/interfaces/org.example.LocalAuth.xml")
        let outcome = try busctl(["--json=short", "call", "org.example.LocalAuth", "/org/example/LocalAuth",
                                  "org.freedesktop.DBus.Introspectable", "Introspect"])
        let json = try JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [String: Any]
        let introspected = (json?["data"] as? [Any])?.first as? String
        XCTAssertEqual(introspected, installed, outcome.output)
    }

    /// SIGTERM while two callers wait for a finger: both get SystemCancel, the
    /// service exits 0, and every log line carries a journald priority.
    func testSigtermDuringEvaluationAnswersSystemCancelAndExitsZero() async throws {
        try await enroll(as: "owner-finger")
        let statuses = Collected<LAEvaluationStatus>()
        let context = LAContext()
        context.evaluationStatusHandler = { statuses.append($0) }
        let evaluation = Task { await self.evaluate(context: context) }
        try waitUntil("the evaluation waits for a finger") { statuses.values.contains(.placeFinger) }

        // A second caller, another connection, queued behind the first.
        let output = rig.directory + "/gdbus-\(UInt32.random(in: 0...UInt32.max))"
        let second = try Child("/usr/bin/gdbus", ["call", "--system", "--timeout", "60", "--dest", "org.example.LocalAuth",
                                                  "--object-path", "/org/example/LocalAuth",
                                                  "--method", "org.example.LocalAuth.EvaluatePolicy", "1", "Unlock", "{}"],
                               environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address], stdoutPath: output, stderrPath: output)
        let service = self.service!
        try waitUntil("the second evaluation waits for the reader") { service.log.contains("waits for the reader") }
        XCTAssertTrue(second.isRunning, "the second evaluation should be pending")

        let status = service.stop()
        XCTAssertEqual(status, 0, service.log)
        let result = await evaluation.value
        XCTAssertEqual(result.code, .systemCancel, "\(result)")
        XCTAssertEqual(second.wait(timeout: 10), 1)
        let secondOutput = (try? contents(output)) ?? ""
        XCTAssertTrue(secondOutput.contains("org.example.LocalAuth.Error.SystemCancel"), secondOutput)

        let lines = service.log.split(separator: "\n")
        XCTAssertFalse(lines.isEmpty)
        for line in lines {
            XCTAssertNotNil(line.range(of: #"^<[0-7]>\S"#, options: .regularExpression), "log line without priority: \(line)")
        }
        XCTAssertFalse(service.log.contains("owner-finger"), "no scan data in the log")
    }

    /// The unit runs the service as root with no capabilities at all
    /// (CapabilityBoundingSet=, NoNewPrivileges=yes): enrolling and
    /// evaluating must work like that.
    func testServiceWorksWithoutAnyCapability() async throws {
        service.stop()
        service = try ServiceProcess(bus: rig, launcher: ["/usr/bin/setpriv", "--bounding-set=-all", "--inh-caps=-all",
                                                          "--no-new-privs", "--"])
        let status = try contents("/proc/\(service.child.pid)/status")
        for field in ["CapEff", "CapPrm", "CapBnd"] {
            let line = status.split(separator: "\n").first { $0.hasPrefix(field + ":") }
            XCTAssertEqual(line?.split(separator: "\t").last, "0000000000000000", "\(field): \(String(describing: line))")
        }
        XCTAssertTrue(status.contains("NoNewPrivs:\t1"))
        try await enroll(as: "owner-finger")
        present("owner-finger")
        let result = await evaluate()
        XCTAssertTrue(result.succeeded, "\(result)\n\(service.log)")
    }

    /// libcrypto and tpm2-tss are loaded when a right is first touched, not
    /// at start (CLazyLibrary; issue 25's idle memory): a service that has
    /// enrolled and evaluated, but never touched a right, maps neither.
    /// RightsTests shows that rights still work once they are loaded.
    func testServiceWithoutRightsMapsNeitherLibcryptoNorTPMLibraries() async throws {
        try await enroll(as: "owner-finger")
        present("owner-finger")
        let result = await evaluate()
        XCTAssertTrue(result.succeeded, "\(result)\n\(service.log)")
        // Read to the end: Foundation's String(contentsOfFile:) stops after
        // the first page of a /proc file (its size says 0).
        let handle = try XCTUnwrap(FileHandle(forReadingAtPath: "/proc/\(service.child.pid)/maps"))
        defer { try? handle.close() }
        let maps = String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
        XCTAssertTrue(maps.contains("libfprint-2.so"), "the maps were read: \(maps.prefix(400))")
        for library in ["libcrypto.so", "libtss2-"] {
            XCTAssertFalse(maps.contains(library), "\(library) mapped by a service that touched no right")
        }
    }
}
