import DBusCore
import LocalAuthShared

/// One evaluation in progress (EvaluatePolicy, VerifyUser, AuthorizeRight):
/// what ends it early, and what its prompt shows.
@ServiceActor
final class Evaluation: ReaderCall, CallWork {
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
    /// (`Verifier.enrolledSet`): what a reuse is tied to.
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

    /// The whole evaluation was interrupted (ReaderCall's; only the enroll
    /// operation asks).
    var hasEnded: Bool { interruption != nil }

    /// Why the fingerprint part ended early, if it did.
    var biometricInterruption: Interruption? { interruption ?? biometricStop }
}
