/// The names of the prompt agent protocol (dbus/org.example.LocalAuth.PromptAgent.xml):
/// the system sheet that a program in the person's desktop session
/// (`localauth-prompt`) shows for the service, as polkit agents do for polkitd.
public enum LocalAuthPrompt {
    /// The interface an agent exports, at `agentObjectPath` by convention.
    public static let agentInterface = "org.example.LocalAuth.PromptAgent"
    public static let agentObjectPath = "/org/example/LocalAuth/PromptAgent"

    /// Methods of org.example.LocalAuth that agents call.
    public enum ServiceMethod {
        public static let registerPromptAgent = "RegisterPromptAgent"
        public static let unregisterPromptAgent = "UnregisterPromptAgent"
        public static let promptAnswer = "PromptAnswer"
    }

    /// Methods of org.example.LocalAuth.PromptAgent that the service calls.
    public enum AgentMethod {
        public static let showPrompt = "ShowPrompt"
        public static let updatePrompt = "UpdatePrompt"
        public static let closePrompt = "ClosePrompt"
    }

    /// Keys of ShowPrompt's `details` (a{sv}).
    public enum Detail {
        /// (s) who asks, as the service proved it (trusted): a sandboxed app's
        /// id ("flatpak:org.example.Vault", "snap:vault"), else the
        /// executable's path. The sheet's headline. Absent when the service
        /// could not tell; the agent then says so and reads nothing itself.
        public static let program = "program"
        /// (u) the asking process's pid, from the bus (informational).
        public static let pid = "pid"
        /// (s) the name the app declares for itself (untrusted, shown as
        /// declared, never as the headline); absent if none.
        public static let appName = "app-name"
        /// (s) the app's localizedReason.
        public static let reason = "reason"
        /// (s) the app's cancel title; absent: the default ("Cancel").
        public static let cancelTitle = "cancel-title"
        /// (s) the app's fallback title; absent: the default ("Enter Password");
        /// empty: no fallback button (Apple's rule).
        public static let fallbackTitle = "fallback-title"
        /// (u) the policy (1 biometrics, 2 device owner).
        public static let policy = "policy"
    }

    /// PromptAnswer's `answer`: the person's choice in the sheet.
    public enum Answer: String, Sendable, CaseIterable {
        case userCancel = "user-cancel"
        case userFallback = "user-fallback"
    }

    /// ClosePrompt's `outcome`. Agents treat an unknown outcome as `failed`.
    public enum Outcome: String, Sendable, CaseIterable {
        case success
        case failed
        case lockedOut = "locked-out"
        case cancelled
    }

    /// EvaluatePolicy's option (s) naming the app as it calls itself; shown
    /// beside the program the service sees, never instead of it.
    public static let appNameOption = "app-name"

    /// Registered agents at most, over all users.
    public static let maximumAgents = 64
    /// Prompt agents of one uid (one per login session it has).
    public static let maximumAgentsPerUser = 4

    /// Errors of the prompt methods (org.example.LocalAuth.Error.*).
    public static let agentExistsError = LocalAuthBus.errorPrefix + "PromptAgentExists"
}
