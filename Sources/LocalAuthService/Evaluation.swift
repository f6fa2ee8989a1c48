import DBusCore
import LocalAuthShared

/// One pending EvaluatePolicy call.
@ServiceActor
final class Evaluation {
    /// Why an evaluation ended early, and the error the caller gets for it.
    enum Interruption: Sendable {
        case appCancelled       // Cancel(request-id): AppCancel
        case callerVanished     // the caller left the bus: nobody to answer
        case timedOut           // no finger in time: SystemCancel
        case serviceStopping    // SIGTERM: SystemCancel
        case readerRemoved      // unplugged: SystemCancel

        var error: DBusError {
            switch self {
            case .appCancelled: ServiceErrors.la(.appCancel, "the app cancelled the evaluation")
            case .callerVanished: ServiceErrors.la(.systemCancel, "the caller left the bus")
            case .timedOut: ServiceErrors.la(.systemCancel, "no finger was presented in time")
            case .serviceStopping: ServiceErrors.la(.systemCancel, "the authentication service is stopping")
            case .readerRemoved: ServiceErrors.la(.systemCancel, "the fingerprint reader was removed")
            }
        }
    }

    let requestID: String
    let sender: String
    let uid: UInt32
    let cancellable = Cancellable()
    let ticket = SensorQueue.Ticket()
    private(set) var interruption: Interruption?
    private weak var queue: SensorQueue?

    init(requestID: String, sender: String, uid: UInt32, queue: SensorQueue) {
        self.requestID = requestID
        self.sender = sender
        self.uid = uid
        self.queue = queue
    }

    /// Ends the evaluation early; the first reason wins.
    func interrupt(_ reason: Interruption) {
        guard interruption == nil else { return }
        interruption = reason
        cancellable.cancel()
        queue?.withdraw(ticket)
    }
}

/// The contract's errors as `DBusError`s.
enum ServiceErrors {
    static func la(_ code: LocalAuthErrorCode, _ message: String) -> DBusError {
        DBusError(DBusError.Name(rawValue: code.dbusName), message)
    }
    static func named(_ name: String, _ message: String) -> DBusError {
        DBusError(DBusError.Name(rawValue: name), message)
    }
    static func invalidArgs(_ message: String) -> DBusError { DBusError(.invalidArgs, message) }
    static func permissionDenied(_ message: String) -> DBusError {
        named(LocalAuthServiceError.permissionDenied, message)
    }
    static let noReader = la(.biometryNotAvailable, "no fingerprint reader is available")
}
