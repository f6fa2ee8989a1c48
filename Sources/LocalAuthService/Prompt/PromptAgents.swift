import DBusCore
import Glibc
import LocalAuthShared

// The Prompt component, the system sheet: prompt agents (localauth-prompt,
// one per desktop session) register here, as polkit agents do with polkitd,
// and the service shows each evaluation on the agent of the caller's own uid
// and logind session, streams its status, and closes it when it ends. The
// person's Cancel or fallback comes back as PromptAnswer, accepted only from
// the agent showing that evaluation. Contract:
// dbus/org.example.LocalAuth.PromptAgent.xml. It owns the agents and the
// sheets; callers, sessions and the bus are its seams (PromptSeams.swift).
//
// Whose agent: the uid from the bus and the logind session that stands for
// the connection (Callers.session: its own session, or, for a process in no
// session such as the agent started by our user unit or an app in its
// app-*.scope, its user's display session), for the agent and for the caller
// alike. Without logind on the bus, uid alone decides (documented in
// docs/SECURITY.md). Another uid's agent never sees or answers a prompt.

/// The registered agents and the sheets of the evaluations in progress.
@ServiceActor
final class PromptAgents {
    struct Agent {
        let sender: String
        let path: ObjectPath
        let uid: UInt32
        let session: LoginSession

        /// Whether this agent shows the evaluations of a caller of `uid` in `session`.
        func serves(uid: UInt32, session: LoginSession) -> Bool {
            guard uid == self.uid else { return false }
            switch (self.session, session) {
            case (.session(let mine), .session(let theirs)): return mine == theirs
            case (.noLogind, .noLogind): return true
            default: return false
            }
        }
    }

    /// One evaluation's sheet, from the evaluation's start to its end.
    @ServiceActor
    final class Sheet {
        let id = Posix.randomID()
        let record: CallRecord
        let evaluation: Evaluation
        let policy: PolicyValue
        /// ShowPrompt's details and the caller's session, once looked up.
        var details: [String: DBusValue]?
        var callerSession: LoginSession?
        var resolving = false
        /// The agent showing it (its unique name), once shown.
        var agent: String?
        var lastStatus: String?

        init(record: CallRecord, evaluation: Evaluation, policy: PolicyValue) {
            self.record = record
            self.evaluation = evaluation
            self.policy = policy
        }
    }

    private let seams: any PromptSeams
    private(set) var agents: [String: Agent] = [:]
    private(set) var sheets: [String: Sheet] = [:]
    private var sheetOfEvaluation: [ObjectIdentifier: Sheet] = [:]

    init(seams: any PromptSeams) { self.seams = seams }

    // MARK: Hooks of an evaluation (Evaluation/Evaluator.swift, through its EvaluationObservers seam)

    /// An evaluation starts: its sheet goes to the agent of the caller's
    /// session. Who asks and from which session are looked up here, in the
    /// evaluation's own task (two bus round trips), only when an agent of the
    /// caller's uid is registered at all.
    func evaluationStarted(_ evaluation: Evaluation, record: CallRecord, policy: PolicyValue) async {
        let sheet = Sheet(record: record, evaluation: evaluation, policy: policy)
        sheets[sheet.id] = sheet
        sheetOfEvaluation[ObjectIdentifier(evaluation)] = sheet
        await resolveAndOffer(sheet)
    }

    /// The same status as the EvaluationStatus signal, for the sheet.
    func status(_ evaluation: Evaluation, _ progress: EvaluationProgress) {
        guard let sheet = sheetOfEvaluation[ObjectIdentifier(evaluation)] else { return }
        sheet.lastStatus = progress.rawValue
        guard let agent = sheet.agent.flatMap({ agents[$0] }) else { return }
        seams.send(to: agent, LocalAuthPrompt.AgentMethod.updatePrompt, [.string(sheet.id), .string(progress.rawValue)])
    }

    /// The evaluation ended (`error` nil: success): the sheet closes.
    func evaluationEnded(_ evaluation: Evaluation, error: ServiceError?) {
        guard let sheet = sheetOfEvaluation.removeValue(forKey: ObjectIdentifier(evaluation)) else { return }
        sheets[sheet.id] = nil
        guard let agent = sheet.agent.flatMap({ agents[$0] }) else { return }
        let outcome: LocalAuthPrompt.Outcome
        switch error?.kind {
        case nil: outcome = .success
        case .la(.authenticationFailed)?, .storageFailed?: outcome = .failed
        case .la(.biometryLockout)?: outcome = .lockedOut
        default: outcome = .cancelled
        }
        seams.send(to: agent, LocalAuthPrompt.AgentMethod.closePrompt, [.string(sheet.id), .string(outcome.rawValue)])
    }

    /// A connection left the bus: if it was an agent, it is forgotten, and
    /// its sheets go on without it (as with no agent at all).
    func agentVanished(_ name: String) {
        guard agents.removeValue(forKey: name) != nil else { return }
        for sheet in sheets.values where sheet.agent == name { sheet.agent = nil }
        Log.info("prompt agent \(name) left")
    }

    // MARK: Methods agents call (LocalAuth/LocalAuthContract.swift)

    /// RegisterPromptAgent(o): the caller shows sheets for its own uid and
    /// logind session. Registering again from the same connection is not an error.
    func register(
        _ arguments: RegisterPromptAgentArguments, caller: CallerRecord,
        record: CallRecord
    ) async throws(ServiceError) {
        let path = arguments.path
        if let known = agents[caller.sender] {
            if known.path == path { return }
            agents[caller.sender] = Agent(sender: known.sender, path: path, uid: known.uid, session: known.session)
            return
        }
        guard agents.count < LocalAuthPrompt.maximumAgents else {
            throw ServiceErrors.limit("\(LocalAuthPrompt.maximumAgents) prompt agents are registered")
        }
        guard agents.values.filter({ $0.uid == caller.uid }).count < LocalAuthPrompt.maximumAgentsPerUser else {
            throw ServiceErrors.limit("uid \(caller.uid) has \(LocalAuthPrompt.maximumAgentsPerUser) prompt agents registered")
        }
        let session = await seams.session(of: caller)
        ServiceActor.assertOnLoop()
        try record.checkNotEnded()
        if case .none = session {
            throw ServiceErrors.permissionDenied("a prompt agent must run in a login session or its user's display session")
        }
        if let other = agents.values.first(where: {
            $0.sender != caller.sender && $0.uid == caller.uid
                && $0.session == session
        }) {
            throw ServiceError(
                .promptAgentExists,
                "a prompt agent (\(other.sender)) is already registered for this session")
        }
        agents[caller.sender] = Agent(sender: caller.sender, path: path, uid: caller.uid, session: session)
        Log.info("prompt agent \(caller.sender) registered for uid \(caller.uid) (\(session))")
        // Evaluations already in progress for this session (the service was
        // just started by the evaluation that activated it) get their sheet now.
        for sheet in sheets.values where sheet.agent == nil && sheet.evaluation.uid == caller.uid {
            await resolveAndOffer(sheet)
        }
    }

    /// UnregisterPromptAgent(o): the caller's own registration only.
    func unregister(_ arguments: UnregisterPromptAgentArguments, sender: String) {
        if agents[sender]?.path == arguments.path { agentVanished(sender) }
    }

    /// PromptAnswer(s prompt_id, s answer): the person's Cancel or fallback,
    /// only from the agent that shows that sheet (same uid and session as
    /// the caller, checked when it was shown). Anything else is
    /// PermissionDenied, without saying whether the id exists.
    func answer(_ arguments: PromptAnswerArguments, caller: CallerRecord) throws(ServiceError) {
        guard let agent = agents[caller.sender], let sheet = sheets[arguments.promptID],
            sheet.agent == caller.sender, agent.uid == sheet.evaluation.uid, agent.uid == caller.uid
        else {
            throw ServiceErrors.permissionDenied("only the prompt agent that shows this evaluation may answer it")
        }
        Log.info("prompt \(arguments.promptID) of uid \(agent.uid): the person chose \(arguments.answer.rawValue)")
        sheet.record.interrupt(arguments.answer == .userCancel ? .userCancelled : .userFallback)
    }

    // MARK: Showing

    /// Looks up who asks and the caller's session (once, and only when an
    /// agent of the caller's uid is registered), then offers the sheet.
    private func resolveAndOffer(_ sheet: Sheet) async {
        if sheet.details == nil, !sheet.resolving, agents.values.contains(where: { $0.uid == sheet.evaluation.uid }) {
            sheet.resolving = true
            await resolve(sheet)
            ServiceActor.assertOnLoop()
        }
        offer(sheet)
    }

    /// Shows `sheet` on the agent of its caller's session, if one is
    /// registered and the sheet is still in progress and not shown yet.
    private func offer(_ sheet: Sheet) {
        guard sheet.agent == nil, sheetOfEvaluation[ObjectIdentifier(sheet.evaluation)] === sheet,
            let details = sheet.details, let session = sheet.callerSession,
            let agent = agents.values.first(where: { $0.serves(uid: sheet.evaluation.uid, session: session) })
        else { return }
        sheet.agent = agent.sender
        Log.info("prompt \(sheet.id) of uid \(agent.uid) shown by \(agent.sender)")
        seams.send(to: agent, LocalAuthPrompt.AgentMethod.showPrompt, [.string(sheet.id), .dictionary(details)])
        if let status = sheet.lastStatus {
            seams.send(to: agent, LocalAuthPrompt.AgentMethod.updatePrompt, [.string(sheet.id), .string(status)])
        }
    }

    /// Who asks (the trusted program, the declared name) and the caller's session.
    private func resolve(_ sheet: Sheet) async {
        let caller = seams.knownCaller(sheet.evaluation.sender)
        var session = LoginSession.none
        if let caller { session = await seams.session(of: caller) }
        ServiceActor.assertOnLoop()
        let prompt = sheet.evaluation.prompt
        var details: [String: DBusValue] = [
            LocalAuthPrompt.Detail.reason: .string(prompt.reason),
            LocalAuthPrompt.Detail.policy: .uint32(sheet.policy.rawValue),
        ]
        if let pid = caller?.livePID { details[LocalAuthPrompt.Detail.pid] = .uint32(pid) }
        // Who asks, as the service proved it; absent when it could not tell
        // (the agent then says so, and reads nothing itself: what the agent
        // could read of a process of its own uid, that uid can forge).
        if let program = caller.flatMap({ seams.program(of: $0) }) {
            details[LocalAuthPrompt.Detail.program] = .string(program)
        }
        if let title = prompt.cancelTitle { details[LocalAuthPrompt.Detail.cancelTitle] = .string(title) }
        if let title = prompt.fallbackTitle { details[LocalAuthPrompt.Detail.fallbackTitle] = .string(title) }
        if let name = prompt.appName { details[LocalAuthPrompt.Detail.appName] = .string(name) }
        sheet.details = details
        sheet.callerSession = session
        sheet.resolving = false
    }
}
