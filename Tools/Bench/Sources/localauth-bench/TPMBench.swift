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
        } else if FileManager.default.isExecutableFile(atPath: Swtpm.program) {
            let state = directory + "/swtpm"
            try? FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
            guard let started = try? Swtpm.start(stateDirectory: state) else { return (nil, "TPM sign: swtpm did not start") }
            Cleanup.shared.add { Spawn.terminate(started.pid, grace: 2) }
            swtpm = started.pid
            tcti = started.tcti
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
}
