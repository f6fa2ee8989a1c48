import DBusCore
import LocalAuthShared

// The Evaluator's seams served by today's service: wiring only, no
// decisions (each method calls what the service has). The integrator
// rewires these when the readers, prompt and environment are components.

/// Readers, prints, presence, passwords, polkit and the prompt, as the service has them.
@ServiceActor
final class ServiceEvaluatorWiring: EvaluationReaders, EvaluationPrints, EvaluationEnvironment, OwnerPassword,
    EvaluationObservers
{
    /// The service owns the Evaluator, which alone holds this wiring: the
    /// service outlives it. Not `unowned` (safe): the service has weak
    /// references, so each checked load would take the side table's slow
    /// retain and release, on every preflight (callgrind: BENCHMARKS.md).
    private unowned(unsafe) let service: LocalAuthService

    init(_ service: LocalAuthService) { self.service = service }

    // MARK: EvaluationReaders

    func reader(for uid: UInt32) -> Readers.Identity? { service.readerChoice.reader(for: uid) }

    var noReaderError: ServiceError { service.readerChoice.noReaderError }

    func isWarm(_ reader: Readers.Identity) -> Bool { service.readers.isWarm(reader) }

    func open(
        _ reader: Readers.Identity, cancellable: Cancellable,
        interruption: @escaping @ServiceActor () -> Evaluation.Interruption?,
        busy: @escaping @ServiceActor () -> Void
    ) async throws(ServiceError) -> any ReaderSession {
        let device = try await service.readerGate.open(reader, cancellable: cancellable, interruption: interruption, busy: busy)
        return LibfprintReaderSession(readers: service.readers, gate: service.readerGate, device: device)
    }

    // MARK: EvaluationPrints

    func prints(of uid: UInt32, on reader: Readers.Identity) -> [EnrolledPrint] {
        service.prints.prints(of: uid, for: reader).map {
            EnrolledPrint(finger: $0.finger, source: $0.source, stamp: $0.stamp, template: $0.print)
        }
    }

    func hasPrints(of uid: UInt32, on reader: Readers.Identity) -> Bool {
        !service.prints.prints(of: uid, for: reader).isEmpty
    }

    // MARK: EvaluationEnvironment

    func presence(of caller: CallerRecord) async -> EnvironmentRules.Presence {
        if let known = service.callers.knownPresence(caller) { return known }
        return await service.callers.presence(caller)
    }

    func passwordNeeded(_ uid: UInt32) -> ServiceError? { service.environment.passwordNeeded(uid) }

    func passwordGiven(_ uid: UInt32) { service.environment.passwordGiven(uid) }

    func lockoutChanged(_ uid: UInt32) { service.environment.userChanged(uid) }

    func hasPassword(_ uid: UInt32) -> Bool { Accounts.hasPassword(uid: uid) }

    func identity(of sender: String) -> CallerIdentity? {
        service.callers.known(sender).map { service.callers.identity($0) }
    }

    // MARK: OwnerPassword

    func check(
        sender: String, details: [String: String], timeout: Double,
        cancellable: Cancellable
    ) async -> Authorizer.Decision {
        await service.authorizer.check(
            .authenticateOwner, busName: sender, interactive: true, details: details,
            timeout: timeout, cancellable: cancellable)
    }

    // MARK: EvaluationObservers

    func evaluationStarted(_ evaluation: Evaluation, record: CallRecord, policy: PolicyValue) async {
        await service.promptAgents.evaluationStarted(evaluation, record: record, policy: policy)
    }

    func evaluationEnded(_ evaluation: Evaluation, error: ServiceError?) {
        service.promptAgents.evaluationEnded(evaluation, error: error)
    }

    func status(_ evaluation: Evaluation, _ progress: EvaluationProgress) {
        try? service.bus.emit(
            path: ObjectPath(stringLiteral: LocalAuthBus.objectPath), interface: LocalAuthBus.interface,
            member: LocalAuthBus.Signal.evaluationStatus,
            arguments: [.string(evaluation.requestID), .string(progress.rawValue)],
            destination: evaluation.sender)
        service.promptAgents.status(evaluation, progress)
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
