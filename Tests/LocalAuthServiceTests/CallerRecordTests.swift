import Foundation
@testable import LocalAuthService
import XCTest

/// A caller's record pins its pid to one process (Callers/CallerRecord.swift):
/// the pid counts only while it names a process with the start time the
/// record saw; a reused pid is never taken for the caller.
final class CallerRecordTests: XCTestCase {
    override func setUp() {
        super.setUp()
        _ = ServiceLoop.running
    }

    func testThePidCountsOnlyWhileItNamesTheSameProcess() async throws { try await Self.checkPinnedPid() }

    @ServiceActor
    private static func checkPinnedPid() throws {
        let pid = UInt32(getpid())
        let started = try XCTUnwrap(ProcessFacts.startTime(pid: pid))
        let same = CallerRecord(sender: ":1.1", uid: 0, process: .init(pid: pid, pidfd: -1, startTime: started),
                                securityLabel: nil)
        XCTAssertEqual(same.livePID, pid)
        // The same pid with another start time: another process now has it.
        let reused = CallerRecord(sender: ":1.2", uid: 0, process: .init(pid: pid, pidfd: -1, startTime: started + 1),
                                  securityLabel: nil)
        XCTAssertNil(reused.livePID)
        let unknown = CallerRecord(sender: ":1.3", uid: 0, process: .init(pid: pid, pidfd: -1, startTime: nil),
                                   securityLabel: nil)
        XCTAssertNil(unknown.livePID, "no start time read: the pid is not trusted")
        XCTAssertNil(CallerRecord(sender: ":1.4", uid: 0, process: nil, securityLabel: nil).livePID)
    }

    /// Issue 30, item 10: the executable recorded when the record was made
    /// is compared with the one the process runs now; another file is an
    /// exec, remembered for good; nothing recorded, nothing compared.
    func testAnotherExecutableThanTheRecordedOneIsAnExecForGood() async throws { try await Self.checkExec() }

    @ServiceActor
    private static func checkExec() throws {
        let pid = UInt32(getpid())
        let started = try XCTUnwrap(ProcessFacts.startTime(pid: pid))
        let own = try XCTUnwrap(ProcessFacts.executableID(pid: pid))
        var process = CallerRecord.Process(pid: pid, pidfd: -1, startTime: started)
        process.executable = own
        XCTAssertFalse(CallerRecord(sender: ":1.1", uid: 0, process: process, securityLabel: nil).executableChanged())
        process.executable = ProcessFacts.FileID(device: own.device, inode: own.inode &+ 1)
        let execed = CallerRecord(sender: ":1.2", uid: 0, process: process, securityLabel: nil)
        XCTAssertTrue(execed.executableChanged())
        XCTAssertTrue(execed.execed)
        process.executable = nil
        XCTAssertFalse(CallerRecord(sender: ":1.3", uid: 0, process: process, securityLabel: nil).executableChanged())
    }

    func testTheIdentityNamesTheProvenProgramNeverADeclaredName() {
        let host = CallerIdentity(app: .host, executable: "/usr/bin/python3.11")
        XCTAssertEqual(host.program, "/usr/bin/python3.11")
        XCTAssertEqual(host.name, "python3.11")
        XCTAssertEqual(host.stateKey, "/usr/bin/python3.11")
        let sandboxed = CallerIdentity(app: .sandboxed("flatpak:org.example.Vault"), executable: "/app/bin/vault")
        XCTAssertEqual(sandboxed.program, "flatpak:org.example.Vault")
        XCTAssertEqual(sandboxed.name, "flatpak:org.example.Vault")
        // A forged scope is not the app: the program stays the executable.
        let forged = CallerIdentity(app: .unprovenSandbox("flatpak:org.example.Vault"), executable: "/usr/bin/gdbus")
        XCTAssertEqual(forged.program, "/usr/bin/gdbus")
        XCTAssertNil(CallerIdentity(app: .unreadable, executable: nil).name)
    }
}
