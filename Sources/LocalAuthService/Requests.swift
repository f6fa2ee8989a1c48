import DBusCore
import LocalAuthShared

/// One call of org.example.LocalAuth from the moment it arrives until it is
/// answered. It is registered before anything awaits (the caller's uid,
/// polkit, the reader), so that whatever ends it — the caller leaving the
/// bus, Cancel or EndEvaluation of its request id, SIGTERM — ends it at any
/// moment, and nothing starts for a call that has ended (docs/SECURITY.md,
/// "departed callers").
@ServiceActor
final class CallRecord {
    let sender: String
    let member: String
    /// EvaluatePolicy's `request-id` option, read at arrival, so that a
    /// Cancel sent right after the call finds it even before polkit answered.
    let requestID: String?
    /// The caller's uid, once the bus said it.
    var uid: UInt32?
    /// Cancels an enrollment's scans.
    let cancellable = Cancellable()
    /// The polkit check in progress, if any. Its own cancellable, used for
    /// that one check only: libpolkit stays connected to a cancellable after
    /// its check ends and would try to cancel a finished check later.
    var authorization: Cancellable?
    /// The evaluation this call runs, once it runs one.
    var evaluation: Evaluation? {
        didSet { if let interruption { evaluation?.interrupt(interruption) } }
    }
    /// Why the call was ended early; the first reason wins.
    private(set) var interruption: Evaluation.Interruption?

    init(sender: String, member: String, requestID: String?) {
        self.sender = sender
        self.member = member
        self.requestID = requestID
    }

    func interrupt(_ reason: Evaluation.Interruption) {
        guard interruption == nil else { return }
        interruption = reason
        cancellable.cancel()
        authorization?.cancel()
        evaluation?.interrupt(reason)
    }

    /// Throws the interruption's error if the call has ended: after every await.
    func checkNotEnded() throws(DBusError) {
        if let interruption { throw interruption.error }
    }
}

/// Every call in flight. The one place that says whether the service is idle,
/// and the place the per-caller limits are counted.
@ServiceActor
final class CallRegistry {
    private(set) var calls: [CallRecord] = []

    var isEmpty: Bool { calls.isEmpty }

    /// Registers a call that just arrived, unless its connection or everyone
    /// together already has too many calls in flight.
    func register(_ record: CallRecord) throws(DBusError) {
        guard calls.count < ServiceLimits.callsInTotal else {
            throw ServiceErrors.limit("the service has \(ServiceLimits.callsInTotal) calls in flight; try again shortly")
        }
        let fromSender = calls.reduce(0) { $0 + ($1.sender == record.sender ? 1 : 0) }
        guard fromSender < ServiceLimits.callsPerConnection else {
            throw ServiceErrors.limit("this connection has \(ServiceLimits.callsPerConnection) calls in flight")
        }
        calls.append(record)
    }

    /// Once the caller's uid is known: refuses a call past the per-user limit.
    func admit(_ record: CallRecord, uid: UInt32) throws(DBusError) {
        record.uid = uid
        guard uid != 0 else { return }
        let fromUser = calls.reduce(0) { $0 + ($1.uid == uid ? 1 : 0) }
        guard fromUser <= ServiceLimits.callsPerUser else {
            throw ServiceErrors.limit("uid \(uid) has \(ServiceLimits.callsPerUser) calls in flight")
        }
    }

    func remove(_ record: CallRecord) {
        calls.removeAll { $0 === record }
    }

    /// The caller left the bus: everything it asked for ends.
    func senderVanished(_ sender: String) {
        for call in calls where call.sender == sender { call.interrupt(.callerVanished) }
    }

    /// Cancel / EndEvaluation: only the caller's own request, by its id.
    func end(requestID: String, of sender: String, _ reason: Evaluation.Interruption) {
        for call in calls where call.sender == sender && call.requestID == requestID { call.interrupt(reason) }
    }

    /// SIGTERM or idle exit: every call ends with SystemCancel.
    func stopAll() {
        for call in calls { call.interrupt(.serviceStopping) }
    }
}
