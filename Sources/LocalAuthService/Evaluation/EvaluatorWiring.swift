import DBusCore
import LocalAuthShared

// The Evaluator's seams served by the service's components: wiring only, no
// decisions. It is given the components it uses, not the service; what the
// Environment must hear goes out as events (ServiceEvents).

/// Readers, prints, presence, passwords, polkit and the prompt, as the components have them.
@ServiceActor
struct ServiceEvaluatorWiring: EvaluationReaders, ReaderLookupWiring, EvaluationPrints, EvaluationEnvironment, OwnerPassword,
    EvaluationObservers
{
    let readers: Readers
    let readerChoice: ReaderChoice
    let prints: PrintStore
    let callers: Callers
    let passwords: PasswordStore
    let events: ServiceEvents
    let authorizer: Authorizer
    let promptAgents: PromptAgents
    let bus: BusConnection

    // MARK: EvaluationReaders

    func isWarm(_ reader: Readers.Identity) -> Bool { readers.isWarm(reader) }

    // MARK: EvaluationPrints

    func prints(of uid: UInt32, on reader: Readers.Identity) -> [EnrolledPrint] {
        prints.prints(of: uid, for: reader).map(\.enrolled)
    }

    func hasPrints(of uid: UInt32, on reader: Readers.Identity) -> Bool {
        !prints.prints(of: uid, for: reader).isEmpty
    }

    // MARK: EvaluationEnvironment

    func presence(of caller: CallerRecord) async -> Presence {
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

