internal import CFprint
import DBusCore
import LocalAuthShared

// The service's side of the Readers component: opening a reader for a
// call's operation with the errors a caller gets. (What sleep does to the
// operations: Environment/EnvironmentWiring.swift, ServiceSleepSeams.)
extension LocalAuthService {
    /// Opens `identity` for one operation, within the scan timeout: the
    /// errors a caller gets when it cannot (Readers.acquire).
    func openReader(_ identity: Readers.Identity, cancellable: Cancellable,
                    interruption: @ServiceActor () -> Evaluation.Interruption?,
                    busy: @ServiceActor () -> Void) async throws(ServiceError) -> Readers.Reader {
        let deadline = ContinuousClock.now + .milliseconds(Int(configuration.scanTimeout * 1000))
        do {
            return try await readers.acquire(identity, until: deadline, cancellable: cancellable, busy: busy)
        } catch {
            if let interruption = interruption() { throw interruption.error }
            switch error {
            case .removed: throw Evaluation.Interruption.readerRemoved.error
            case .cancelled: throw ServiceErrors.la(.systemCancel, "cancelled while opening the fingerprint reader")
            case .suspended: throw Evaluation.Interruption.systemSleeping.error
            case .heldByAnotherProgram(let why):
                throw ServiceError(.readerInUse,
                    "the fingerprint reader is in use by another program (\(why)); try again when it is free")
            }
        }
    }

    /// The reader's errors that mean it cannot be used now, for an
    /// evaluation and an enrollment alike (a removed reader is forgotten at once).
    func readerUnusable(_ error: GLibError, _ device: Readers.Reader) -> ServiceError? {
        if error.isDevice(FP_DEVICE_ERROR_REMOVED_VALUE) {
            readers.forget(device)
            return Evaluation.Interruption.readerRemoved.error
        }
        if error.isDevice(FP_DEVICE_ERROR_TOO_HOT_VALUE) {
            return ServiceErrors.la(.systemCancel, "the fingerprint reader is cooling down; try again shortly")
        }
        return nil
    }
}
