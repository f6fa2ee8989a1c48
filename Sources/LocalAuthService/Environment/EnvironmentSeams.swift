import DBusCore
import LocalAuthShared

/// What the Environment component reads and tells (Environment.swift): the
/// readers and the lid, the enrolled prints, the lockout and the accounts,
/// the callers' apps and sessions, and the bus. The service gives the real
/// ones (EnvironmentWiring.swift); the unit tests give fakes. Sleep's own
/// seams are SleepSeams (Readers/SleepCycle.swift).
@ServiceActor
protocol EnvironmentSeams {
    // The readers (Readers, ReaderChoice) and the lid (Logind).
    var readersPresent: Bool { get }
    var hasBuiltInReader: Bool { get }
    var lidClosed: Bool { get }
    /// The reader that would serve `uid` with the lid open.
    func readerWithLidOpen(for uid: UInt32) -> Readers.Identity?
    func isEnrolled(_ uid: UInt32, on reader: Readers.Identity) -> Bool
    func enrolledSetHash(uid: UInt32, reader: Readers.Identity) -> [UInt8]
    /// The lid closed over the built-in readers: their operations end.
    func interruptBuiltInReaders()

    // The user (the evaluator's lockout and prints, the accounts).
    func isLockedOut(_ uid: UInt32) -> Bool
    /// Whether a fingerprint evaluation could start for `uid` now (usable prints).
    func hasUsablePrints(_ uid: UInt32) -> Bool
    func hasPassword(_ uid: UInt32) -> Bool
    /// Whether /etc/shadow or /etc/passwd changed since this was last asked
    /// (a password set, changed or locked: everyone's `passwordSet` again).
    func accountsChanged() -> Bool

    // The caller (Callers/).
    func appKey(of caller: CallerRecord) -> String
    /// The caller's presence if it is known without asking logind.
    func knownPresence(of caller: CallerRecord) -> Presence?
    /// The caller's presence, asking logind now.
    func presence(of caller: CallerRecord) async -> Presence

    // The service and the bus.
    /// EnvironmentChanged(state), unicast to `sender`.
    func emitEnvironmentChanged(_ state: [String: DBusValue], to sender: String)
}
