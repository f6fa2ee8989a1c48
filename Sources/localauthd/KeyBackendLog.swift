import LocalAuthRights

/// The key backend of rights in the start-up log (journald priority
/// prefixes): which one, and whether a chosen TPM answers. A TPM that does
/// not answer is an error line, not a failed start: everything but rights
/// works without it (docs/TPM.md).
func logKeyBackend(_ choice: KeyBackendChoice) {
    let because = if case .tcti = choice { "" } else { " (--tpm \(choice))" }
    writeError("<6>localauthd: rights key backend: \(choice.summary)\(because)\n")
    if let error = choice.probe() {
        writeError("<3>localauthd: rights unavailable until the TPM answers: \(error)\n")
    }
}
