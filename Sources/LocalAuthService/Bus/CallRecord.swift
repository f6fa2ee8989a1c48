import DBusCore
import LocalAuthShared

/// One call (of any contract) from the moment it arrives until it is
/// answered. It is registered before anything awaits (the caller's uid,
/// polkit, the reader), so that whatever ends it — the caller leaving the
/// bus, Cancel or EndEvaluation of its request id, SIGTERM — ends it at any
/// moment, and nothing starts for a call that has ended (docs/SECURITY.md,
/// "departed callers").
@ServiceActor
final class CallRecord {
    let sender: String
    /// How the contract it came through names errors: a shutdown that
    /// answers it (`CallRegistry.abandonAll`) answers in those words.
    let errors: ErrorTable
    /// The request id the call carries (`CallArguments.callRequestID`), read
    /// at arrival, so that a Cancel sent right after the call finds it even
    /// before polkit answered.
    let requestID: String?
    /// The caller's uid, once the bus said it and the registry admitted the call.
    fileprivate(set) var uid: UInt32?
    /// The connection's calls it is one of, while it is registered.
    fileprivate(set) var connection: ConnectionCalls?
    /// Cancels an enrollment's scans. Made on first use: most calls (a
    /// preflight) never need a GCancellable.
    private(set) lazy var cancellable = Cancellable()
    /// The polkit check in progress, if any. Its own cancellable, used for
    /// that one check only: libpolkit stays connected to a cancellable after
    /// its check ends and would try to cancel a finished check later.
    var authorization: Cancellable?
    /// The context policy refused the finger for this call (ContextPolicy/):
    /// the evaluator treats it as biometrics unusable, before any scan.
    var contextRefusal: ServiceError?
    /// The work this call runs that must end with it (an evaluation), once
    /// it runs one: an interruption reaches it, even one that came first.
    var work: (any CallWork)? {
        didSet { if let interruption { work?.interrupt(interruption) } }
    }
    /// A stuck shutdown answered it already (`CallRegistry.abandonAll`).
    fileprivate(set) var abandoned = false
    /// Why the call was ended early; the first reason wins.
    private(set) var interruption: Interruption?

    /// The call itself, so that a shutdown can still answer it when the
    /// work it waits for never ends (a reader that ignores cancellation).
    let call: (any WireCall)?

    /// Its row's `MethodSpec.scans`: its answer waits for a finger, so sleep
    /// ends it (`CallRegistry.interruptReaderWork`).
    let scans: Bool

    /// `errors`: the contract's table (`BusContract.errors`); the router
    /// passes its row's `scans` (a record made elsewhere scans nothing).
    init(sender: String, requestID: String?, errors: ErrorTable, scans: Bool = false, call: (any WireCall)? = nil) {
        self.sender = sender
        self.requestID = requestID
        self.errors = errors
        self.scans = scans
        self.call = call
    }

    func interrupt(_ reason: Interruption) {
        guard interruption == nil else { return }
        interruption = reason
        cancellable.cancel()
        authorization?.cancel()
        work?.interrupt(reason)
    }

    /// Throws the interruption's error if the call has ended: after every await.
    func checkNotEnded() throws(ServiceError) {
        if let interruption { throw interruption.error }
    }
}

/// Work a call runs that ends with the call (Evaluation/Evaluation.swift):
/// the record hands it the call's interruption. Declared here, so that the
/// record names no component.
@ServiceActor
protocol CallWork: AnyObject {
    func interrupt(_ reason: Interruption)
}

/// One bus connection's calls in flight, from its first call until it
/// leaves the bus. Looked up once per call, by unique name; everything else
/// reaches it by reference. (Who the connection is: Callers/CallerRecord.)
@ServiceActor
final class ConnectionCalls {
    let sender: String
    fileprivate(set) var calls: [CallRecord] = []

    init(sender: String) { self.sender = sender }
}

/// Every call in flight. The one place that says whether the service is idle,
/// and the place the per-caller limits are counted: one dictionary lookup
/// per call (a preflight pays for this on every call).
@ServiceActor
final class CallRegistry {
    private var connections: [String: ConnectionCalls] = [:]
    private var perUser: [UInt32: Int] = [:]
    private var count = 0

    var isEmpty: Bool { count == 0 }

    /// Registers a call that just arrived, unless its connection or everyone
    /// together already has too many calls in flight.
    func register(_ record: CallRecord) throws(ServiceError) {
        guard count < ServiceLimits.callsInTotal else {
            throw ServiceErrors.limit("the service has \(ServiceLimits.callsInTotal) calls in flight; try again shortly")
        }
        let connection: ConnectionCalls
        if let known = connections[record.sender] {
            connection = known
        } else {
            connection = ConnectionCalls(sender: record.sender)
            connections[record.sender] = connection
        }
        guard connection.calls.count < ServiceLimits.callsPerConnection else {
            throw ServiceErrors.limit("this connection has \(ServiceLimits.callsPerConnection) calls in flight")
        }
        connection.calls.append(record)
        record.connection = connection
        count += 1
    }

    /// Once the caller's uid is known: refuses a call past the per-user limit.
    func admit(_ record: CallRecord, uid: UInt32) throws(ServiceError) {
        guard record.uid == nil else { return }
        guard uid == 0 || perUser[uid, default: 0] < ServiceLimits.callsPerUser else {
            throw ServiceErrors.limit("uid \(uid) has \(ServiceLimits.callsPerUser) calls in flight")
        }
        record.uid = uid
        if uid != 0 { perUser[uid, default: 0] += 1 }
    }

    func remove(_ record: CallRecord) {
        guard let connection = record.connection, let index = connection.calls.firstIndex(where: { $0 === record }) else { return }
        connection.calls.remove(at: index)
        record.connection = nil
        count -= 1
        if let uid = record.uid, uid != 0 {
            let left = (perUser[uid] ?? 1) - 1
            perUser[uid] = left > 0 ? left : nil
        }
    }

    /// The caller left the bus: everything it asked for ends, and it is forgotten.
    func senderVanished(_ sender: String) {
        guard let connection = connections.removeValue(forKey: sender) else { return }
        for call in connection.calls { call.interrupt(.callerVanished) }
    }

    /// Cancel / EndEvaluation: only the caller's own request, by its id.
    func end(requestID: String, of sender: String, _ reason: Interruption) {
        for call in connections[sender]?.calls ?? [] where call.requestID == requestID { call.interrupt(reason) }
    }

    /// The last resort of a shutdown: every call still registered is
    /// answered with `error` and forgotten, whatever it still waits for.
    func abandonAll(answering error: ServiceError) -> Int {
        var abandoned = 0
        for connection in connections.values {
            for call in connection.calls {
                call.call?.fail(error.dbusError(call.errors))
                call.abandoned = true
                call.connection = nil
                abandoned += 1
            }
            connection.calls.removeAll()
        }
        count = 0
        perUser.removeAll()
        return abandoned
    }

    /// The system goes to sleep: every call whose answer waits for a scan
    /// (its row's `MethodSpec.scans`) ends, wherever it waits: polkit, the
    /// reader queue, the scan. (Those holding or waiting for the reader end
    /// through `SensorQueue` too; fprintd's operations through it alone.)
    func interruptReaderWork(_ reason: Interruption) {
        for connection in connections.values {
            for call in connection.calls where call.scans { call.interrupt(reason) }
        }
    }

    /// SIGTERM or idle exit: every call ends with SystemCancel.
    func stopAll() {
        for connection in connections.values {
            for call in connection.calls { call.interrupt(.serviceStopping) }
        }
    }
}
