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

    static let program = "/usr/bin/swtpm"

    func start() throws {
        guard FileManager.default.isExecutableFile(atPath: Self.program) else {
            // A failure, not a skip: CI must run these (scripts/install-deps.sh installs swtpm).
            throw NSError(domain: "SoftwareTPM", code: 3, userInfo: [NSLocalizedDescriptionKey: "\(Self.program) is not installed; run scripts/install-deps.sh"])
        }
        for _ in 0..<5 {
            port = try Self.freePortPair()
            let log = stateDirectory + "/swtpm.log"
            pid = try Spawn.start(Self.program, [
                "socket", "--tpm2", "--tpmstate", "dir=\(stateDirectory)",
                "--server", "type=tcp,port=\(port),bindaddr=127.0.0.1",
                "--ctrl", "type=tcp,port=\(port + 1),bindaddr=127.0.0.1",
                "--flags", "not-need-init,startup-clear",
            ], stdoutPath: log, stderrPath: log)
            // Ready when the control port accepts; a lost port race makes swtpm exit.
            for _ in 0..<250 {
                if Spawn.wait(pid, timeout: 0) != nil { break }
                if Self.accepts(port: port + 1) { return }
                usleep(20_000)
            }
            stop()
        }
        throw NSError(domain: "SoftwareTPM", code: 1, userInfo: [NSLocalizedDescriptionKey: "swtpm did not start; see \(stateDirectory)/swtpm.log"])
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

    /// A port P with P and P + 1 free now (the kernel picks P; P + 1 is checked).
    static func freePortPair() throws -> UInt16 {
        for _ in 0..<50 {
            guard let port = bind(port: 0), port < 65000, bind(port: port + 1) != nil else { continue }
            return port
        }
        throw NSError(domain: "SoftwareTPM", code: 2, userInfo: [NSLocalizedDescriptionKey: "no free port pair"])
    }

    /// Binds a TCP socket on 127.0.0.1 and closes it; the bound port, or nil.
    private static func bind(port: UInt16) -> UInt16? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        return bound ? UInt16(bigEndian: address.sin_port) : nil
    }

    private static func accepts(port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}

/// Asserts that `body` throws a TPMError of `kind`.
func XCTAssertTPMError(_ body: @autoclosure () throws -> some Any, _ kind: TPMError.Kind, file: StaticString = #filePath, line: UInt = #line) {
    do {
        _ = try body()
        XCTFail("did not throw; expected \(kind)", file: file, line: line)
    } catch let error as TPMError {
        XCTAssertEqual(error.kind, kind, "\(error)", file: file, line: line)
    } catch {
        XCTFail("threw \(error); expected \(kind)", file: file, line: line)
    }
}

/// Runs a command; its exit status and output.
func runTool(_ program: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: program)
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
}
