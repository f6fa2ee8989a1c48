import DBusCore
import Foundation
import LocalAuthShared
import Synchronization

/// A context for authenticating the person at this machine as its owner
/// (Apple's `LAContext`). Create one per authentication flow; it is safe to
/// use from any thread.
open class LAContext: NSObject, @unchecked Sendable {
    private struct State {
        var biometryType: LABiometryType = .none
        /// Set by a preflight: read BiometryType when the app first asks
        /// (usually no call: ServiceClient keeps it, as GDBusProxy would).
        var biometryTypeDue = false
        var localizedReason = ""
        var localizedFallbackTitle: String?
        var localizedCancelTitle: String?
        var reuseDuration: Double = 0
        var interactionNotAllowed = false
        var invalidated = false
        var pendingRequests: Set<String> = []
        var statusHandler: (@Sendable (LAEvaluationStatus) -> Void)?
        var domainState: Data?
        /// Set by a successful preflight: ask GetDomainState when the app first
        /// reads the domain state (few apps do; liblocalauth does the same).
        var domainStateDue = false
    }

    private let state = Mutex(State())
    private let statusContinuation: AsyncStream<LAEvaluationStatus>.Continuation

    /// Progress of this context's evaluations as an async sequence, for the
    /// app's own prompt (a Linux addition; it ends when the context is invalidated).
    public let evaluationStatusUpdates: AsyncStream<LAEvaluationStatus>

    /// Where `evaluationStatusHandler` runs: a private serial queue, never
    /// the library's bus thread nor the app's main thread.
    static let handlerQueue = DispatchQueue(label: "LocalAuthentication.evaluationStatusHandler")

    public override init() {
        (evaluationStatusUpdates, statusContinuation) = AsyncStream.makeStream(of: LAEvaluationStatus.self,
                                                                              bufferingPolicy: .bufferingNewest(32))
        super.init()
    }

    deinit { statusContinuation.finish() }

    /// The biometry this device has; known after `canEvaluatePolicy` was called.
    open var biometryType: LABiometryType {
        guard state.withLock({ $0.biometryTypeDue }) else { return state.withLock { $0.biometryType } }
        let raw = (try? ServiceClient.shared.biometryType()) ?? 0
        let type = LABiometryType(rawValue: Int(raw)) ?? .none
        return state.withLock { state in
            state.biometryType = type
            state.biometryTypeDue = false
            return type
        }
    }

    /// Apple shows this reason when a keychain query uses the context.
    /// Stored for code written for Apple's framework; `evaluatePolicy` sends
    /// its own `localizedReason` argument, which polkit's password dialog
    /// shows (policy 2). Nothing reads this property yet.
    open var localizedReason: String {
        get { state.withLock { $0.localizedReason } }
        set { state.withLock { $0.localizedReason = newValue } }
    }

    /// The fallback button's title: nil for the default, empty for no fallback.
    open var localizedFallbackTitle: String? {
        get { state.withLock { $0.localizedFallbackTitle } }
        set { state.withLock { $0.localizedFallbackTitle = newValue } }
    }

    open var localizedCancelTitle: String? {
        get { state.withLock { $0.localizedCancelTitle } }
        set { state.withLock { $0.localizedCancelTitle = newValue } }
    }

    /// Seconds within which a recent fingerprint success is accepted again
    /// without a scan; at most `LATouchIDAuthenticationMaximumAllowableReuseDuration`.
    open var touchIDAuthenticationAllowableReuseDuration: TimeInterval {
        get { state.withLock { $0.reuseDuration } }
        set { state.withLock { $0.reuseDuration = min(max(0, newValue), LATouchIDAuthenticationMaximumAllowableReuseDuration) } }
    }

    /// When true, an evaluation that would need the person fails with `notInteractive`.
    open var interactionNotAllowed: Bool {
        get { state.withLock { $0.interactionNotAllowed } }
        set { state.withLock { $0.interactionNotAllowed = newValue } }
    }

    /// Progress of this context's evaluations, for the app's own prompt
    /// ("place your finger", "try again"). Called on a private thread.
    /// A Linux addition: Apple shows a system sheet instead.
    open var evaluationStatusHandler: (@Sendable (LAEvaluationStatus) -> Void)? {
        get { state.withLock { $0.statusHandler } }
        set { state.withLock { $0.statusHandler = newValue } }
    }

    // MARK: Preflight

    /// Whether `policy` can be evaluated now; if not, `error` says why.
    /// Pass `&error` (a `NSError?` variable) or nil.
    open func canEvaluatePolicy(_ policy: LAPolicy, error: UnsafeMutablePointer<NSError?>?) -> Bool {
        do {
            try preflight(policy)
            error?.pointee = nil
            return true
        } catch let failure {
            error?.pointee = failure._nsError
            return false
        }
    }

    /// Throwing form of the preflight, for Swift code.
    open func preflight(_ policy: LAPolicy) throws(LAError) {
        try checkValid()
        guard let value = PolicyValue(rawValue: UInt32(policy.rawValue)) else {
            throw LAError(.watchNotAvailable)
        }
        // One round trip: BiometryType and the domain state are read when the
        // app asks for them (Apple: both are valid after this call).
        state.withLock { $0.biometryTypeDue = true }
        do {
            _ = try ServiceClient.shared.callBlocking(LocalAuthBus.Method.canEvaluatePolicy, [.uint32(value.rawValue)])
            // Apple sets the domain state after a successful biometric preflight.
            if policy == .deviceOwnerAuthenticationWithBiometrics || policy == .deviceOwnerAuthentication {
                state.withLock { $0.domainStateDue = true; $0.domainState = nil }
            }
        } catch {
            throw LAError(error)
        }
    }

    // MARK: Evaluation

    /// Asks the service to verify the owner. `reply` runs in a task on Swift's
    /// global concurrent executor: never the main thread, and the replies of
    /// two evaluations may run at the same time.
    open func evaluatePolicy(_ policy: LAPolicy, localizedReason: String,
                             reply: @escaping @Sendable (Bool, (any Error)?) -> Void) {
        Task {
            do {
                let success = try await self.evaluatePolicy(policy, localizedReason: localizedReason)
                reply(success, nil)
            } catch {
                reply(false, error)
            }
        }
    }

    /// Verifies the owner; returns true or throws an `LAError`. Discardable, as
    /// Apple's (imported from Objective-C) is: code often only awaits it.
    @discardableResult
    open func evaluatePolicy(_ policy: LAPolicy, localizedReason: String) async throws -> Bool {
        try await evaluate(policy, localizedReason: localizedReason)
    }

    private func evaluate(_ policy: LAPolicy, localizedReason: String) async throws(LAError) -> Bool {
        try checkValid()
        guard let value = PolicyValue(rawValue: UInt32(policy.rawValue)) else {
            throw LAError(.watchNotAvailable)
        }
        let requestID = UUID().uuidString
        let snapshot = state.withLock { state in
            state.pendingRequests.insert(requestID)
            return state
        }
        defer {
            state.withLock { _ = $0.pendingRequests.remove(requestID) }
            ServiceClient.shared.stopListening(to: requestID)
        }
        var options: [String: DBusValue] = [LocalAuthBus.Option.requestID: .string(requestID)]
        if snapshot.reuseDuration > 0 { options[LocalAuthBus.Option.reuseDuration] = .double(snapshot.reuseDuration) }
        if snapshot.interactionNotAllowed { options[LocalAuthBus.Option.interactionNotAllowed] = .boolean(true) }
        if let title = snapshot.localizedFallbackTitle { options[LocalAuthBus.Option.fallbackTitle] = .string(title) }
        if let title = snapshot.localizedCancelTitle { options[LocalAuthBus.Option.cancelTitle] = .string(title) }

        let continuation = statusContinuation
        ServiceClient.shared.listen(to: requestID) { [weak self] raw in
            let status = LAEvaluationStatus(rawValue: raw)
            continuation.yield(status)
            // Not on the library's bus thread: a handler may call the
            // library's blocking API (canEvaluatePolicy, say), which waits
            // for that thread. One serial queue keeps the statuses in order.
            guard let handler = self?.evaluationStatusHandler else { return }
            LAContext.handlerQueue.async { handler(status) }
        }
        do {
            // The service bounds the wait (its scan timeout); the call waits as long as the person takes.
            let reply = try await ServiceClient.shared.call(
                LocalAuthBus.Method.evaluatePolicy,
                [.uint32(value.rawValue), .string(localizedReason), .dictionary(options)],
                timeout: .infinity)
            return reply.first?.bool ?? false
        } catch {
            throw LAError(error)
        }
    }

    /// Cancels this context's pending evaluations (they fail with `appCancel`);
    /// afterwards every call fails with `invalidContext`.
    open func invalidate() {
        let pending = state.withLock { state in
            state.invalidated = true
            return state.pendingRequests
        }
        statusContinuation.finish()
        for requestID in pending {
            Task { _ = try? await ServiceClient.shared.call(LocalAuthBus.Method.cancel, [.string(requestID)]) }
        }
    }

    /// Ends this context's pending evaluations as the person chose in the app's
    /// own prompt: `.userCancel` (the cancel button), `.userFallback` (the
    /// fallback button) or `.appCancel`. The evaluation then fails with that
    /// code. A Linux addition: Apple's system sheet has these buttons itself.
    open func endEvaluation(as code: LAError.Code) {
        let reason: String
        switch code {
        case .userCancel: reason = "user-cancel"
        case .userFallback: reason = "user-fallback"
        default: reason = "app-cancel"
        }
        let pending = state.withLock { $0.pendingRequests }
        for requestID in pending {
            Task { _ = try? await ServiceClient.shared.call(LocalAuthBus.Method.endEvaluation, [.string(requestID), .string(reason)]) }
        }
    }

    private func checkValid() throws(LAError) {
        if state.withLock({ $0.invalidated }) { throw LAError(.invalidContext) }
    }

    // MARK: Domain state

    /// Opaque bytes that change when the set of enrolled fingers changes;
    /// nil until a `canEvaluatePolicy` succeeded (as on Apple's platforms).
    /// Read from the service at the first read after the preflight.
    open var evaluatedPolicyDomainState: Data? {
        guard state.withLock({ $0.domainStateDue }) else { return state.withLock { $0.domainState } }
        let bytes = try? ServiceClient.shared.callBlocking(LocalAuthBus.Method.getDomainState).first?.byteArray
        let data = bytes.map { Data($0) }
        return state.withLock { state in
            state.domainState = data
            state.domainStateDue = false
            return data
        }
    }

    /// The state of the authentication domains, as of the last successful preflight.
    open var domainState: LADomainState {
        LADomainState(biometry: LADomainStateBiometry(biometryType: biometryType, stateHash: evaluatedPolicyDomainState))
    }
}

/// Apple's `LADomainState`: what the preflight saw of each domain.
open class LADomainState: NSObject, @unchecked Sendable {
    /// The biometric domain: the kind of biometry and a hash of the enrolled set.
    public let biometry: LADomainStateBiometry
    /// A hash over all domains; here the biometric one is the only domain.
    open var stateHash: Data? { biometry.stateHash }

    init(biometry: LADomainStateBiometry) {
        self.biometry = biometry
    }
}

/// Apple's `LADomainStateBiometry`.
open class LADomainStateBiometry: NSObject, @unchecked Sendable {
    public let biometryType: LABiometryType
    /// Changes when a fingerprint is added, replaced or removed.
    public let stateHash: Data?

    init(biometryType: LABiometryType, stateHash: Data?) {
        self.biometryType = biometryType
        self.stateHash = stateHash
    }
}

/// What an app's prompt should say during an evaluation (a Linux addition).
public struct LAEvaluationStatus: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let placeFinger = LAEvaluationStatus(rawValue: EvaluationProgress.placeFinger.rawValue)
    public static let retryScan = LAEvaluationStatus(rawValue: EvaluationProgress.retryScan.rawValue)
    public static let swipeTooShort = LAEvaluationStatus(rawValue: EvaluationProgress.swipeTooShort.rawValue)
    public static let fingerNotCentered = LAEvaluationStatus(rawValue: EvaluationProgress.fingerNotCentered.rawValue)
    public static let removeAndRetry = LAEvaluationStatus(rawValue: EvaluationProgress.removeAndRetry.rawValue)
    public static let tooFast = LAEvaluationStatus(rawValue: EvaluationProgress.tooFast.rawValue)
    public static let noMatch = LAEvaluationStatus(rawValue: EvaluationProgress.noMatch.rawValue)
    /// Another program (fprintd, the lock screen) holds the reader; the
    /// service waits for it until the scan timeout.
    public static let readerBusy = LAEvaluationStatus(rawValue: EvaluationProgress.readerBusy.rawValue)

    /// A sentence for a prompt.
    public var message: String {
        switch self {
        case .placeFinger: "Place your finger on the reader."
        case .retryScan: "Scan not clear; try again."
        case .swipeTooShort: "Swipe was too short; try again."
        case .fingerNotCentered: "Finger not centered; try again."
        case .removeAndRetry: "Remove your finger and try again."
        case .tooFast: "Too fast; hold your finger on the reader a little longer."
        case .noMatch: "Not recognized; try again."
        case .readerBusy: "The reader is in use by another program; waiting for it."
        default: rawValue
        }
    }
}
