import Foundation
import Glibc
import LocalAuthentication
import RigSupport
import XCTest

/// The print store: damaged and foreign files, crashes in the middle of an
/// enrollment, and the domain state that follows the enrolled set.
final class StoreTests: RigTestCase, @unchecked Sendable {
    override func setUpWithError() throws {
        try super.setUpWithError()
        try rig.polkit("org.example.LocalAuth.manage", nil)
    }

    /// Writes a print file the way the service does (header + print), with
    /// whatever header values a test wants.
    private func writePrintFile(_ path: String, id: String = String(repeating: "ab", count: 16), uid: UInt32 = 0,
                                finger: String, driver: String, deviceID: String = "0", body: [UInt8]) throws {
        let bodyPath = NSTemporaryDirectory() + "body-\(UUID().uuidString)"
        try Data(body).write(to: URL(fileURLWithPath: bodyPath))
        defer { unlink(bodyPath) }
        let sum = try runProgram("/usr/bin/sha256sum", [bodyPath]).stdout.prefix(64)
        let header = "LOCALAUTH-PRINT 1\nid \(id)\nuid \(uid)\nfinger \(finger)\ndriver \(driver)\ndevice-id \(deviceID)\n"
            + "created 1764474000\nsize \(body.count)\nsha256 \(sum)\n\n"
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        try Data(Array(header.utf8) + body).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
    }

    /// The print bytes of one of our files.
    private func body(of path: String) throws -> [UInt8] {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let marker: [UInt8] = [0x0a, 0x0a]
        for index in 0..<(bytes.count - 1) where Array(bytes[index...index + 1]) == marker {
            return Array(bytes[(index + 2)...])
        }
        throw RigError("no header end in \(path)")
    }

    func testDamagedAndForeignFilesAreSkippedAndLoggedWhileTheOthersWork() async throws {
        try await enroll("right-index-finger", as: "good-finger", user: nil)
        try await enroll("right-thumb", as: "thumb", user: nil)
        let good = printPath("right-index-finger")
        let goodBytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: good)))
        let directory = (good as NSString).deletingLastPathComponent

        // Fingers that come before right-index-finger in libfprint's order: if
        // any of them were offered, the reader would be asked to match it first.
        var bad: [String: String] = [:]   // path -> what the log must say
        bad[directory + "/left-thumb"] = "is corrupt"
        try Data("not a print at all".utf8).write(to: URL(fileURLWithPath: directory + "/left-thumb"))
        bad[directory + "/left-index-finger"] = "is corrupt"   // torn: half of a good file
        try Data(goodBytes.prefix(goodBytes.count / 2)).write(to: URL(fileURLWithPath: directory + "/left-index-finger"))
        var flipped = goodBytes
        flipped[flipped.count - 3] ^= 0x01
        bad[directory + "/left-middle-finger"] = "checksum mismatch"
        try Data(flipped).write(to: URL(fileURLWithPath: directory + "/left-middle-finger"))
        bad[directory + "/left-ring-finger"] = "is foreign"    // right-index-finger's file under another name
        try Data(goodBytes).write(to: URL(fileURLWithPath: directory + "/left-ring-finger"))
        bad[directory + "/left-little-finger"] = "symbolic link"
        symlink(good, directory + "/left-little-finger")
        bad[directory + "/right-thumb"] = "writable by group or others"
        chmod(directory + "/right-thumb", 0o666)
        // root's print copied into nobody's directory.
        let foreign = printPath("right-index-finger", uid: Self.nobody)
        try FileManager.default.createDirectory(atPath: (foreign as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        try Data(goodBytes).write(to: URL(fileURLWithPath: foreign))
        chmod(foreign, 0o600)
        bad[foreign] = "belongs to uid 0, not 65534"
        for path in bad.keys where !path.hasSuffix("left-little-finger") { chmod(path, path.hasSuffix("right-thumb") ? 0o666 : 0o600) }

        // A valid print made on another reader (same bytes, another driver id
        // of the same length, so the serialized print stays well formed).
        let otherBody = try body(of: good)
        var otherReader = otherBody
        let needle = Array("virtual_device\0".utf8)
        for index in 0...(otherReader.count - needle.count) where Array(otherReader[index..<index + needle.count]) == needle {
            otherReader[index + needle.count - 2] = UInt8(ascii: "f")
        }
        XCTAssertNotEqual(otherReader, otherBody, "the driver id should be in the print")
        let otherPath = printPath("right-index-finger", reader: "virtual_devicf/0")
        try writePrintFile(otherPath, finger: "right-index-finger", driver: "virtual_devicf", body: otherReader)
        // What an interrupted write leaves: never a print, removed at start.
        let stale = directory + "/right-index-finger.tmp-99999"
        try Data(goodBytes.prefix(10)).write(to: URL(fileURLWithPath: stale))

        let state = service.stateDirectory
        service.stop()
        service = try ServiceProcess(bus: rig, stateDirectory: state)
        XCTAssertFalse(FileManager.default.fileExists(atPath: stale), "the stale temporary file should be gone")

        for _ in 0..<3 {
            let fingers = try await LAFingerprints.enrolledFingers()
            XCTAssertEqual(fingers, ["right-index-finger"])
        }
        let all = try await LAFingerprints.enrolledPrints()
        XCTAssertEqual(all.map { "\($0.finger) \($0.reader) \($0.inUse)" }.sorted(),
                       ["right-index-finger virtual_device/0 true", "right-index-finger virtual_devicf/0 false"])
        let nobodys = try await LAFingerprints.enrolledPrints(user: "nobody")
        XCTAssertEqual(nobodys, [])

        // Each bad file is named in the log, once, with what is wrong with it.
        let log = service.log
        for (path, problem) in bad {
            let lines = log.split(separator: "\n").filter { $0.contains("print file \(path) ") }
            XCTAssertEqual(lines.count, 1, "\(path): \(lines)")
            XCTAssertTrue(lines.first?.contains(problem) == true, "\(path): \(lines)")
            XCTAssertTrue(lines.first?.hasPrefix("<3>") == true, "logged as an error: \(lines)")
        }
        XCTAssertTrue(log.contains("removed \(stale)"), log)

        // The good print still matches.
        present("good-finger")
        let result = await evaluate()
        XCTAssertTrue(result.succeeded, "\(result)")
    }

    func testDomainStateChangesExactlyWhenTheEnrolledSetChanges() async throws {
        let empty = try domainState()
        XCTAssertTrue(empty.hasPrefix("ay 32 "), empty)
        XCTAssertEqual(try domainState(), empty, "stable while nothing changes")

        try await enroll("right-index-finger", as: "index", user: nil)
        let one = try domainState()
        XCTAssertNotEqual(one, empty, "a print was added")
        XCTAssertEqual(try domainState(), one)

        // Nothing that leaves the set as it is changes it: a refused
        // enrollment, an evaluation, another user's prints, a restart.
        _ = try gdbus("Enroll", ["right-index-finger"])
        present("index")
        _ = await evaluate()
        try await enroll("left-thumb", as: "nobodys", user: "nobody")
        XCTAssertEqual(try domainState(), one)
        let state = service.stateDirectory
        service.stop()
        service = try ServiceProcess(bus: rig, stateDirectory: state)
        XCTAssertEqual(try domainState(), one, "the same across a restart")

        // Replacing a finger changes it, even with the very same finger.
        try await enroll("right-index-finger", as: "index", user: nil, replace: true)
        let replaced = try domainState()
        XCTAssertNotEqual(replaced, one, "a print was replaced")

        try await enroll("left-thumb", as: "thumb", user: nil)
        let two = try domainState()
        XCTAssertNotEqual(two, replaced, "a print was added")
        try await LAFingerprints.delete("left-thumb")
        let removed = try domainState()
        XCTAssertNotEqual(removed, two, "a print was removed")
        XCTAssertEqual(removed, replaced, "the same set as before the thumb was added")
        try await LAFingerprints.deleteAll()
        XCTAssertEqual(try domainState(), empty, "the empty set again")
    }

    /// `kill -9` of localauthd at random moments of enrollments that replace
    /// an existing print, again and again: after every restart every print file
    /// loads, and a finger that was enrolled is still enrolled (old or new print).
    func testKill9DuringEnrollmentNeverLeavesABrokenPrint() async throws {
        let iterations = 30
        let state = service.stateDirectory
        let fingers = ["left-index-finger", "right-thumb", "right-index-finger"]
        let directory = state + "/prints/0/virtual_device/0"
        var scanOf: [String: String] = [:]         // print id -> the SCAN id it was enrolled with
        var kept = 0, replaced = 0, firstNotWritten = 0, firstWritten = 0, finishedBeforeKill = 0
        var delays: [Int] = [], endDelays: [Int] = []
        var killedMidWrite = 0, broken = 0
        var pending: (finger: String, before: String?, scan: String, succeeded: Bool)?

        for iteration in 0...iterations {
            if iteration > 0 { service = try ServiceProcess(bus: rig, stateDirectory: state) }
            // Every file the store holds loads: the service lists each of them.
            let onDisk = fingerFiles(in: directory)
            let listed = try await LAFingerprints.enrolledPrints()
            XCTAssertEqual(listed.map(\.finger).sorted(), onDisk, "iteration \(iteration)")
            if listed.map(\.finger).sorted() != onDisk { broken += 1 }
            for line in service.log.split(separator: "\n") where line.contains("print file") {
                XCTFail("iteration \(iteration): \(line)")
                broken += 1
            }
            // The finger being enrolled when the service died has its old print or the new one.
            if let (finger, before, scan, succeeded) = pending {
                let after = printID("\(directory)/\(finger)")
                // A success reply means the print was stored.
                if succeeded { XCTAssertTrue(after != nil && after != before, "iteration \(iteration): reported enrolled, not stored") }
                switch (before, after) {
                case (let old?, let new?) where old == new: kept += 1
                case (_?, let new?): replaced += 1; scanOf[new] = scan
                case (nil, nil): firstNotWritten += 1
                case (nil, let new?): firstWritten += 1; scanOf[new] = scan
                case (_?, nil): XCTFail("iteration \(iteration): \(finger) lost its print")
                }
            }
            guard iteration < iterations else { break }

            // An enrollment (replacing, once the finger has a print) and a kill at a random moment.
            let finger = fingers[iteration % fingers.count]
            let scan = "k9-\(iteration)"
            let before = printID("\(directory)/\(finger)")
            let client = try Child(Paths.localauthctl, ["enroll", finger, "--replace"],
                                   environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address],
                                   stdoutPath: "/dev/null", stderrPath: "/dev/null")
            let killed = Flag()
            let victim = service!
            // Even rounds: a kill anywhere in the enrollment (0–220 ms after it
            // starts). Odd rounds: 0–4 ms after the driver took the last scan,
            // when the service is writing the print.
            let atTheEnd = iteration % 2 == 1
            let endDelay = Int.random(in: 0...4000)
            let feeder = Task.detached {
                for index in 0..<5 where !killed.isSet {
                    // The reader opens only once the enrollment holds it
                    // (issue 22): the first scan waits for it to listen.
                    try? ServiceProcess.send("SCAN \(scan)", to: victim.sensorSocket, retryFor: index == 0 ? 2 : 0)
                    if atTheEnd && index == 4 {
                        usleep(UInt32(endDelay))
                        killed.set()
                        victim.kill9()
                        return
                    }
                    try? await Task.sleep(for: .milliseconds(25))
                }
            }
            if atTheEnd {
                await feeder.value
                endDelays.append(endDelay)
            } else {
                let delay = Int.random(in: 0...220)
                delays.append(delay)
                try await Task.sleep(for: .milliseconds(delay))
                killed.set()
                victim.kill9()
                await feeder.value
            }
            let succeeded = client.wait(timeout: 10) == 0
            if succeeded { finishedBeforeKill += 1 }
            pending = (finger, before, scan, succeeded)
            // A temporary file means the kill came in the middle of a write.
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
            if names.contains(where: { $0.contains(".tmp-") }) { killedMidWrite += 1 }
        }
        let idOnDisk = Dictionary(uniqueKeysWithValues: fingerFiles(in: directory).map { ($0, printID("\(directory)/\($0)")!) })

        // Finally, a print left by the crashes is used by an evaluation.
        let first = try XCTUnwrap(fingerFiles(in: directory).sorted {
            LAFingerprints.fingerNames.firstIndex(of: $0)! < LAFingerprints.fingerNames.firstIndex(of: $1)!
        }.first)
        let scanID = try XCTUnwrap(scanOf[idOnDisk[first]!])
        present(scanID)
        let result = await evaluate()
        XCTAssertTrue(result.succeeded, "\(first) enrolled as \(scanID): \(result)")

        print("kill -9 loop: \(iterations) kills (\(delays.count) at 0–220 ms into the enrollment, \(endDelays.count) at 0–4 ms "
              + "after the last scan); mid-write (temporary file left) \(killedMidWrite); replacing: old print kept \(kept), "
              + "new print written \(replaced); first enrollment: not written \(firstNotWritten), written \(firstWritten); "
              + "client saw success \(finishedBeforeKill); broken or missing prints after restarts: \(broken)")
        XCTAssertEqual(kept + replaced + firstNotWritten + firstWritten, iterations)
    }
}
