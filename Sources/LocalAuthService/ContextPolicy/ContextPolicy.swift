import Glibc
import LocalAuthShared

/// Where the finger is enough (docs/POLICY.md): the administrator's
/// machine-wide file, each person's own tightening of it, and the one check
/// every context goes through. The rest of the service reaches it through
/// a few hooks at the start of calls (ContextPolicyHooks.swift), so that
/// a refused context is answered at once, before any scan.
@ServiceActor
final class ContextPolicy {
    /// The policy of the running service (set once at start). nil: no
    /// policy installed (the unit tests of other components): every context on.
    static var current: ContextPolicy?

    /// The administrator's file: read at start and on SIGHUP.
    let machineFile: String
    private(set) var machine = PolicyFile.allOn
    private let people: PersonPolicyStore
    /// Who a caller is (Callers.identity): its proven program.
    private let identify: @ServiceActor (CallerRecord) -> CallerIdentity

    init(machineFile: String, stateDirectory: String, identify: @escaping @ServiceActor (CallerRecord) -> CallerIdentity) {
        self.machineFile = machineFile
        self.identify = identify
        people = PersonPolicyStore(directory: stateDirectory + "/context-policy")
        reload()
    }

    /// Reads the administrator's file again: at start and on SIGHUP
    /// (`systemctl reload localauthd`). No file: every context on (the
    /// finger as before there was a policy). A file with an error, or one
    /// that cannot be read: every context off, and the error logged.
    func reload() {
        switch Posix.readFileOrErrno(machineFile) {
        case .success(let bytes):
            switch PolicyFile.parse(bytes) {
            case .success(let policy):
                machine = policy
                let off = policy.off.sorted().map(\.rawValue)
                Log.info("policy \(machineFile) read: the finger is off for \(off.isEmpty ? "no context" : off.joined(separator: ", "))")
            case .failure(let problem):
                machine = .allOff
                Log.error(
                    "policy \(machineFile)\(problem.line > 0 ? ":\(problem.line)" : ""): \(problem.message); "
                        + "the fingerprint is off in every context until it is fixed (systemctl reload localauthd)")
            }
        case .failure(let error) where error.code == ENOENT:
            machine = .allOn
        case .failure(let error):
            machine = .allOff
            Log.error("policy \(machineFile) cannot be read (\(error)); the fingerprint is off in every context")
        }
    }

    /// What a person's account allows: the machine's policy, tightened by their own choices.
    func effective(for uid: UInt32) -> PolicyFile {
        PolicyFile.effective(machine: machine, person: people.policy(of: uid))
    }

    /// A person's own choices (what they tightened).
    func personal(of uid: UInt32) -> PolicyFile { people.policy(of: uid) }

    /// Sets `uid`'s own choice for `context`. Turning it on again only
    /// undoes their own tightening: the machine's off stays off (`effective`).
    func set(_ context: AuthContext, on: Bool, for uid: UInt32, by caller: UInt32) throws(ServiceError) {
        do {
            try people.set(context, on: on, for: uid)
        } catch {
            throw ServiceError(.storageFailed, "could not save the fingerprint policy")
        }
        Log.info("fingerprint policy of uid \(uid): \(context.rawValue) \(on ? "on" : "off") (set by uid \(caller))")
    }

    /// The one check: nil if every context of the call allows the finger for
    /// `uid`, else the refusal, logged. Every refused context goes through
    /// here (and only here): the place a history of decisions hooks in.
    /// `logged` false: a preflight (CanEvaluatePolicy), which refuses no
    /// finger and which an app may repeat at every change it observes.
    func refusal(
        _ contexts: Set<AuthContext>, uid: UInt32, caller: CallerRecord, method: String, logged: Bool = true
    ) -> ServiceError? {
        let person = people.policy(of: uid)
        let refused = contexts.sorted().filter { !machine.allows($0) || !person.allows($0) }
        guard let first = refused.first else { return nil }
        let byMachine = !machine.allows(first)
        let names = refused.map(\.rawValue).joined(separator: ", ")
        let error = ServiceErrors.la(
            .biometryNotAvailable,
            "the fingerprint is turned off for \(names) by \(byMachine ? "this machine's policy" : "the user's own choice")")
        guard logged else { return error }
        let program = identify(caller).program ?? "an unidentified program"
        Log.warning(
            "fingerprint refused by policy: \(names) is off for uid \(uid) "
                + "(\(byMachine ? "the machine's policy \(machineFile)" : "the user's own choice")); "
                + "\(method) from \(program), uid \(caller.uid)")
        return error
    }

    /// The proven program of a caller, for the hooks.
    func executable(of caller: CallerRecord) -> String? { identify(caller).executable }
}

/// Each person's own choices, `<state>/context-policy/<uid>` in the policy
/// file's format: at most one file per uid, at most `PolicyFile.maximumBytes`
/// (docs/SECURITY.md, "Limits"), written only through SetContextPolicy for
/// the caller's own uid (or by root). A file that cannot be read or parsed
/// fails closed: every context off for that person, logged.
@ServiceActor
final class PersonPolicyStore {
    private let directory: String
    private var cache: [UInt32: PolicyFile] = [:]

    init(directory: String) { self.directory = directory }

    func policy(of uid: UInt32) -> PolicyFile {
        if let cached = cache[uid] { return cached }
        let path = "\(directory)/\(uid)"
        switch Posix.readFileOrErrno(path) {
        case .success(let bytes):
            switch PolicyFile.parse(bytes) {
            case .success(let policy):
                cache[uid] = policy
                return policy
            case .failure(let problem):
                Log.error("fingerprint policy file \(path):\(problem.line): \(problem.message); the finger is off in every context for uid \(uid)")
                cache[uid] = .allOff
                return .allOff
            }
        case .failure(let error) where error.code == ENOENT:
            cache[uid] = .allOn
            return .allOn
        case .failure(let error):
            // Not cached: a passing fault ends with it, a lasting one stays closed.
            Log.error("fingerprint policy file \(path) cannot be read (\(error)); the finger is off in every context for uid \(uid)")
            return .allOff
        }
    }

    func set(_ context: AuthContext, on: Bool, for uid: UInt32) throws(FileError) {
        var policy = policy(of: uid)
        if on { policy.off.remove(context) } else { policy.off.insert(context) }
        let path = "\(directory)/\(uid)"
        if policy == .allOn {
            _ = try AtomicFile.remove(path)
        } else {
            try AtomicFile.makeDirectory(directory)
            try AtomicFile.write(Array(policy.text.utf8), to: path)
        }
        cache[uid] = policy
    }
}
