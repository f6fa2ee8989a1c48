import DBusCore
import Foundation
import LocalAuthShared

/// Apple's `LABiometryFallbackRequirement`.
public final class LABiometryFallbackRequirement: NSObject, Sendable {
    enum Kind: Sendable { case none, devicePasscode }
    let kind: Kind
    init(_ kind: Kind) { self.kind = kind }

    /// No fallback: biometry only.
    public static let `default` = LABiometryFallbackRequirement(.none)
    /// The account password when biometry fails or is unavailable.
    public static let devicePasscode = LABiometryFallbackRequirement(.devicePasscode)
}

/// Apple's `LAAuthenticationRequirement`: what unlocks a right.
public final class LAAuthenticationRequirement: NSObject, Sendable {
    let name: RightRequirementName
    init(_ name: RightRequirementName) { self.name = name }

    /// A fingerprint or the account password.
    public static let `default` = LAAuthenticationRequirement(.default)
    /// Any enrolled fingerprint.
    public static let biometry = LAAuthenticationRequirement(.biometry)
    /// A fingerprint of the set enrolled when the right is saved; once a
    /// finger is added or removed the right cannot be authorized again.
    public static let biometryCurrentSet = LAAuthenticationRequirement(.biometryCurrentSet)
    /// A fingerprint, with a fallback.
    public static func biometry(fallback: LABiometryFallbackRequirement) -> LAAuthenticationRequirement {
        fallback.kind == .devicePasscode ? LAAuthenticationRequirement(.biometryOrPassword) : .biometry
    }
}

/// Apple's `LARight`: a grouping of requirements that gate an operation.
/// A right that is not persisted is authorized with an evaluation of its
/// requirement; an `LAPersistedRight` (from `LARightStore`) additionally
/// gives its key and secret while authorized.
open class LARight: NSObject, @unchecked Sendable {
    /// Apple's `LARight.State`.
    public enum State: Int, Sendable {
        case unknown = 0
        case authorizing = 1
        case authorized = 2
        case notAuthorized = 3
    }

    let lock = NSLock()
    private var storedState: State = .unknown
    private var storedTag = 0
    let requirement: LAAuthenticationRequirement

    public override init() {
        requirement = .default
        super.init()
    }

    public init(requirement: LAAuthenticationRequirement) {
        self.requirement = requirement
        super.init()
    }

    /// The authorization state.
    open var state: State {
        lock.withLock { storedState }
    }

    /// An app-defined tag.
    open var tag: Int {
        get { lock.withLock { storedTag } }
        set { lock.withLock { storedTag = newValue } }
    }

    func setState(_ state: State) { lock.withLock { storedState = state } }

    /// Authorizes the right: the person is verified with its requirement.
    open func authorize(localizedReason: String) async throws {
        setState(.authorizing)
        do {
            try await performAuthorization(localizedReason: localizedReason)
            setState(.authorized)
        } catch {
            setState(.notAuthorized)
            throw error
        }
    }

    /// Throws why the right cannot be authorized now.
    open func checkCanAuthorize() async throws {
        let policy: LAPolicy = requirement.name == .biometry || requirement.name == .biometryCurrentSet
            ? .deviceOwnerAuthenticationWithBiometrics : .deviceOwnerAuthentication
        var error: NSError?
        guard LAContext().canEvaluatePolicy(policy, error: &error) else {
            throw error.map { LAError(_nsError: $0) } ?? LAError(.biometryNotAvailable)
        }
    }

    /// Ends the authorization.
    open func deauthorize() async {
        await performDeauthorization()
        setState(.notAuthorized)
    }

    // For LAPersistedRight.
    func performAuthorization(localizedReason: String) async throws {
        let policy: LAPolicy = requirement.name == .biometry || requirement.name == .biometryCurrentSet
            ? .deviceOwnerAuthenticationWithBiometrics : .deviceOwnerAuthentication
        _ = try await LAContext().evaluatePolicy(policy, localizedReason: localizedReason)
    }

    func performDeauthorization() async {}
}

/// Apple's `LAPersistedRight`: a right kept by the service, with a P-256
/// private key (used only in the service, only while authorized) and an
/// optional secret.
public final class LAPersistedRight: LARight, @unchecked Sendable {
    let identifier: String
    let appID: String
    private var handle: String?

    /// The right's private key; its operations need the right authorized.
    public private(set) var key: LAPrivateKey!
    /// The right's secret; `loadData()` needs the right authorized.
    public private(set) var secret: LASecret!

    init(identifier: String, appID: String, requirement: LAAuthenticationRequirement, publicKey: Data) {
        self.identifier = identifier
        self.appID = appID
        super.init(requirement: requirement)
        key = LAPrivateKey(right: self, publicKey: LAPublicKey(bytes: publicKey))
        secret = LASecret(right: self)
    }

    deinit {
        // The service ends an authorization when its connection leaves or
        // after 5 minutes; a right that goes away ends it now.
        guard let handle else { return }
        Task.detached { _ = try? await ServiceClient.shared.call(LocalAuthRightsBus.Method.deauthorize, [.string(handle)]) }
    }

    var options: [String: DBusValue] { [LocalAuthRightsBus.Option.appID: .string(appID)] }

    /// The handle of the current authorization, or `LAError.notInteractive`.
    func currentHandle() throws -> String {
        guard let handle = lock.withLock({ handle }) else {
            throw LAError(.notInteractive, message: "The right is not authorized; call authorize(localizedReason:) first.",
                          dbusErrorName: LocalAuthRightsError.notAuthorized)
        }
        return handle
    }

    override func performAuthorization(localizedReason: String) async throws {
        let reply: [DBusValue]
        do {
            reply = try await ServiceClient.shared.call(
                LocalAuthRightsBus.Method.authorizeRight,
                [.string(identifier), .string(localizedReason), .dictionary(options)], timeout: .infinity)
        } catch {
            throw LAError(rights: error)
        }
        guard let handle = reply.first?.string else { throw LAError(.systemCancel, message: "The service gave no authorization.") }
        lock.withLock { self.handle = handle }
    }

    public override func checkCanAuthorize() async throws {
        do {
            _ = try await ServiceClient.shared.call(LocalAuthRightsBus.Method.canAuthorizeRight,
                                                    [.string(identifier), .dictionary(options)])
        } catch {
            throw LAError(rights: error)
        }
    }

    override func performDeauthorization() async {
        guard let handle = lock.withLock({ () -> String? in defer { self.handle = nil }; return self.handle }) else { return }
        _ = try? await ServiceClient.shared.call(LocalAuthRightsBus.Method.deauthorize, [.string(handle)])
    }

    /// A call with the current authorization handle first.
    func callAuthorized(_ member: String, _ arguments: [DBusValue]) async throws -> [DBusValue] {
        let handle = try currentHandle()
        do {
            return try await ServiceClient.shared.call(member, [.string(handle)] + arguments)
        } catch {
            if error.name.rawValue == LocalAuthRightsError.notAuthorized || error.name.rawValue == LocalAuthRightsError.rightInvalidated {
                lock.withLock { self.handle = nil }
                setState(.notAuthorized)
            }
            throw LAError(rights: error)
        }
    }
}

/// Apple's `LASecret`: the secret of a persisted right.
public final class LASecret: NSObject, @unchecked Sendable {
    weak var right: LAPersistedRight?
    init(right: LAPersistedRight) { self.right = right }

    /// The secret, while the right is authorized.
    public func loadData() async throws -> Data {
        guard let right else { throw LAError(.invalidContext) }
        let reply = try await right.callAuthorized(LocalAuthRightsBus.Method.loadSecret, [])
        return Data(reply.first?.byteArray ?? [])
    }
}

extension LAError {
    /// An error of the rights methods as Apple's LAError (docs/APPLE-PARITY.md):
    /// a missing right, a dead `.biometryCurrentSet` right and a right saved
    /// without a secret are `.invalidContext`; an unauthorized use is
    /// `.notInteractive`; the D-Bus name stays in `dbusErrorName`.
    init(rights error: DBusError) {
        let name = error.name.rawValue
        switch name {
        case LocalAuthRightsError.rightNotFound:
            self.init(.invalidContext, message: "No right is stored under this identifier.", dbusErrorName: name)
        case LocalAuthRightsError.rightInvalidated:
            self.init(.invalidContext, message: "The right can no longer be used: the enrolled fingerprints changed since it was saved.",
                      dbusErrorName: name)
        case LocalAuthRightsError.noSecret:
            self.init(.invalidContext, message: "The right was saved without a secret.", dbusErrorName: name)
        case LocalAuthRightsError.notAuthorized:
            self.init(.notInteractive, message: "The right is not authorized (\(error.message)).", dbusErrorName: name)
        case LocalAuthServiceError.limitExceeded:
            self.init(.invalidContext, message: "A limit was reached: \(error.message)", dbusErrorName: name)
        case LocalAuthServiceError.storageFailed:
            self.init(.systemCancel, message: "The right could not be read or written: \(error.message)", dbusErrorName: name)
        default:
            self.init(error)
        }
    }
}
