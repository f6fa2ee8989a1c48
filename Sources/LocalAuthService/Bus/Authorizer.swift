internal import CGLib
internal import CPolkit
import LocalAuthShared

/// Asks the real polkitd whether a bus caller may perform an action.
///
/// The subject is always the caller's bus name (`system-bus-name`), which
/// polkit resolves itself, so sandboxed callers with foreign pids work too.
/// Anything but a clear "yes" is "no": polkit unreachable, an error, a timeout.
@ServiceActor
final class Authorizer {
    private var authority: GObjectRef?

    enum Decision: Sendable, Equatable {
        case authorized
        /// The person closed the agent's password prompt.
        case dismissed
        case denied(String)
    }

    /// polkit's answer as a decision: yes only when it says "authorized" and
    /// nothing else (a dismissed prompt is no, even if a buggy agent also set
    /// the authorized flag).
    nonisolated static func decision(authorized: Bool, dismissed: Bool, action: PolkitAction) -> Decision {
        decision(authorized: authorized, dismissed: dismissed, actionID: action.rawValue)
    }

    nonisolated static func decision(authorized: Bool, dismissed: Bool, actionID: String) -> Decision {
        if dismissed { return .dismissed }
        return authorized ? .authorized : .denied("polkit did not authorize \(actionID)")
    }

    /// Connects to polkit lazily; a failure is retried at the next check.
    private func currentAuthority() -> GObjectRef? {
        if let authority { return authority }
        do {
            let raw = try GLibError.check { polkit_authority_get_sync(nil, $0) }
            if let raw { authority = GObjectRef(taking: raw) }
        } catch {
            Log.warning("polkit authority unavailable: \(error)")
        }
        return authority
    }

    /// `interactive`: polkit may ask the person (through their agent) for a password.
    /// `details` go to polkit and its agent; `polkit.message` replaces the
    /// action's message in the password dialog (polkit honours it from a
    /// mechanism running as root, which the service is).
    func check(_ action: PolkitAction, busName: String, interactive: Bool, details: [String: String] = [:],
               timeout: Double = 25, cancellable: Cancellable = Cancellable()) async -> Decision {
        await check(actionID: action.rawValue, busName: busName, interactive: interactive, details: details,
                    timeout: timeout, cancellable: cancellable)
    }

    /// The same, for an action id of another contract (fprintd's: Fprintd/).
    func check(actionID: String, busName: String, interactive: Bool, details: [String: String] = [:],
               timeout: Double = 25, cancellable: Cancellable = Cancellable()) async -> Decision {
        guard let authority = currentAuthority() else {
            return .denied("the authorization service (polkit) cannot be reached")
        }
        let authorityPointer = authority.pointer
        guard let rawSubject = polkit_system_bus_name_new(busName) else {
            return .denied("polkit cannot name the caller \(busName)")
        }
        let subject = GObjectRef(taking: rawSubject)
        let subjectPointer = subject.pointer
        // No details object unless there are details (most checks).
        let detailsObject = details.isEmpty ? nil : polkit_details_new().map { GObjectRef(taking: $0) }
        for (key, value) in details { polkit_details_insert(detailsObject?.pointer, key, value) }
        let detailsPointer = detailsObject?.pointer
        let flags = interactive ? POLKIT_CHECK_AUTHORIZATION_FLAGS_ALLOW_USER_INTERACTION : POLKIT_CHECK_AUTHORIZATION_FLAGS_NONE
        // polkit's own D-Bus timeout is long; a stuck polkitd must not hold a caller.
        let timer = EventLoopTimers.after(timeout) { cancellable.cancel() }
        defer { timer.cancel() }
        do {
            let answer = try await glibAsync({ callback, data in
                polkit_authority_check_authorization(authorityPointer, subjectPointer, actionID, detailsPointer,
                                                     flags, cancellable.raw, callback, data)
            }, finish: { result -> Result<Decision, GLibError> in
                Result { () throws(GLibError) in
                    let answer = try GLibError.check { polkit_authority_check_authorization_finish(authorityPointer, result, $0) }
                    guard let answer else { return .denied("polkit gave no answer") }
                    defer { cglib_object_unref(UnsafeMutableRawPointer(answer)) }
                    return Self.decision(authorized: polkit_authorization_result_get_is_authorized(answer) != 0,
                                         dismissed: polkit_authorization_result_get_dismissed(answer) != 0,
                                         actionID: actionID)
                }
            })
            return answer
        } catch {
            Log.warning("polkit check of \(actionID) failed: \(error)")
            return .denied("the authorization service (polkit) did not answer: \(error)")
        }
    }
}
