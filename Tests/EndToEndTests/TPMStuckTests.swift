import Foundation
import Glibc
import RigSupport
import XCTest

/// Issue 20 item 12: a TPM that stops answering (swtpm stopped with SIGSTOP
/// in the middle of the service's work) fails the caller with
/// TPMNotResponding within the time limit, while other callers are answered
/// and SIGTERM still stops the service. On d7b8519 the TPM command ran on the
/// service's loop: every caller, and SIGTERM, waited for the TPM.
final class TPMStuckTests: RigTestCase, @unchecked Sendable {
    private var swtpm: Swtpm?
    private var swtpmState = ""

    override func tearDown() {
        if let swtpm {
            kill(swtpm.pid, SIGCONT)
            Spawn.terminate(swtpm.pid, grace: 2)
        }
        if !swtpmState.isEmpty { try? FileManager.default.removeItem(atPath: swtpmState) }
        super.tearDown()
    }

    private func handle(_ outcome: Outcome) -> String? {
        guard let open = outcome.stdout.firstIndex(of: "'") else { return nil }
        let rest = outcome.stdout[outcome.stdout.index(after: open)...]
        return rest.firstIndex(of: "'").map { String(rest[..<$0]) }
    }

    func testAStuckTPMFailsItsCallerWhileOthersAndSIGTERMGoOn() async throws {
        swtpmState = rig.directory + "/swtpm-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: swtpmState, withIntermediateDirectories: true)
        let tpm = try Swtpm.start(stateDirectory: swtpmState)
        swtpm = tpm
        let state = service.stateDirectory
        service.stop()
        service = try ServiceProcess(bus: rig, stateDirectory: state, arguments: ["--tpm", tpm.tcti])
        try await enroll(as: "owner-finger")

        let options = "{'app-id': <'org.example.TPMStuck'>}"
        let saved = try gdbus("SaveRight", ["signer", "biometry", options])
        XCTAssertEqual(saved.status, 0, saved.output + service.log)
        present("owner-finger", after: 0.5)
        let authorized = try gdbus("AuthorizeRight", ["signer", "Sign the test", options])
        let token = try XCTUnwrap(handle(authorized), authorized.output)
        let signed = try gdbus("Sign", [token, "algid:sign:ECDSA:message-X962:SHA256", "b'before'"])
        XCTAssertEqual(signed.status, 0, signed.output)

        // The TPM stops answering in the middle of the next signature.
        XCTAssertEqual(kill(tpm.pid, SIGSTOP), 0)
        let started = Date()
        let stuck = Task.detached { [self] in try gdbus("Sign", [token, "algid:sign:ECDSA:message-X962:SHA256", "b'stuck'"]) }
        try await Task.sleep(for: .milliseconds(500))
        // Another caller is answered at once, meanwhile.
        let other = Date()
        let environment = try gdbus("GetEnvironment", [])
        XCTAssertEqual(environment.status, 0, environment.output)
        XCTAssertLessThan(Date().timeIntervalSince(other), 3, "another caller waited for the TPM")

        let failed = try await stuck.value
        let waited = Date().timeIntervalSince(started)
        print("a Sign with the TPM stopped failed after \(String(format: "%.1f", waited)) s: \(failed.output)")
        XCTAssertEqual(errorName(failed), "org.example.LocalAuth.Error.TPMNotResponding", failed.output)
        XCTAssertLessThan(waited, 20)
        // While that command is still stuck, the next TPM use fails at once.
        let again = Date()
        let refused = try gdbus("Sign", [token, "algid:sign:ECDSA:message-X962:SHA256", "b'again'"])
        XCTAssertEqual(errorName(refused), "org.example.LocalAuth.Error.TPMNotResponding", refused.output)
        XCTAssertLessThan(Date().timeIntervalSince(again), 3)
        XCTAssertTrue(service.log.contains("the TPM did not answer"), service.log)

        // SIGTERM still stops the service, the TPM still stopped.
        let stopping = Date()
        service.stop()
        XCTAssertFalse(service.isRunning, "SIGTERM did not stop the service with the TPM stuck")
        XCTAssertLessThan(Date().timeIntervalSince(stopping), 10)
    }
}
