import Foundation
import Glibc
import RigSupport
import XCTest

/// A rig whose service keeps its rights' keys in a software TPM (swtpm)
/// started for the test and stopped after it.
class TPMRigTestCase: RigTestCase, @unchecked Sendable {
    private(set) var swtpm: Swtpm?
    private var swtpmState = ""

    override func tearDown() {
        if let swtpm {
            kill(swtpm.pid, SIGCONT)  // a test may have stopped it (SIGSTOP) to play a stuck TPM
            Spawn.terminate(swtpm.pid, grace: 2)
        }
        if !swtpmState.isEmpty { try? FileManager.default.removeItem(atPath: swtpmState) }
        super.tearDown()
    }

    /// Starts a swtpm and restarts the service on the same state directory with `--tpm` on it.
    @discardableResult
    func restartServiceOnATPM() throws -> Swtpm {
        swtpmState = rig.directory + "/swtpm-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: swtpmState, withIntermediateDirectories: true)
        let tpm = try Swtpm.start(stateDirectory: swtpmState)
        swtpm = tpm
        let state = service.stateDirectory
        service.stop()
        service = try ServiceProcess(bus: rig, stateDirectory: state, arguments: ["--tpm", tpm.tcti])
        return tpm
    }
}
