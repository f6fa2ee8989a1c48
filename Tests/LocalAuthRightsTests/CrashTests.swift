import Foundation
import Glibc
import LocalAuthCrypto
@testable import LocalAuthRights
import XCTest

/// kill -9 in the middle of saving leaves the old right or the new one,
/// never a damaged file: a child process (this test binary, running the
/// writer below) saves two versions of one right in a loop and is killed at
/// a random moment, five times over.
final class CrashTests: XCTestCase {
    static let writerVariable = "LOCALAUTH_RIGHTS_CRASH_WRITER"

    func testKillDuringSaveLeavesTheOldOrTheNewRight() throws {
        let state = try StateDirectory()
        let storage = RightStorage(stateDirectory: state.path, protector: try SoftwareKeyProtector(stateDirectory: state.path))
        try storage.save(RightRecord.create(owner: owner(), requirement: .default, secret: [0], created: 0, protector: storage.protector))
        let started = state.path + "/writer-started"

        for round in 0..<5 {
            unlink(started)
            let child = Process()
            child.executableURL = URL(fileURLWithPath: ProcessInfo.processInfo.arguments[0])
            child.arguments = ["LocalAuthRightsTests.CrashTests/testWriterLoop"]
            child.environment = ProcessInfo.processInfo.environment.merging([Self.writerVariable: state.path]) { $1 }
            child.standardOutput = FileHandle.nullDevice
            child.standardError = FileHandle.nullDevice
            try child.run()
            let deadline = Date().addingTimeInterval(30)
            while access(started, F_OK) != 0, Date() < deadline, child.isRunning { usleep(5_000) }
            XCTAssertEqual(access(started, F_OK), 0, "round \(round): the writer never started")
            usleep(UInt32.random(in: 1_000...60_000))
            kill(child.processIdentifier, SIGKILL)
            child.waitUntilExit()
            XCTAssertEqual(child.terminationReason, .uncaughtSignal, "round \(round)")

            let record = try storage.load(owner())
            XCTAssertTrue([[0], [1], [2]].contains(try record.secret(using: storage.protector) ?? []), "round \(round)")
            XCTAssertTrue(try storage.list(uid: 1000, appID: "org.example.Notes").damaged.isEmpty, "round \(round)")
        }
    }

    /// The child's side: does nothing unless started by the test above.
    func testWriterLoop() throws {
        guard let directory = ProcessInfo.processInfo.environment[Self.writerVariable] else { return }
        let storage = RightStorage(stateDirectory: directory, protector: try SoftwareKeyProtector(stateDirectory: directory))
        let versions = try [1, 2].map { (secret: UInt8) in
            try RightRecord.create(owner: owner(), requirement: .biometry, secret: [secret], created: Int64(secret), protector: storage.protector)
        }
        try storage.save(versions[0])
        _ = FileManager.default.createFile(atPath: directory + "/writer-started", contents: nil)
        var index = 0
        while true {
            index += 1
            try storage.save(versions[index % 2])
        }
    }
}
