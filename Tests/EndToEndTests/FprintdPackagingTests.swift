import Foundation
import Glibc
import RigSupport
import XCTest

// The package that replaces fprintd (localauth-fprintd, docs/FPRINTD.md):
// `make install FPRINTD=yes` lays down what it ships, above all the drop-in
// localauthd.service.d/fprintd.conf. What systemd makes of unit + drop-in is
// asked of systemd itself (systemd-analyze verify and cat-config); no rig.

/// Settings of a unit as systemd merges its files: `text` is the unit and its
/// drop-ins in systemd's order (systemd-analyze cat-config). For list-valued
/// settings an empty assignment clears what came before, as systemd does.
func mergedServiceSettings(_ text: String) -> [String: [String]] {
    var merged: [String: [String]] = [:]
    var section = ""
    for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
        let line = raw.trimmingCharacters(in: .whitespaces)
        if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
        if line.hasPrefix("[") { section = line; continue }
        guard section == "[Service]", let equals = line.firstIndex(of: "=") else { continue }
        let key = String(line[..<equals]), value = String(line[line.index(after: equals)...])
        if value.isEmpty { merged[key] = [] } else { merged[key, default: []].append(value) }
    }
    return merged
}

final class FprintdPackagingTests: ScratchDirectoryTestCase, @unchecked Sendable {
    override class var scratchName: String { "fprintd-package" }

    /// FPRINTD=yes adds exactly localauth-fprintd's files (debian/localauth-fprintd.install,
    /// and the drop-in, which debian/rules installs from the suite's unit directory)
    /// to the default installation; the activation file starts localauthd.service.
    func testFprintdInstallAddsTheReplacingPackagesFiles() throws {
        let destdir = scratch + "/root"
        try make("install", ["DESTDIR": destdir, "PREFIX": "/usr", "FPRINTD": "yes"])
        let files = Set(tree(destdir).keys.filter { !$0.hasSuffix("/") })
        let added = files.subtracting(expectedFiles(prefix: "/usr", unitDirectory: "/lib/systemd/system").keys)
        let packaged = try contents(Paths.root + "/debian/localauth-fprintd.install")
            .split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.isEmpty }.map { "/" + $0 }
            + ["/lib/systemd/system/localauthd.service.d/fprintd.conf"]
        let rules = try contents(Paths.root + "/debian/rules")
        XCTAssertTrue(rules.contains("dh_install -plocalauth-fprintd $(UNITS)/localauthd.service.d/fprintd.conf"),
                      "debian/rules installs the drop-in")
        XCTAssertEqual(added, Set(packaged))
        XCTAssertEqual(packaged.count, 6)

        let activation = keys(try contents(destdir + "/usr/share/dbus-1/system-services/net.reactivated.Fprint.service"))
        XCTAssertEqual(activation["Name"], ["net.reactivated.Fprint"])
        XCTAssertEqual(activation["Exec"], ["/usr/libexec/localauthd --fprintd"])
        XCTAssertEqual(activation["User"], ["root"])
        XCTAssertEqual(activation["SystemdService"], ["localauthd.service"],
                       "one unit for both names: the drop-in makes it --fprintd")
        for (source, target) in [("dbus/net.reactivated.Fprint.conf", "/usr/share/dbus-1/system.d/net.reactivated.Fprint.conf"),
                                 ("polkit/net.reactivated.fprint.device.policy",
                                  "/usr/share/polkit-1/actions/net.reactivated.fprint.device.policy")] {
            XCTAssertEqual(try contents(destdir + target), try contents(Paths.root + "/" + source), target)
        }
    }

    /// systemd accepts localauthd.service with the drop-in, reads the drop-in
    /// after the unit, and the merged service runs `localauthd --fprintd`
    /// with $STATE_DIRECTORY = /var/lib/fprint:/var/lib/localauth (fprintd's
    /// store first, as Sources/localauthd reads it) and fprintd's store
    /// writable; every other setting is localauthd.service's.
    func testTheDropInMakesLocalauthdServiceServeFprintd() throws {
        let prefix = scratch + "/prefix/usr"
        try make("install", ["PREFIX": prefix, "FPRINTD": "yes"])
        let units = prefix + "/lib/systemd/system"
        let dropIn = units + "/localauthd.service.d/fprintd.conf"
        XCTAssertTrue(FileManager.default.fileExists(atPath: dropIn))

        // verify: the unit's search path is the installed one, so the drop-in is read.
        let search = ["SYSTEMD_UNIT_PATH": units + ":"]
        let verify = try runProgram("/usr/bin/systemd-analyze", ["verify", "--man=no", units + "/localauthd.service"],
                                    environment: search)
        XCTAssertEqual(verify.status, 0, verify.output)
        XCTAssertEqual(verify.output, "", "systemd-analyze verify, unit + drop-in")
        // ...and it did read it: a bad key there is reported.
        let good = try contents(dropIn)
        try (good + "NotASetting=1\n").write(toFile: dropIn, atomically: true, encoding: .utf8)
        let noticed = try runProgram("/usr/bin/systemd-analyze", ["verify", "--man=no", units + "/localauthd.service"],
                                     environment: search)
        XCTAssertTrue(noticed.output.contains("fprintd.conf") && noticed.output.contains("NotASetting"), noticed.output)
        try good.write(toFile: dropIn, atomically: true, encoding: .utf8)

        // cat-config: the files systemd reads for the unit, in its order, from a root laid out as on Debian.
        let root = scratch + "/root"
        try make("install", ["DESTDIR": root, "PREFIX": "/usr", "FPRINTD": "yes"])
        let config = try runProgram("/usr/bin/systemd-analyze", ["cat-config", "--no-pager", "--root=" + root,
                                                                 "systemd/system/localauthd.service"])
        XCTAssertEqual(config.status, 0, config.output)
        // Each file's text follows a "# <path>" line (comments inside the files start with "# " too).
        let headers = config.stdout.split(separator: "\n").filter { $0.hasPrefix("# " + root + "/") }.map(String.init)
        XCTAssertEqual(headers.count, 2, config.stdout)
        XCTAssertTrue(headers.first?.hasSuffix("/lib/systemd/system/localauthd.service") == true, "\(headers)")
        XCTAssertTrue(headers.last?.hasSuffix("/lib/systemd/system/localauthd.service.d/fprintd.conf") == true, "\(headers)")

        let merged = mergedServiceSettings(config.stdout)
        XCTAssertEqual(merged["ExecStart"], ["/usr/libexec/localauthd --fprintd"])
        XCTAssertEqual(merged["StateDirectory"], ["fprint localauth"], "fprintd's store first: $STATE_DIRECTORY's first entry")
        XCTAssertEqual(merged["ReadOnlyPaths"], [], "fprintd's store is written")
        XCTAssertEqual(merged["StateDirectoryMode"], ["0700"])
        XCTAssertEqual(merged["BusName"], ["org.example.LocalAuth"])
        XCTAssertEqual(merged["CapabilityBoundingSet"], ["CAP_SYS_PTRACE"])
        XCTAssertEqual(merged["ProtectSystem"], ["strict"])

        // The default unit alone is unchanged: no --fprintd, fprintd's store read-only.
        let plain = mergedServiceSettings(try contents(units + "/localauthd.service"))
        XCTAssertEqual(plain["ExecStart"], ["\(prefix)/libexec/localauthd"])
        XCTAssertEqual(plain["StateDirectory"], ["localauth"])
        XCTAssertEqual(plain["ReadOnlyPaths"], ["-/var/lib/fprint"])
    }

    /// localauth-fprintd's maintainer scripts are valid POSIX sh and call
    /// systemctl only for daemon-reload (lintian), as localauthd's do.
    func testReplacingPackagesMaintainerScriptsParse() throws {
        for script in ["localauth-fprintd.postinst", "localauth-fprintd.prerm", "localauth-fprintd.postrm"] {
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
}
