import DBusCore
import Foundation
@testable import LocalAuthService
@testable import LocalAuthRights
import LocalAuthShared
import XCTest

/// A rights component over a temporary state directory (software key
/// backend, the real RightStorage) with fake seams, and the calls the tests
/// make, shaped as the bus would deliver them.
@ServiceActor
final class RightsRig {
    static let uid: UInt32 = 4242
    static let sender = ":1.10"
    static let appID = "org.example.App"

    let directory: URL
    let authorizationSeconds: Double
    let evaluation: FakeRightsEvaluation
    let enrolledSets: FakeEnrolledSets
    let callerApps: FakeCallerApps
    let accounts: FakeAccounts
    let clock: FakeClock
    let rights: RightsService

    convenience init(authorizationSeconds: Double = RightsServiceLimits.authorizationSeconds) throws {
        let directory = Self.scratch.appendingPathComponent("rights-unit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: false,
            attributes: [.posixPermissions: 0o700])
        self.init(
            directory: directory, authorizationSeconds: authorizationSeconds, evaluation: FakeRightsEvaluation(),
            enrolledSets: FakeEnrolledSets(), callerApps: FakeCallerApps(), accounts: FakeAccounts(), clock: FakeClock())
    }

    private init(
        directory: URL, authorizationSeconds: Double, evaluation: FakeRightsEvaluation, enrolledSets: FakeEnrolledSets,
        callerApps: FakeCallerApps, accounts: FakeAccounts, clock: FakeClock
    ) {
        self.directory = directory
        self.authorizationSeconds = authorizationSeconds
        self.evaluation = evaluation
        self.enrolledSets = enrolledSets
        self.callerApps = callerApps
        self.accounts = accounts
        self.clock = clock
        rights = RightsService(
            stateDirectory: directory.path, keyBackend: .off, authorizationSeconds: authorizationSeconds,
            seams: RightsSeams(
                evaluation: evaluation, enrolledSets: enrolledSets, callerApps: callerApps,
                accounts: accounts, clock: clock))
    }

    /// Another component over the same directory and fakes: nothing cached (a restart).
    func reopened() throws -> RightsRig {
        RightsRig(
            directory: directory, authorizationSeconds: authorizationSeconds, evaluation: evaluation,
            enrolledSets: enrolledSets, callerApps: callerApps, accounts: accounts, clock: clock)
    }

    /// Memory-backed where the system has it (the bounds tests make a
    /// thousand files: milliseconds on tmpfs, most of a second on a disk).
    private static var scratch: URL {
        access("/dev/shm", W_OK | X_OK) == 0
            ? URL(fileURLWithPath: "/dev/shm") : FileManager.default.temporaryDirectory
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    // MARK: Calls

    func call(_ arguments: [DBusValue], sender: String = RightsRig.sender, uid: UInt32 = RightsRig.uid) -> BodyCall {
        BodyCall(
            call: Request(
                caller: CallerRecord(sender: sender, uid: uid, process: nil, securityLabel: nil),
                record: CallRecord(sender: sender, requestID: nil, errors: .localAuth)),
            arguments: arguments)
    }

    func app(_ id: String = RightsRig.appID, _ more: [String: DBusValue] = [:]) -> DBusValue {
        .dictionary(more.merging([LocalAuthRightsBus.Option.appID: .string(id)]) { mine, _ in mine })
    }

    @discardableResult
    func save(
        _ identifier: String, requirement: RightRequirementName = .default, secret: [UInt8]? = nil,
        app: String = RightsRig.appID, sender: String = RightsRig.sender, uid: UInt32 = RightsRig.uid
    ) async throws -> [UInt8] {
        let options = secret.map { [LocalAuthRightsBus.Option.secret: DBusValue.bytes($0)] } ?? [:]
        let reply = try await rights.saveRight(
            call(
                [.string(identifier), .string(requirement.rawValue), self.app(app, options)],
                sender: sender, uid: uid))
        return try XCTUnwrap(reply.first?.byteArray)
    }

    func authorize(
        _ identifier: String, reason: String = "use the right", options: [String: DBusValue] = [:],
        app: String = RightsRig.appID, sender: String = RightsRig.sender, uid: UInt32 = RightsRig.uid
    ) async throws -> String {
        let reply = try await rights.authorizeRight(
            call(
                [.string(identifier), .string(reason), self.app(app, options)],
                sender: sender, uid: uid))
        return try XCTUnwrap(reply.first?.string)
    }

    @discardableResult
    func loadSecret(_ handle: String, sender: String = RightsRig.sender, uid: UInt32 = RightsRig.uid) throws -> [UInt8] {
        let reply = try rights.loadSecret(call([.string(handle)], sender: sender, uid: uid))
        return try XCTUnwrap(reply.first?.byteArray)
    }

    func publicKey(_ identifier: String) async throws -> [UInt8] {
        let reply = try await rights.getPublicKey(call([.string(identifier), app()]))
        return try XCTUnwrap(reply.first?.byteArray)
    }

    /// The identifiers ListRights answers, in order.
    func list(sender: String = RightsRig.sender) async throws -> [String] {
        let reply = try await rights.listRights(call([app()], sender: sender))
        guard case .array(_, let entries)? = reply.first else {
            XCTFail("ListRights answered \(reply)")
            return []
        }
        return entries.compactMap { $0.stringKeyedDictionary?[LocalAuthRightsBus.RightKey.identifier]?.string }
    }

    /// Fails unless `body` throws the contract's error `name`.
    func expect(_ name: String, _ body: () async throws -> Void, file: StaticString = #filePath, line: UInt = #line) async {
        do {
            try await body()
            XCTFail("expected \(name); it succeeded", file: file, line: line)
        } catch let error as ServiceError {
            XCTAssertEqual(error.localAuthName, name, error.message, file: file, line: line)
        } catch {
            XCTFail("expected \(name); got \(error)", file: file, line: line)
        }
    }

    // MARK: The disk

    private var userDirectory: URL { directory.appendingPathComponent("rights/\(RightsRig.uid)") }

    /// Right files of the rig's uid in an app directory of their own, as the
    /// bounds count them (a name, a size): `count` files of `bytes` each (sparse).
    func plantFiles(app: String, count: Int, bytes: Int = 100) throws {
        let folder = userDirectory.appendingPathComponent(app)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let base = folder.path
        var failures = 0
        for index in 0..<count {
            let descriptor = open(base + "/planted-\(index).right", O_WRONLY | O_CREAT | O_EXCL, 0o600)
            if descriptor < 0 || ftruncate(descriptor, off_t(bytes)) != 0 { failures += 1 }
            if descriptor >= 0 { close(descriptor) }
        }
        XCTAssertEqual(failures, 0, "files planted")
    }

    /// Every entry under the uid's rights (apps and their files, two levels),
    /// with its size. POSIX, not FileManager: a thousand files in milliseconds.
    func filesOnDisk() -> [String: Int] {
        var files: [String: Int] = [:]
        func walk(_ relative: String, depth: Int) {
            let path = userDirectory.path + relative
            guard let directory = opendir(path) else { return }
            defer { closedir(directory) }
            while let entry = readdir(directory) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                guard name != ".", name != ".." else { continue }
                var info = stat()
                guard lstat(path + "/" + name, &info) == 0 else { continue }
                files[relative + "/" + name] = Int(info.st_size)
                if depth < 2, (info.st_mode & S_IFMT) == S_IFDIR { walk(relative + "/" + name, depth: depth + 1) }
            }
        }
        walk("", depth: 1)
        return files
    }

    /// A save past a bound: refused with `name`; no file appears or changes, nothing lists.
    func expectRefusedSave(_ name: String, file: StaticString = #filePath, line: UInt = #line) async throws {
        let before = filesOnDisk()
        await expect(name, { try await self.save("one-more", secret: [1]) }, file: file, line: line)
        // The account binding is recorded by the attempt (RightsAccount.swift): not a right.
        XCTAssertEqual(
            filesOnDisk().filter { $0.key != "/account" }, before.filter { $0.key != "/account" },
            "nothing changed on disk", file: file, line: line)
        let listed = try await list()
        XCTAssertEqual(listed, [], file: file, line: line)
    }

    /// Flips the last byte of a right's file: its sealed private key no longer opens.
    func damageLastByte(of identifier: String) throws {
        let owner = try RightOwner(uid: RightsRig.uid, appID: RightsRig.appID, identifier: identifier)
        let storage = try rights.state.storage()
        let path = try storage.path(of: owner)
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[bytes.count - 1] ^= 0xFF
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }
}
