import DBusCore
import Foundation
import Glibc
import LocalAuthShared
import RigSupport

// The work the curves grow (CurveRuns.swift measures at each amount): other
// users' prints written into the store, more prints of the caller, helper
// processes of other uids holding EnvironmentChanged subscriptions, rights.

extension Bench {
    // MARK: Users with prints

    /// The caller's (root's) enrolled print file, as the store wrote it:
    /// its path under prints/0 and its bytes.
    func rootPrint() throws -> (relative: String, bytes: Data) {
        let base = oursState + "/prints/0"
        guard let walker = FileManager.default.enumerator(atPath: base) else { throw BenchError("no \(base)") }
        while let relative = walker.nextObject() as? String {
            var isDirectory: ObjCBool = false
            let path = base + "/" + relative
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue,
                !relative.contains(".tmp-"), let bytes = FileManager.default.contents(atPath: path)
            else { continue }
            return (relative, bytes)
        }
        throw BenchError("no print file under \(base)")
    }

    /// Writes the print of fake uid `uid` into the store, in the store's own
    /// format (docs/STORE.md): root's print file with its `uid` line changed
    /// (the checksum covers only the libfprint part). Directories 0700,
    /// file 0600, owned by root, as the service writes them.
    func writeFakePrint(uid: UInt32, template: (relative: String, bytes: Data)) throws {
        guard let split = template.bytes.firstRange(of: Data("\n\n".utf8)) else { throw BenchError("print file has no header") }
        let headerText = String(decoding: template.bytes[..<split.lowerBound], as: UTF8.self)
        let lines = headerText.split(separator: "\n").map { $0.hasPrefix("uid ") ? "uid \(uid)" : String($0) }
        var bytes = Data(lines.joined(separator: "\n").utf8)
        bytes.append(template.bytes[split.lowerBound...])
        let path = oursState + "/prints/\(uid)/" + template.relative
        let folder = (path as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(
            atPath: folder, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        guard FileManager.default.createFile(atPath: path, contents: bytes, attributes: [.posixPermissions: 0o600]) else {
            throw BenchError("cannot write \(path)")
        }
    }

    /// Fake uids for other users' prints: far above any account here.
    static func fakeUID(_ index: Int) -> UInt32 { 100_000 + UInt32(index) }

    func removeFakePrints(count: Int) {
        for index in 0..<count { try? FileManager.default.removeItem(atPath: oursState + "/prints/\(Self.fakeUID(index))") }
    }

    // MARK: Prints per user

    /// fprintd's finger names; root has right-index-finger from the table's enrollment.
    static let otherFingers = [
        "left-thumb", "left-index-finger", "left-middle-finger", "left-ring-finger",
        "left-little-finger", "right-thumb", "right-middle-finger", "right-ring-finger",
        "right-little-finger",
    ]

    static func scanID(of finger: String) -> String { finger == benchFinger ? benchScanID : "localauth-bench-\(finger)" }

    /// Enroll(finger) as the bench's root connection, with the virtual print
    /// `scanID(of: finger)`: exactly the driver's 5 stages of scans (an extra
    /// one would wait in the virtual device and be taken by the next scan).
    func enroll(_ bus: BusConnection, finger: String) async throws {
        async let reply = bus.call(
            destination: OurService.name, path: OurService.path, interface: OurService.interface,
            member: LocalAuthBus.Method.enroll, arguments: [.string(finger)], timeout: 30)
        for _ in 0..<5 {
            try await Task.sleep(for: .milliseconds(30))
            try oursSensor.send("SCAN \(Self.scanID(of: finger))", acknowledged: true)
        }
        _ = try await reply
    }

    // MARK: LAEnvironment subscribers

    /// Accounts of this machine other than root, whose uids subscribe (the
    /// service allows 16 subscribed connections per uid): real accounts, so
    /// that the service's per-subscriber work (the account's name, its
    /// /etc/shadow line) is what a desktop's would be. Fake uids fill up if
    /// the machine has too few.
    func subscriberAccounts(_ count: Int) -> (accounts: [(uid: UInt32, gid: UInt32)], fake: Int) {
        var accounts: [(uid: UInt32, gid: UInt32)] = []
        setpwent()
        while accounts.count < count, let entry = getpwent() {
            let uid = entry.pointee.pw_uid
            guard uid != 0, !accounts.contains(where: { $0.uid == uid }) else { continue }
            accounts.append((uid, entry.pointee.pw_gid))
        }
        endpwent()
        var fake = 0
        while accounts.count < count {
            accounts.append((Self.fakeUID(50_000 + fake), Self.fakeUID(50_000 + fake)))
            fake += 1
        }
        return (accounts, fake)
    }

    /// `perUID` subscribed connections in one helper process (this program,
    /// `--subscribe-helper`) running as `account` with setpriv; returns once
    /// the helper says every subscription was answered.
    func startSubscribers(_ account: (uid: UInt32, gid: UInt32), perUID: Int, index: Int) async throws -> Child {
        let logPath = directory + "/subscribers-\(index).log"
        let child = try Child(
            "/usr/bin/setpriv",
            [
                "--reuid=\(account.uid)", "--regid=\(account.gid)", "--clear-groups",
                Locations.executableDirectory + "/localauth-bench", "--subscribe-helper", String(perUID),
            ],
            environment: ["DBUS_SYSTEM_BUS_ADDRESS": busAddress], logPath: logPath)
        let deadline = Clock.nanoseconds() + 60_000_000_000
        while true {
            let text = readText(logPath)
            if text.contains("subscribed \(perUID)") { return child }
            if text.contains("failed") || Spawn.wait(child.pid, timeout: 0) != nil || Clock.nanoseconds() > deadline {
                child.stop()
                throw BenchError("subscriber helper (uid \(account.uid)) did not subscribe: \(text)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    // MARK: Rights

    /// The rights curve's app ids: the service keeps at most 256 rights per
    /// app and 1,024 per user, so 1,000 rights are 4 apps of 250.
    static func curveApp(_ index: Int) -> String { "org.example.LocalAuthBench.Curve\(index)" }
    static let rightsPerApp = 250
    static func rightIdentifier(_ index: Int) -> String { String(format: "right-%04d", index) }

    func saveCurveRight(_ bus: BusConnection, number: Int) async throws {
        let options: DBusValue = .dictionary([
            LocalAuthRightsBus.Option.appID: .string(Self.curveApp(number / Self.rightsPerApp)),
            LocalAuthRightsBus.Option.secret: .bytes(Array(repeating: UInt8(number & 0xff), count: 32)),
        ])
        _ = try await bus.call(
            destination: OurService.name, path: OurService.path, interface: OurService.interface,
            member: LocalAuthRightsBus.Method.saveRight,
            arguments: [
                .string(Self.rightIdentifier(number % Self.rightsPerApp)),
                .string(RightRequirementName.biometry.rawValue), options,
            ],
            timeout: callTimeout)
    }

    func removeAllRights(_ bus: BusConnection, app: String) async throws {
        _ = try await bus.call(
            destination: OurService.name, path: OurService.path, interface: OurService.interface,
            member: LocalAuthRightsBus.Method.removeAllRights,
            arguments: [.dictionary([LocalAuthRightsBus.Option.appID: .string(app)])],
            timeout: callTimeout)
    }
}

/// `localauth-bench --subscribe-helper N` (started by the bench as another
/// uid): N connections each SubscribeEnvironment, "subscribed N" on stdout,
/// then held until the bench stops this process (at most 30 minutes).
func subscribeHelper(count: Int) async -> Int32 {
    func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
    guard let address = ProcessInfo.processInfo.environment["DBUS_SYSTEM_BUS_ADDRESS"] else {
        say("failed: no DBUS_SYSTEM_BUS_ADDRESS")
        return 2
    }
    let loop = EventLoop.startThread(name: "subscribers")
    var connections: [BusConnection] = []
    do {
        for _ in 0..<count {
            let bus = try BusConnection.connect(to: .address(address), loop: loop)
            connections.append(bus)
            _ = try await bus.call(
                destination: OurService.name, path: OurService.path, interface: OurService.interface,
                member: LocalAuthBus.Method.subscribeEnvironment, timeout: callTimeout)
        }
    } catch {
        say("failed: uid \(getuid()): \(error)")
        return 1
    }
    say("subscribed \(count)")
    try? await Task.sleep(for: .seconds(1800))
    withExtendedLifetime(connections) {}
    return 0
}
