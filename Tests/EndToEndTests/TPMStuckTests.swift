import Foundation
import Glibc
import LocalAuthentication
import RigSupport
import XCTest

/// Issue 20 item 12: a TPM that stops answering (swtpm stopped with SIGSTOP
/// in the middle of the service's work) fails the caller with
/// TPMNotResponding within the time limit, while other callers are answered
/// and SIGTERM still stops the service. On d7b8519 the TPM command ran on the
/// service's loop: every caller, and SIGTERM, waited for the TPM.
final class TPMStuckTests: TPMRigTestCase, @unchecked Sendable {

    func testAStuckTPMFailsItsCallerWhileOthersAndSIGTERMGoOn() async throws {
        let tpm = try restartServiceOnATPM()
        try await enroll(as: "owner-finger")

        // The library: authorizing and signing on one connection (a handle is that connection's).
        let saved = try await LARightStore.shared.saveRight(LARight(requirement: .biometry), identifier: "tpm-signer")
        present("owner-finger")
        try await saved.authorize(localizedReason: "Sign the test")
        let before = try await saved.key.sign(Data("before".utf8), algorithm: .ecdsaSignatureMessageX962SHA256)
        XCTAssertFalse(before.isEmpty)
        XCTAssertTrue(service.log.contains("tpm2"), service.log)

        // The TPM stops answering in the middle of the next signature.
        XCTAssertEqual(kill(tpm.pid, SIGSTOP), 0)
        // A watchdog: a service that waits for the TPM on its loop (d7b8519)
        // would hang this suite; the TPM resumes after 30 s, long after the
        // 10 s limit, so the assertions below fail instead.
        let watchdog = Task.detached {
            try await Task.sleep(for: .seconds(30))
            kill(tpm.pid, SIGCONT)
        }
        defer { watchdog.cancel() }
        let started = Date()
        let stuck = Task { () -> String? in
            do {
                _ = try await saved.key.sign(Data("stuck".utf8), algorithm: .ecdsaSignatureMessageX962SHA256)
                return nil
            } catch let error as LAError {
                return error.dbusErrorName
            }
        }
        // The Sign is stuck once the service's TPM command lies unread in
        // the stopped swtpm's socket; then another caller is answered at once.
        try waitUntil("the service's TPM command waits in the stopped swtpm") { try self.unreadByTPM(tpm) > 0 }
        let other = Date()
        let environment = try gdbus("GetEnvironment", [])
        XCTAssertEqual(environment.status, 0, environment.output)
        XCTAssertLessThan(Date().timeIntervalSince(other), 3, "another caller waited for the TPM")

        let failed = try await stuck.value
        let waited = Date().timeIntervalSince(started)
        print("a Sign with the TPM stopped failed after \(String(format: "%.1f", waited)) s: \(failed ?? "no error")")
        XCTAssertEqual(failed, "org.example.LocalAuth.Error.TPMNotResponding")
        XCTAssertLessThan(waited, 20)
        // While that command is still stuck, the next TPM use fails at once.
        let again = Date()
        do {
            _ = try await saved.key.sign(Data("again".utf8), algorithm: .ecdsaSignatureMessageX962SHA256)
            XCTFail("signed with the TPM stopped")
        } catch let error as LAError {
            XCTAssertEqual(error.dbusErrorName, "org.example.LocalAuth.Error.TPMNotResponding")
        }
        XCTAssertLessThan(Date().timeIntervalSince(again), 3)
        XCTAssertTrue(service.log.contains("the TPM did not answer"), service.log)

        // SIGTERM still stops the service, the TPM still stopped.
        let stopping = Date()
        service.stop()
        XCTAssertFalse(service.isRunning, "SIGTERM did not stop the service with the TPM stuck")
        XCTAssertLessThan(Date().timeIntervalSince(stopping), 10)
    }

    /// Bytes sent to swtpm that it has not read: the receive queues of its
    /// ends of the connections to its command and control ports (`ss`; a
    /// connection not yet accepted counts too).
    private func unreadByTPM(_ tpm: Swtpm) throws -> Int {
        let filter = "( sport = :\(tpm.port) or sport = :\(tpm.port + 1) )"
        let listed = try runProgram("/usr/bin/ss", ["-Htn", "state", "established", filter])
        return listed.stdout.split(separator: "\n").reduce(0) { total, line in
            total + (Int(line.split(separator: " ", omittingEmptySubsequences: true).first ?? "") ?? 0)
        }
    }
}
