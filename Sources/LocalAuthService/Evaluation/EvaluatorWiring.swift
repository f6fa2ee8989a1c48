import DBusCore
import LocalAuthShared

// The Evaluator's seams served by the service's components: wiring only, no
// decisions. It is given the components it uses, not the service; what the
// Environment must hear goes out as events (ServiceEvents).

/// Readers, prints, presence, passwords, polkit and the prompt, as the components have them.
@ServiceActor
final class ServiceEvaluatorWiring: EvaluationReaders, ReaderLookupWiring, EvaluationPrints, EvaluationEnvironment, OwnerPassword,
    EvaluationObservers
{
    private let readers: Readers
    private let gate: ReaderGate
    let readerChoice: ReaderChoice
    private let prints: PrintStore
    private let callers: Callers
    private let passwords: PasswordStore
    private let events: ServiceEvents
    private let authorizer: Authorizer
    private let promptAgents: PromptAgents
    private let bus: BusConnection

    init(
        readers: Readers, gate: ReaderGate, readerChoice: ReaderChoice, prints: PrintStore, callers: Callers,
        passwords: PasswordStore, events: ServiceEvents, authorizer: Authorizer, promptAgents: PromptAgents, bus: BusConnection
    ) {
        self.readers = readers
        self.gate = gate
        self.readerChoice = readerChoice
        self.prints = prints
        self.callers = callers
        self.passwords = passwords
        self.events = events
        self.authorizer = authorizer
        self.promptAgents = promptAgents
        self.bus = bus
    }

    // MARK: EvaluationReaders

    func isWarm(_ reader: Readers.Identity) -> Bool { readers.isWarm(reader) }

    func open(
        _ reader: Readers.Identity, until deadline: ContinuousClock.Instant?, cancellable: Cancellable,
        interruption: @escaping @ServiceActor () -> Interruption?,
        busy: @escaping @ServiceActor () -> Void
    ) async throws(ServiceError) -> any ReaderSession {
        try await LibfprintReaderSession.open(
            reader, until: deadline, cancellable: cancellable, interruption: interruption, busy: busy, gate: gate,
            readers: readers)
    }

    // MARK: EvaluationPrints

    func prints(of uid: UInt32, on reader: Readers.Identity) -> [EnrolledPrint] {
        prints.prints(of: uid, for: reader).map(\.enrolled)
    }

    func hasPrints(of uid: UInt32, on reader: Readers.Identity) -> Bool {
        !prints.prints(of: uid, for: reader).isEmpty
    }

    // MARK: EvaluationEnvironment

    func presence(of caller: CallerRecord) async -> EnvironmentRules.Presence {
        if let known = callers.knownPresence(caller) { return known }
        return await callers.presence(caller)
    }

    var frontChanges: UInt64 { callers.logind.frontChanges }

    func passwordNeeded(_ uid: UInt32) -> ServiceError? { passwords.passwordNeeded(uid) }

    func passwordGiven(_ uid: UInt32) {
        passwords.record(uid)
        events.publishUserChanged(uid)
    }

    func lockoutChanged(_ uid: UInt32) { events.publishUserChanged(uid) }

    func hasPassword(_ uid: UInt32) -> Bool { Accounts.hasPassword(uid: uid) }

    func identity(of sender: String) -> CallerIdentity? {
        callers.known(sender).map { callers.identity($0) }
    }

    // MARK: OwnerPassword

    func check(
        sender: String, details: [String: String], timeout: Double,
        cancellable: Cancellable
    ) async -> Authorizer.Decision {
        await authorizer.check(
            .authenticateOwner, busName: sender, interactive: true, details: details,
            timeout: timeout, cancellable: cancellable)
    }

    // MARK: EvaluationObservers

    func evaluationStarted(_ evaluation: Evaluation, record: CallRecord, policy: PolicyValue) async {
        await promptAgents.evaluationStarted(evaluation, record: record, policy: policy)
    }

    func evaluationEnded(_ evaluation: Evaluation, error: ServiceError?) {
        promptAgents.evaluationEnded(evaluation, error: error)
    }

    func status(_ evaluation: Evaluation, _ progress: EvaluationProgress) {
        try? bus.emit(
            path: ObjectPath(stringLiteral: LocalAuthBus.objectPath), interface: LocalAuthBus.interface,
            member: LocalAuthBus.Signal.evaluationStatus,
            arguments: [.string(evaluation.requestID), .string(progress.rawValue)],
            destination: evaluation.sender)
        promptAgents.status(evaluation, progress)
    }
}

/// A libfprint reader held for one operation (`Readers.acquire` to
/// `relinquish`): an evaluation's, or fprintd's (Fprintd/FprintdWiring.swift).
@ServiceActor
final class LibfprintReaderSession: ReaderSession {
    let readers: Readers
    private let gate: ReaderGate
    let device: Readers.Reader
    /// Whether `release` gives the device back (not when `ReaderGate.withReader` does).
    private let releases: Bool

    /// Opens `reader` through the gate (ReaderGate.open: its errors) for one operation.
    static func open(
        _ reader: Readers.Identity, until deadline: ContinuousClock.Instant?, cancellable: Cancellable,
        interruption: @escaping @ServiceActor () -> Interruption?, busy: @escaping @ServiceActor () -> Void,
        gate: ReaderGate, readers: Readers
    ) async throws(ServiceError) -> LibfprintReaderSession {
        let device = try await gate.open(reader, until: deadline, cancellable: cancellable, interruption: interruption, busy: busy)
        return LibfprintReaderSession(readers: readers, gate: gate, device: device)
    }

    init(readers: Readers, gate: ReaderGate, device: Readers.Reader, releases: Bool = true) {
        self.readers = readers
        self.gate = gate
        self.device = device
        self.releases = releases
    }

    var identity: Readers.Identity { device.identity }

    func scan(_ gallery: [EnrolledPrint], cancellable: Cancellable) async throws(GLibError) -> ScanOutcome {
        // The prints came from ServiceEvaluatorWiring.prints: libfprint's own.
        let prints = gallery.compactMap { $0.template as? GObjectRef }
        guard prints.count == gallery.count else { throw Readers.noReader(device.identity) }
        switch try await readers.identify(prints, on: device, cancellable: cancellable) {
        case .match(let matched): return .match(prints.firstIndex { $0.pointer == matched.pointer })
        case .noMatch: return .noMatch
        case .retry(let kind): return .retry(kind)
        }
    }

    func unusable(_ error: GLibError) -> ServiceError? { gate.unusable(error, device) }

    func release() { if releases { readers.relinquish(device) } }
}

/// libfprint's FpPrint is what a real reader compares with.
extension GObjectRef: PrintTemplate {}

extension PrintStore.StoredPrint {
    /// The print as a scan compares with it (and where it is kept).
    var enrolled: EnrolledPrint {
        EnrolledPrint(finger: finger, source: source, stamp: stamp, template: print, location: path)
    }
}
