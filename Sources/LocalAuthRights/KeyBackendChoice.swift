import Glibc
import LocalAuthTPM

/// Which key backend the service uses for new rights (`localauthd --tpm`):
///
/// - `auto` (default): the TPM behind the kernel's resource manager
///   (`/dev/tpmrm0`) when that device exists, else software;
/// - `off`: software only (refused once the machine key is sealed to a TPM);
/// - a TCTI configuration for tpm2-tss's loader, e.g. `device:/dev/tpmrm0`,
///   `swtpm:host=127.0.0.1,port=2321`, `mssim:…`.
///
/// With a TPM, a software machine key found in the state directory is moved
/// into it on the first open (`TPMKeyProtector.moveMachineKeyToTPM`); rights
/// made before keep working. A TPM that is chosen but fails is an error, never
/// a silent fall back to software.
public enum KeyBackendChoice: Sendable, Hashable, CustomStringConvertible {
    case automatic
    case off
    case tcti(String)

    /// Parses an option value; nil for an empty or blank one.
    public init?(_ text: String) {
        switch text {
        case "auto": self = .automatic
        case "off": self = .off
        default:
            guard !text.isEmpty, !text.contains(where: { $0 == " " || $0 == "\n" || $0 == "\t" }) else { return nil }
            self = .tcti(text)
        }
    }

    public var description: String {
        switch self {
        case .automatic: "auto"
        case .off: "off"
        case .tcti(let configuration): configuration
        }
    }

    /// The TCTI configuration to use, nil for the software backend.
    public var resolvedTCTI: String? {
        switch self {
        case .off: nil
        case .tcti(let configuration): configuration
        case .automatic: access(TPMDevice.kernelResourceManager, F_OK) == 0 ? TPMDevice.kernelResourceManagerTCTI : nil
        }
    }

    /// The backend's name and where it is, for the start-up log:
    /// "tpm2 (device:/dev/tpmrm0)" or "software".
    public var summary: String {
        resolvedTCTI.map { "\(TPMKeyProtector.name) (\($0))" } ?? SoftwareKeyProtector.name
    }

    /// The protector for `stateDirectory` (which must exist).
    public func openProtector(stateDirectory: String) throws(RightsError) -> any KeyProtector {
        guard let tcti = resolvedTCTI else { return try SoftwareKeyProtector(stateDirectory: stateDirectory) }
        return try TPMKeyProtector(stateDirectory: stateDirectory, device: TPMDevice(tcti: tcti))
    }

    /// Whether the chosen TPM answers (nil for software, or when it does),
    /// without touching the state directory: for the start-up log.
    public func probe() -> RightsError? {
        guard let tcti = resolvedTCTI else { return nil }
        do {
            try TPMDevice(tcti: tcti).probe()
            return nil
        } catch {
            return RightsError(tpm: error, "the TPM at \(tcti)")
        }
    }
}
