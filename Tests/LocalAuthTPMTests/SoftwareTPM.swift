import Foundation
import Glibc
import LocalAuthTPM
import RigSupport
import XCTest

/// A real software TPM 2.0 (Debian's swtpm) for one test: its own state
/// directory and two free TCP ports on 127.0.0.1 (commands, control), started
/// already initialised (not-need-init, startup-clear) and killed by pid.
/// A fresh state directory is a new TPM with new seeds: another machine's
/// TPM, or this one after TPM2_Clear, as far as our blobs are concerned.
final class SoftwareTPM {
    let stateDirectory: String
    private(set) var port: UInt16 = 0
    private(set) var pid: pid_t = 0
    private let ownsDirectory: Bool

    var tcti: String { "swtpm:host=127.0.0.1,port=\(port)" }
    /// A new device each time: the TCTI string changes when the TPM restarts on other ports.
    var device: TPMDevice { TPMDevice(tcti: tcti) }

    /// Starts a TPM over `stateDirectory` (kept), or over a fresh one (removed at the end).
    init(stateDirectory: String? = nil) throws {
        if let stateDirectory {
            self.stateDirectory = stateDirectory
            ownsDirectory = false
        } else {
            self.stateDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("swtpm-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: self.stateDirectory, withIntermediateDirectories: true)
            ownsDirectory = true
        }
        try start()
    }

    deinit {
        stop()
        if ownsDirectory { try? FileManager.default.removeItem(atPath: stateDirectory) }
    }

    func start() throws {
        let started = try Swtpm.start(stateDirectory: stateDirectory)
        (pid, port) = (started.pid, started.port)
    }

    /// Kills swtpm (SIGKILL: the TPM vanishes, as a pulled device) and reaps it.
    func kill() {
        guard pid > 0 else { return }
        Glibc.kill(pid, SIGKILL)
        _ = Spawn.wait(pid, timeout: 5)
        pid = 0
    }

    func stop() {
        guard pid > 0 else { return }
        Spawn.terminate(pid, grace: 2)
        pid = 0
    }
}

/// Asserts that `body` throws a TPMError of `kind`.
func XCTAssertTPMError(_ body: @autoclosure () throws -> some Any, _ kind: TPMError.Kind, file: StaticString = #filePath, line: UInt = #line) {
    do {
        _ = try body()
        XCTFail("did not throw; expected \(kind)", file: file, line: line)
    } catch let error as TPMError {
        XCTAssertEqual(error.code, kind, "\(error)", file: file, line: line)
    } catch {
        XCTFail("threw \(error); expected \(kind)", file: file, line: line)
    }
}
