import Glibc
import LocalAuthRights

/// The key backend of rights in the start-up log (journald priority
/// prefixes): which one, and, for a TPM behind a device node, whether that
/// node opens. Whether the TPM answers is first learnt when a right is used
/// (an error for rights only, logged then: docs/TPM.md): asking at start
/// would map tpm2-tss and, through it, libcrypto into every run of the
/// service, and make the first answer wait for the TPM to create its storage
/// primary key (BENCHMARKS.md, issue 25).
func logKeyBackend(_ choice: KeyBackendChoice) {
    let because = if case .tcti = choice { "" } else { " (--tpm \(choice))" }
    writeError("<6>localauthd: rights key backend: \(choice.summary)\(because)\n")
    guard let tcti = choice.resolvedTCTI, tcti.hasPrefix("device:") else { return }
    let path = String(tcti.dropFirst("device:".count))
    let fd = open(path, O_RDWR | O_CLOEXEC)
    guard fd < 0 else {
        close(fd)
        return
    }
    let reason = String(cString: strerror(errno))
    writeError("<3>localauthd: rights unavailable until the TPM answers: \(path) cannot be opened: \(reason)\n")
}
