import DBusCore
import Foundation
import LocalAuthShared
import Synchronization

/// Apple's `LAEnvironment` (iOS 18, macOS 15): the authentication mechanisms
/// of the current user, and observers told when they change (a finger
/// enrolled or deleted, the lockout, a reader plugged or unplugged, the lid,
/// sleep). The state comes from localauthd (GetEnvironment); changes come as
/// its EnvironmentChanged signal, sent only to this process's connection and
/// believed only from the service's real owner.
open class LAEnvironment: NSObject, @unchecked Sendable {
    public typealias State = LAEnvironmentState
    public typealias Mechanism = LAEnvironmentMechanism
    public typealias MechanismBiometry = LAEnvironmentMechanismBiometry
    public typealias MechanismUserPassword = LAEnvironmentMechanismUserPassword

    /// The environment of the user this process runs as.
    public static let currentUser = LAEnvironment(client: .shared)

    private struct Observers {
        var entries: [WeakObserver] = []
        var subscribed = false
        var last: LAEnvironmentState?
    }
    private let observers = Mutex(Observers())
    private let client: ServiceClient

    private init(client: ServiceClient) {
        self.client = client
        super.init()
    }

    /// The current state; without the service, no mechanism at all.
    open var state: LAEnvironmentState {
        guard let values = try? client.callBlocking(LocalAuthBus.Method.getEnvironment),
              let dictionary = values.first?.stringKeyedDictionary else { return LAEnvironmentState(nil) }
        return LAEnvironmentState(dictionary)
    }

    /// Adds an observer, held weakly (as Apple's): it is told of each change
    /// once, on a private serial queue, with the state before it.
    open func addObserver(_ observer: any LAEnvironmentObserver) {
        let entry = WeakObserver(value: observer)
        let subscribe = observers.withLock { state -> Bool in
            state.entries.removeAll { $0.value == nil || $0.value === entry.value }
            state.entries.append(entry)
            defer { state.subscribed = true }
            return !state.subscribed
        }
        guard subscribe else { return }
        client.listenForEnvironment { [weak self] values in self?.changed(values) }
        // The service exits when idle, subscribers or not: when it is started
        // again, subscribe again and tell the observers what changed meanwhile.
        client.listenForServiceStart { [weak self] in self?.serviceStarted() }
        if let values = try? client.callBlocking(LocalAuthBus.Method.subscribeEnvironment),
           let dictionary = values.first?.stringKeyedDictionary {
            let baseline = LAEnvironmentState(dictionary)
            observers.withLock { $0.last = $0.last ?? baseline }
        } else {
            observers.withLock { $0.subscribed = false }
        }
    }

    open func removeObserver(_ observer: any LAEnvironmentObserver) {
        let entry = WeakObserver(value: observer)
        let unsubscribe = observers.withLock { state -> Bool in
            state.entries.removeAll { $0.value == nil || $0.value === entry.value }
            guard state.entries.isEmpty, state.subscribed else { return false }
            state.subscribed = false
            state.last = nil
            return true
        }
        guard unsubscribe else { return }
        _ = try? client.callBlocking(LocalAuthBus.Method.unsubscribeEnvironment)
    }

    private func serviceStarted() {
        guard observers.withLock({ $0.subscribed }) else { return }
        let client = self.client
        Task { [weak self] in
            guard let values = try? await client.call(LocalAuthBus.Method.subscribeEnvironment),
                  let dictionary = values.first?.stringKeyedDictionary else { return }
            self?.changed(dictionary)
        }
    }

    private func changed(_ values: [String: DBusValue]) {
        let new = LAEnvironmentState(values)
        let (old, targets) = observers.withLock { state -> (LAEnvironmentState?, [any LAEnvironmentObserver]) in
            let old = state.last
            state.last = new
            state.entries.removeAll { $0.value == nil }
            return (old, state.entries.compactMap(\.value))
        }
        guard let old, old != new else { return }
        // Observers are the app's objects, called on the one private serial
        // queue of the library's handlers, as evaluation status handlers are.
        let delivery = Delivery(observers: targets, old: old)
        LAContext.handlerQueue.async {
            for observer in delivery.observers { observer.environment(self, stateDidChangeFromOldState: delivery.old) }
        }
    }
}

private struct Delivery: @unchecked Sendable {
    let observers: [any LAEnvironmentObserver]
    let old: LAEnvironmentState
}

private struct WeakObserver: @unchecked Sendable {
    weak var value: (any LAEnvironmentObserver)?
}

/// Apple's `LAEnvironmentObserver`.
public protocol LAEnvironmentObserver: AnyObject {
    func environment(_ environment: LAEnvironment, stateDidChangeFromOldState oldState: LAEnvironmentState)
}

extension LAEnvironmentObserver {
    /// Optional in Apple's protocol.
    public func environment(_ environment: LAEnvironment, stateDidChangeFromOldState oldState: LAEnvironmentState) {}
}

/// Apple's `LAEnvironment.State`: a snapshot.
open class LAEnvironmentState: NSObject, @unchecked Sendable {
    /// The fingerprint reader; nil when there is none.
    public let biometry: LAEnvironmentMechanismBiometry?
    /// The account password; nil when the service cannot be reached.
    public let userPassword: LAEnvironmentMechanismUserPassword?
    /// No companion devices on Linux.
    public var companions: [LAEnvironmentMechanism] { [] }
    public var allMechanisms: [LAEnvironmentMechanism] {
        [biometry as LAEnvironmentMechanism?, userPassword].compactMap { $0 }
    }

    init(_ values: [String: DBusValue]?) {
        typealias Key = LocalAuthBus.EnvironmentKey
        guard let values else {
            biometry = nil
            userPassword = nil
            super.init()
            return
        }
        let type = values[Key.biometryType]?.uint32.flatMap { LABiometryType(rawValue: Int($0)) } ?? LABiometryType.none
        biometry = type == .none ? nil : LAEnvironmentMechanismBiometry(
            biometryType: type, isUsable: values[Key.biometryUsable]?.bool ?? false,
            isEnrolled: values[Key.biometryEnrolled]?.bool ?? false,
            isLockedOut: values[Key.biometryLockedOut]?.bool ?? false,
            stateHash: Data(values[Key.biometryStateHash]?.byteArray ?? []),
            builtInSensorInaccessible: values[Key.builtInSensorInaccessible]?.bool ?? false)
        let passwordSet = values[Key.passwordSet]?.bool ?? false
        userPassword = LAEnvironmentMechanismUserPassword(isSet: passwordSet)
        super.init()
    }

    open override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? LAEnvironmentState else { return false }
        return biometry == other.biometry && userPassword == other.userPassword
    }
    open override var hash: Int { (biometry?.hash ?? 0) &+ 31 &* (userPassword?.hash ?? 0) }
    open override var description: String {
        "LAEnvironment.State(biometry: \(biometry.map(\.description) ?? "nil"), userPassword: \(userPassword.map(\.description) ?? "nil"))"
    }
}

/// Apple's `LAEnvironment.Mechanism`.
open class LAEnvironmentMechanism: NSObject, @unchecked Sendable {
    /// Whether it can be used to authenticate now.
    public let isUsable: Bool
    public let localizedName: String
    public let iconSystemName: String

    init(isUsable: Bool, localizedName: String, iconSystemName: String) {
        self.isUsable = isUsable
        self.localizedName = localizedName
        self.iconSystemName = iconSystemName
    }
}

/// Apple's `LAEnvironment.MechanismBiometry`.
open class LAEnvironmentMechanismBiometry: LAEnvironmentMechanism, @unchecked Sendable {
    public let biometryType: LABiometryType
    public let isEnrolled: Bool
    /// Too many failed matches, or the password is required first (after boot).
    public let isLockedOut: Bool
    /// Changes exactly when the enrolled set changes; different for each app.
    public let stateHash: Data
    /// The built-in reader cannot be touched (the lid is closed), or the
    /// system is going to sleep.
    public let builtInSensorInaccessible: Bool

    init(biometryType: LABiometryType, isUsable: Bool, isEnrolled: Bool, isLockedOut: Bool, stateHash: Data,
         builtInSensorInaccessible: Bool) {
        self.biometryType = biometryType
        self.isEnrolled = isEnrolled
        self.isLockedOut = isLockedOut
        self.stateHash = stateHash
        self.builtInSensorInaccessible = builtInSensorInaccessible
        super.init(isUsable: isUsable, localizedName: "Fingerprint", iconSystemName: "touchid")
    }

    open override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? LAEnvironmentMechanismBiometry else { return false }
        return biometryType == other.biometryType && isUsable == other.isUsable && isEnrolled == other.isEnrolled
            && isLockedOut == other.isLockedOut && stateHash == other.stateHash
            && builtInSensorInaccessible == other.builtInSensorInaccessible
    }
    open override var hash: Int { stateHash.hashValue ^ (isEnrolled ? 1 : 0) ^ (isLockedOut ? 2 : 0) }
    open override var description: String {
        "biometry(type: \(biometryType.rawValue), usable: \(isUsable), enrolled: \(isEnrolled), lockedOut: \(isLockedOut), "
            + "builtInSensorInaccessible: \(builtInSensorInaccessible))"
    }
}

/// Apple's `LAEnvironment.MechanismUserPassword`.
open class LAEnvironmentMechanismUserPassword: LAEnvironmentMechanism, @unchecked Sendable {
    /// Whether the account has a password.
    public let isSet: Bool

    init(isSet: Bool) {
        self.isSet = isSet
        super.init(isUsable: isSet, localizedName: "Password", iconSystemName: "key")
    }

    open override func isEqual(_ object: Any?) -> Bool {
        (object as? LAEnvironmentMechanismUserPassword)?.isSet == isSet
    }
    open override var hash: Int { isSet ? 1 : 0 }
    open override var description: String { "userPassword(isSet: \(isSet))" }
}
