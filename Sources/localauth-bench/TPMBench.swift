import Foundation
import Glibc
import LocalAuthCrypto
import LocalAuthTPM
import RigSupport

/// The TPM row (docs/TPM.md): one ECDSA P-256 signature by a TPM right's key,
/// the whole operation the service does (connect, create the primary, load,
/// sign, flush), against one by a software key in the process. The TPM is
/// /dev/tpmrm0 when there is one, else a swtpm started here (a software TPM:
/// a hardware TPM is slower, its primary key creation above all).
enum TPMBench {
    static let signatures = 100

    /// The row, and a note saying which TPM; nil and why when there is none.
    static func measure(directory: String) -> (row: Row?, note: String) {
        let tcti: String
        var swtpm: pid_t = 0
        if access(TPMDevice.kernelResourceManager, F_OK) == 0 {
            tcti = TPMDevice.kernelResourceManagerTCTI
        } else if FileManager.default.isExecutableFile(atPath: "/usr/bin/swtpm") {
            guard let (pid, port) = startSwtpm(directory: directory) else { return (nil, "TPM sign: swtpm did not start") }
            swtpm = pid
            tcti = "swtpm:host=127.0.0.1,port=\(port)"
        } else {
            return (nil, "TPM sign: no /dev/tpmrm0 and no swtpm")
        }
        defer { if swtpm > 0 { Spawn.terminate(swtpm, grace: 2) } }
        do {
            let device = TPMDevice(tcti: tcti)
            let auth = try SecureRandom.bytes(32)
            let (blob, _) = try device.createP256Key(authValue: auth)
            let software = try P256.PrivateKey()
            let message = Array("localauth-bench".utf8)
            var inTPM: [UInt64] = [], inSoftware: [UInt64] = []
            for _ in 0..<signatures {
                var start = Clock.nanoseconds()
                _ = try device.signature(for: message, key: blob, authValue: auth)
                inTPM.append(Clock.nanoseconds() - start)
                start = Clock.nanoseconds()
                _ = try software.signature(for: message)
                inSoftware.append(Clock.nanoseconds() - start)
            }
            let tpm = Summary(nanoseconds: inTPM), soft = Summary(nanoseconds: inSoftware)
            let row = Row(id: "tpm-sign-median", label: "TPM sign vs software sign, median", unit: "ms",
                          ours: tpm.median / 1000, baseline: soft.median / 1000, baselineName: "(software key)",
                          ratio: soft.median > 0 ? tpm.median / soft.median : .nan, target: "", met: nil)
            return (row, "TPM sign: \(tcti), \(signatures) signatures each")
        } catch {
            return (nil, "TPM sign: \(error)")
        }
    }

    /// swtpm on a kernel-chosen free port P (and P + 1 for control), its state in `directory`.
    private static func startSwtpm(directory: String) -> (pid_t, UInt16)? {
        let state = directory + "/swtpm"
        try? FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        for _ in 0..<5 {
            guard let port = freePort(0), port < 65000, freePort(port + 1) != nil,
                  let pid = try? Spawn.start("/usr/bin/swtpm", [
                      "socket", "--tpm2", "--tpmstate", "dir=\(state)",
                      "--server", "type=tcp,port=\(port),bindaddr=127.0.0.1",
                      "--ctrl", "type=tcp,port=\(port + 1),bindaddr=127.0.0.1",
                      "--flags", "not-need-init,startup-clear",
                  ], stdoutPath: state + "/log", stderrPath: state + "/log") else { continue }
            Cleanup.shared.add { Spawn.terminate(pid, grace: 2) }
            for _ in 0..<250 {
                if Spawn.wait(pid, timeout: 0) != nil { break }
                if (try? TPMDevice(tcti: "swtpm:host=127.0.0.1,port=\(port)").probe()) != nil { return (pid, port) }
                usleep(20_000)
            }
            Spawn.terminate(pid, grace: 2)
        }
        return nil
    }

    /// Binds 127.0.0.1:`port` (0: any) and lets it go; the port, or nil if taken.
    private static func freePort(_ port: UInt16) -> UInt16? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        return bound ? UInt16(bigEndian: address.sin_port) : nil
    }
}
