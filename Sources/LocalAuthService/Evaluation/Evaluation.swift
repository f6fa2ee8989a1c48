import DBusCore
import LocalAuthShared

/// One evaluation in progress (EvaluatePolicy, VerifyUser, AuthorizeRight):
/// what ends it early, and what its prompt shows.
@ServiceActor
final class Evaluation: ReaderCall {
    /// Why an evaluation ended early, and the error the caller gets for it.
    enum Interruption: Sendable {
        case appCancelled       // Cancel(request-id): AppCancel
        case userCancelled      // the person cancelled in the app's prompt: UserCancel
        case userFallback       // the person chose the app's fallback: UserFallback
        case superseded         // policy 2: the password succeeded first
        case callerVanished     // the caller left the bus: nobody to answer
        case timedOut           // no finger in time: SystemCancel
        case queueTimedOut      // waited too long behind other callers: SystemCancel
        case serviceStopping    // SIGTERM: SystemCancel
        case readerRemoved      // unplugged: SystemCancel
        case systemSleeping     // logind's PrepareForSleep: SystemCancel
        case lidClosed          // the lid closed over the built-in reader: SystemCancel
        case notAtTheReader     // the caller's session left the front (a switch, a logout): NotAtTheReader

        var error: ServiceError {
            switch self {
            case .appCancelled: ServiceErrors.la(.appCancel, "the app cancelled the evaluation")
            case .userCancelled: ServiceErrors.la(.userCancel, "the user cancelled the evaluation")
            case .userFallback: ServiceErrors.la(.userFallback, "the user chose the fallback")
            case .superseded: ServiceErrors.la(.systemCancel, "another way of authenticating succeeded first")
            case .callerVanished: ServiceErrors.la(.systemCancel, "the caller left the bus")
            case .timedOut: ServiceErrors.la(.systemCancel, "no finger was presented in time")
            case .queueTimedOut:
                ServiceErrors.la(.systemCancel, "the fingerprint reader stayed busy with other callers for "
                                 + "\(Int(ServiceLimits.readerQueueWait)) s")
            case .serviceStopping: ServiceErrors.la(.systemCancel, "the authentication service is stopping")
            case .readerRemoved: ServiceErrors.la(.systemCancel, "the fingerprint reader was removed")
            case .systemSleeping: ServiceErrors.la(.systemCancel, "the system is going to sleep")
            case .lidClosed: ServiceErrors.la(.systemCancel, "the lid was closed over the built-in fingerprint reader")
            case .notAtTheReader:
                ServiceError(.notAtTheReader, "the caller's session is no longer the one in front of the reader "
                             + "(another session was switched to, or it ended)")
            }
        }
    }

    /// What the app asked to show: its reason and its prompt's labels.
    struct Prompt {
        let reason: String
        /// nil: the default label; "": no fallback button (Apple's rule).
        let fallbackTitle: String?
        let cancelTitle: String?
        /// The name the app declares for itself (`app-name`): shown marked as not verified.
        var appName: String? = nil
    }

    let requestID: String
    /// The connection that asked: whose presence at the reader is judged
    /// again before every scan and after it (Verification.swift).
    let caller: CallerRecord
    var sender: String { caller.sender }
    let uid: UInt32
    let prompt: Prompt
    /// Cancels the fingerprint scan.
    let cancellable = Cancellable()
    /// Cancels the password check of policy 2.
    let passwordCancellable = Cancellable()
    let ticket: SensorQueue.Ticket
    /// The user's enrolled set the matching scan was compared with
    /// (`Evaluator.enrolledSet`): what a reuse is tied to.
    var matchedSet: [[UInt8]]?
    /// Why the whole evaluation ended early.
    private(set) var interruption: Interruption?
    /// Why only the fingerprint part ended early (its timeout; policy 2's password won).
    private(set) var biometricStop: Interruption?
    private weak var queue: SensorQueue?

    init(requestID: String, caller: CallerRecord, uid: UInt32, queue: SensorQueue,
         prompt: Prompt = Prompt(reason: "", fallbackTitle: nil, cancelTitle: nil)) {
        self.requestID = requestID
        self.caller = caller
        self.uid = uid
        self.prompt = prompt
        self.queue = queue
        ticket = SensorQueue.Ticket(uid: uid, purpose: .evaluation)
        // Sleep ends the whole evaluation; a closing lid only its
        // fingerprint part (policy 2 may still take the password).
        ticket.interrupt = { [weak self] reason in
            if reason == .lidClosed { self?.stopBiometrics(reason) } else { self?.interrupt(reason) }
        }
    }

    /// Ends the evaluation early; the first reason wins.
    func interrupt(_ reason: Interruption) {
        guard interruption == nil else { return }
        interruption = reason
        cancellable.cancel()
        passwordCancellable.cancel()
        queue?.withdraw(ticket)
    }

    /// Ends only the fingerprint part (policy 2 may still take the password).
    func stopBiometrics(_ reason: Interruption) {
        guard biometricStop == nil else { return }
        biometricStop = reason
        cancellable.cancel()
        queue?.withdraw(ticket)
    }

    /// Why the fingerprint part ended early, if it did.
    var biometricInterruption: Interruption? { interruption ?? biometricStop }
}
