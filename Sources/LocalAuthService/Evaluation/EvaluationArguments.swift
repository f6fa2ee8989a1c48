import DBusCore
import LocalAuthShared

// The arguments of the Evaluator's methods, each decoded and validated in
// full once, at the top of its handler: one struct per method.

extension PolicyValue {
    /// A policy argument: 1 or 2, anything else is InvalidArgs.
    init(argument value: DBusValue?) throws(ServiceError) {
        guard let raw = value?.uint32, let policy = PolicyValue(rawValue: raw) else {
            throw ServiceErrors.invalidArgs(
                "unknown policy \(value?.uint32.map(String.init) ?? "?"); "
                    + "1 is deviceOwnerAuthenticationWithBiometrics, 2 deviceOwnerAuthentication")
        }
        self = policy
    }
}

/// CanEvaluatePolicy(u policy).
struct CanEvaluatePolicyArguments: CallArguments {
    let policy: PolicyValue

    init(_ arguments: [DBusValue]) throws(ServiceError) {
        policy = try PolicyValue(argument: arguments.first)
    }
}

/// EvaluatePolicy's (and AuthorizeRight's, VerifyUser's) `a{sv}` options.
struct EvaluationOptions {
    var requestID: String?
    var reuseDuration: Double = 0
    var interactionNotAllowed = false
    /// The app's prompt labels, kept with the evaluation for a prompt to show.
    var fallbackTitle: String?
    var cancelTitle: String?
    /// The name the app declares for itself, for the system sheet (not verified).
    var appName: String?

    init() {}

    init(_ value: DBusValue) throws(ServiceError) {
        guard let entries = value.stringKeyedDictionary else { throw ServiceErrors.invalidArgs("options must be a{sv}") }
        for (key, value) in entries {
            switch key {
            case LocalAuthBus.Option.requestID:
                guard let id = value.string else { throw ServiceErrors.invalidArgs("request-id must be a string") }
                guard !id.isEmpty, id.utf8.count <= LocalAuthBus.maximumTextLength else {
                    throw ServiceErrors.invalidArgs("request-id must be 1 to \(LocalAuthBus.maximumTextLength) bytes")
                }
                requestID = id
            case LocalAuthBus.Option.fallbackTitle, LocalAuthBus.Option.cancelTitle:
                guard let title = value.string else { throw ServiceErrors.invalidArgs("\(key) must be a string") }
                guard title.utf8.count <= LocalAuthBus.maximumTextLength else {
                    throw ServiceErrors.invalidArgs("\(key) is longer than \(LocalAuthBus.maximumTextLength) bytes")
                }
                if key == LocalAuthBus.Option.fallbackTitle { fallbackTitle = title } else { cancelTitle = title }
            case LocalAuthBus.Option.reuseDuration:
                guard let seconds = value.double, seconds.isFinite, seconds >= 0 else {
                    throw ServiceErrors.invalidArgs("reuse-duration must be a non-negative double (seconds)")
                }
                reuseDuration = min(seconds, LocalAuthBus.maximumReuseDuration)
            case LocalAuthPrompt.appNameOption:
                // Shown by the system sheet (Prompt/), marked as declared, not verified.
                guard let name = value.string, name.utf8.count <= LocalAuthBus.maximumTextLength else {
                    throw ServiceErrors.invalidArgs("app-name must be a string of at most \(LocalAuthBus.maximumTextLength) bytes")
                }
                appName = name.isEmpty ? nil : name
            case LocalAuthBus.Option.interactionNotAllowed:
                guard let flag = value.bool else { throw ServiceErrors.invalidArgs("interaction-not-allowed must be a boolean") }
                interactionNotAllowed = flag
            default:
                continue  // forward compatibility: unknown options are ignored
            }
        }
    }
}

/// EvaluatePolicy(u policy, s localized_reason, a{sv} options).
struct EvaluatePolicyArguments: CallArguments {
    var callRequestID: String? { options.requestID }
    let policy: PolicyValue
    let reason: String
    let options: EvaluationOptions

    init(_ arguments: [DBusValue]) throws(ServiceError) {
        policy = try PolicyValue(argument: arguments[0])
        guard let reason = arguments[1].string, !reason.trimmed.isEmpty else {
            throw ServiceErrors.invalidArgs("the localized reason must not be empty")
        }
        guard reason.utf8.count <= LocalAuthBus.maximumTextLength else {
            throw ServiceErrors.invalidArgs("the localized reason is longer than \(LocalAuthBus.maximumTextLength) bytes")
        }
        self.reason = reason
        options = try EvaluationOptions(arguments[2])
    }
}

/// VerifyUser(s user, a{sv} options).
struct VerifyUserArguments: CallArguments {
    var callRequestID: String? { options.requestID }
    /// An account's name: looked up only after polkit (and the root check)
    /// said yes, so a refused caller cannot probe which accounts exist.
    let user: String
    let options: EvaluationOptions

    init(_ arguments: [DBusValue]) throws(ServiceError) {
        guard let name = arguments[0].string, !name.isEmpty, name.utf8.count <= LocalAuthBus.maximumTextLength else {
            throw ServiceErrors.invalidArgs("user must be an account name of 1 to \(LocalAuthBus.maximumTextLength) bytes")
        }
        user = name
        options = try EvaluationOptions(arguments[1])
        loginSecretNonce = try LoginSecretNonce.read(arguments[1])
        pamService = try CallArgument.options(arguments[1]).option(
            LocalAuthBus.Option.pamService, \.string, "a PAM service name of 1 to 64 bytes", where: { (1...64).contains($0.utf8.count) })
    }
    /// The PAM service pam_localauth runs in: a root caller's word, for the
    /// context policy (ContextPolicy/) and the history's context (History/).
    let pamService: String?
    /// The PAM transaction's nonce a match's login-secret ticket is bound to (LoginSecret/).
    let loginSecretNonce: [UInt8]?
}

/// Cancel(s request_id).
struct CancelArguments: CallArguments {
    var endsCall: EndsCall? { EndsCall(requestID: requestID, reason: .appCancelled) }
    let requestID: String

    init(_ arguments: [DBusValue]) throws(ServiceError) {
        guard let id = arguments.first?.string else { throw ServiceErrors.invalidArgs("request id must be a string") }
        requestID = id
    }
}

/// EndEvaluation(s request_id, s reason): the person's cancel or fallback.
struct EndEvaluationArguments: CallArguments {
    var endsCall: EndsCall? { EndsCall(requestID: requestID, reason: interruption) }
    let requestID: String
    let interruption: Interruption

    init(_ arguments: [DBusValue]) throws(ServiceError) {
        guard arguments.count == 2, let id = arguments[0].string, let reason = arguments[1].string else {
            throw ServiceErrors.invalidArgs("EndEvaluation takes (ss)")
        }
        switch reason {
        case "user-cancel": interruption = .userCancelled
        case "user-fallback": interruption = .userFallback
        case "app-cancel": interruption = .appCancelled
        default:
            throw ServiceErrors.invalidArgs(
                "unknown reason \(ServiceErrors.echo(reason)); "
                    + "use user-cancel, user-fallback or app-cancel")
        }
        requestID = id
    }
}

/// ResetLockout(s user): "" is the caller.
struct ResetLockoutArguments: CallArguments {
    /// The named user; nil: the caller's own. Looked up only once polkit
    /// said yes, so a refused caller cannot probe which accounts exist.
    let user: String?

    init(_ arguments: [DBusValue]) throws(ServiceError) {
        guard let name = arguments.first?.string else { throw ServiceErrors.invalidArgs("ResetLockout takes (s)") }
        guard name.utf8.count <= LocalAuthBus.maximumTextLength else {
            throw ServiceErrors.invalidArgs("user must be at most \(LocalAuthBus.maximumTextLength) bytes")
        }
        user = name.isEmpty ? nil : name
    }
}
