import DBusCore
import LocalAuthShared

// Wiring only: the service's readers, logind, lockout, callers and bus as
// the Environment component's seams; what sleep acts on; logind's signals
// fed to the component; and the service's old entry points, kept for the
// code other components still call them from (the integrator rewires them).

@ServiceActor
final class ServiceEnvironmentSeams: EnvironmentSeams {
    /// The service outlives the component that alone holds this adapter
    /// (unowned(unsafe): a checked `unowned` load takes the side table's slow
    /// retain and release on every call; see ServiceEvaluatorWiring).
    private unowned(unsafe) let service: LocalAuthService
    private let passwordSet = PasswordSetCache()

    init(_ service: LocalAuthService) { self.service = service }

    var readersPresent: Bool { service.readers.isPresent }
    var hasBuiltInReader: Bool { !service.readers.builtIn.isEmpty }
    var lidClosed: Bool { service.logind.lidClosed }
    func readerWithLidOpen(for uid: UInt32) -> Readers.Identity? { service.readerChoice.readerWithLidOpen(for: uid) }
    func isEnrolled(_ uid: UInt32, on reader: Readers.Identity) -> Bool {
        !service.prints.prints(of: uid, for: reader).isEmpty
    }
    func enrolledSetHash(uid: UInt32, reader: Readers.Identity) -> [UInt8] {
        service.readerChoice.enrolledSetHash(uid: uid, reader: reader)
    }
    func interruptBuiltInReaders() { service.queue.interrupt(on: service.readers.builtIn, .lidClosed) }
    func isLockedOut(_ uid: UInt32) -> Bool { service.evaluator.isLockedOut(uid) }
    func hasUsablePrints(_ uid: UInt32) -> Bool { (try? service.evaluator.checkBiometricsUsable(for: uid)) != nil }
    func hasPassword(_ uid: UInt32) -> Bool { passwordSet.hasPassword(uid) }
    func accountsChanged() -> Bool { passwordSet.changedSinceLastAsked() }
    func appKey(of caller: CallerRecord) -> String { service.callers.identity(caller).stateKey }
    func knownPresence(of caller: CallerRecord) -> EnvironmentRules.Presence? { service.callers.knownPresence(caller) }
    func presence(of caller: CallerRecord) async -> EnvironmentRules.Presence { await service.callers.presence(caller) }
    var stopping: Bool { service.stopping }
    func emitEnvironmentChanged(_ state: [String: DBusValue], to sender: String) {
        try? service.bus.emit(
            path: ObjectPath(stringLiteral: LocalAuthBus.objectPath), interface: LocalAuthBus.interface,
            member: LocalAuthBus.Signal.environmentChanged, arguments: [.dictionary(state)],
            destination: sender)
    }
}

/// What the sleep cycle acts on, in the service: the reader queue and the
/// readers (every operation ends, every reader closes) and logind's inhibitor.
@ServiceActor
final class ServiceSleepSeams: SleepSeams {
    /// The service outlives the component that alone holds this adapter
    /// (unowned(unsafe): a checked `unowned` load takes the side table's slow
    /// retain and release on every call; see ServiceEvaluatorWiring).
    private unowned(unsafe) let service: LocalAuthService

    init(_ service: LocalAuthService) { self.service = service }

    func endReaderWork() {
        // Every operation holding or waiting for a reader, whatever call it
        // serves; and the calls still on their way to the queue.
        service.queue.closeForSleep(.systemSleeping)
        service.registry.interruptReaderWork(.systemSleeping)
    }

    func closeReaders() async { await service.readers.closeAll() }

    func releaseInhibitor() { service.logind.releaseInhibitor() }

    func takeInhibitor() async { await service.logind.takeInhibitor() }

    func offerReaders() {
        service.readers.resumeOpening()
        service.queue.reopen()
        service.environment.mayHaveChanged()
    }
}

extension LocalAuthService {
    /// Sleep, the lid and the callers' sessions (docs/SECURITY.md), to the
    /// Environment component.
    func startFollowingLogind() async {
        logind.onSleep = { [weak self] sleeping in self?.environment.prepareForSleep(sleeping) }
        logind.onLidChange = { [weak self] in self?.environment.lidChanged() }
        logind.onSessionChange = { [weak self] in self?.environment.sessionsChanged() }
        await logind.start()
    }

}
