import DBusCore
import LocalAuthShared

// Wiring only: the readers, logind, reader choice, lockout, callers and bus
// as the Environment component's seams, and what sleep acts on. Each
// adapter is given the components it uses, not the service.

@ServiceActor
struct ServiceEnvironmentSeams: EnvironmentSeams {
    let readers: Readers
    let logind: Logind
    let readerChoice: ReaderChoice
    let prints: PrintStore
    let queue: SensorQueue
    let evaluator: Evaluator
    let callers: Callers
    let bus: BusConnection
    private let passwordSet = PasswordSetCache()

    var readersPresent: Bool { readers.isPresent }
    var hasBuiltInReader: Bool { !readers.builtIn.isEmpty }
    var lidClosed: Bool { logind.lidClosed }
    func readerWithLidOpen(for uid: UInt32) -> Readers.Identity? { readerChoice.readerWithLidOpen(for: uid) }
    func isEnrolled(_ uid: UInt32, on reader: Readers.Identity) -> Bool { !prints.prints(of: uid, for: reader).isEmpty }
    func enrolledSetHash(uid: UInt32, reader: Readers.Identity) -> [UInt8] { readerChoice.enrolledSetHash(uid: uid, reader: reader) }
    func interruptBuiltInReaders() { queue.interrupt(on: readers.builtIn, .lidClosed) }
    func isLockedOut(_ uid: UInt32) -> Bool { evaluator.verifier.isLockedOut(uid) }
    func hasUsablePrints(_ uid: UInt32) -> Bool { (try? evaluator.checkBiometricsUsable(for: uid)) != nil }
    func hasPassword(_ uid: UInt32) -> Bool { passwordSet.hasPassword(uid) }
    func accountsChanged() -> Bool { passwordSet.changedSinceLastAsked() }
    func appKey(of caller: CallerRecord) -> String { callers.identity(caller).stateKey }
    func knownPresence(of caller: CallerRecord) -> Presence? { callers.knownPresence(caller) }
    func presence(of caller: CallerRecord) async -> Presence { await callers.presence(caller) }
    func emitEnvironmentChanged(_ state: [String: DBusValue], to sender: String) {
        try? bus.emit(
            path: ObjectPath(stringLiteral: LocalAuthBus.objectPath), interface: LocalAuthBus.interface,
            member: LocalAuthBus.Signal.environmentChanged, arguments: [.dictionary(state)],
            destination: sender)
    }
}

/// What the sleep cycle acts on: the reader queue and the readers (every
/// operation ends, every reader closes) and logind's inhibitor. Made before
/// the reader choice and the Environment: what they must hear is an event.
@ServiceActor
struct ServiceSleepSeams: SleepSeams {
    let queue: SensorQueue
    let registry: CallRegistry
    let readers: Readers
    let logind: Logind
    let events: ServiceEvents

    func endReaderWork() {
        // Every operation holding or waiting for a reader, whatever call it
        // serves; and the calls still on their way to the queue.
        queue.closeForSleep(.systemSleeping)
        registry.interruptReaderWork(.systemSleeping)
        // And what keeps a reader open between operations (fprintd's claims).
        events.publishSleepChanged(true)
    }

    func closeReaders() async { await readers.closeAll() }

    func releaseInhibitor() { logind.releaseInhibitor() }

    func takeInhibitor() async { await logind.takeInhibitor() }

    func offerReaders() {
        readers.resumeOpening()
        queue.reopen()
        events.publishSleepChanged(false)
        events.publishEnvironmentMayHaveChanged()
    }
}
