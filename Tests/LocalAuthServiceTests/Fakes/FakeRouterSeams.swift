import DBusCore
@testable import LocalAuthService
import LocalAuthShared

// Fakes for the router's seams (Sources/LocalAuthService/Bus/CallRouter.swift):
// a call on the wire that keeps its answer, the bus driver's records, and
// polkit's verdicts. No bus, no polkitd.

/// A method call as the router receives it; `answers` keeps what it was told.
@ServiceActor
final class FakeWireCall: WireCall {
    let sender: String
    let interface: String?
    let member: String
    let signature: String
    let arguments: [DBusValue]
    var carriesFileDescriptors = false
    var approximateBodySize = 64
    enum Answer: Equatable {
        case reply([DBusValue])
        case error(String)
    }
    private(set) var answers: [Answer] = []
    private(set) var messages: [String] = []

    init(
        _ member: String, _ signature: String = "", _ arguments: [DBusValue] = [], sender: String = ":1.7",
        interface: String? = nil
    ) {
        self.member = member
        self.signature = signature
        self.arguments = arguments
        self.sender = sender
        self.interface = interface
    }

    func reply(_ values: [DBusValue]) { answers.append(.reply(values)) }
    func fail(_ error: DBusError) {
        answers.append(.error(error.name.rawValue))
        messages.append(error.message)
    }
}

/// The bus driver's answers: a record for each known sender.
@ServiceActor
final class FakeCallers: CallerLookup {
    var uids: [String: UInt32] = [:]
    func record(for sender: String) async throws(DBusError) -> CallerRecord {
        guard let uid = uids[sender] else { throw DBusError(.failed, "no such connection \(sender)") }
        return CallerRecord(sender: sender, uid: uid, process: nil, securityLabel: nil)
    }
}

/// polkit: a verdict per action (denied unless the test says), every question logged.
@ServiceActor
final class FakePolkit: PolkitCheck {
    var verdicts: [String: Authorizer.Decision] = [:]
    private(set) var asked: [String] = []
    /// Runs while polkit "thinks": a test changes the world meanwhile.
    var meanwhile: (@ServiceActor () -> Void)?

    func check(actionID: String, busName: String, interactive: Bool, cancellable: Cancellable) async -> Authorizer.Decision {
        asked.append(actionID)
        meanwhile?()
        await Task.yield()
        return verdicts[actionID] ?? .denied("not allowed: \(actionID)")
    }
}

/// A router over the fakes; `routed` holds the calls it scheduled until the test serves them.
@ServiceActor
final class RouterRig {
    let registry = CallRegistry()
    let callers = FakeCallers()
    let polkit = FakePolkit()
    private(set) var scheduled: [any RoutedCall] = []
    private(set) var callsEnded = 0
    private(set) lazy var router = CallRouter(
        registry: registry, callers: callers, authorizer: polkit,
        schedule: { [unowned self] in self.scheduled.append($0) }, callEnded: { [unowned self] in self.callsEnded += 1 })

    /// Receives `call` for `target` and serves what was scheduled.
    func send<Target>(_ call: FakeWireCall, _ contract: BusContract<Target>, _ target: Target) async {
        router.receive(call, contract, target)
        let pending = scheduled
        scheduled = []
        for routed in pending { await routed.serve(on: router) }
    }
}
