/// What flows against the order in which the components are made: the
/// components made first (the Evaluator, the Enroller's prints, the reader
/// choice, the sleep cycle, fprintd's Devices) publish; the Environment, made
/// after them because it asks them, subscribes when it is made, and so does
/// fprintd's server (made last) to the sleep cycle's. One event
/// instead of a reference back, so that no two components hold each other.
@ServiceActor
final class ServiceEvents {
    private var userChanged: [@ServiceActor (UInt32) -> Void] = []
    private var environmentMayHaveChanged: [@ServiceActor () -> Void] = []
    private var sleepChanged: [@ServiceActor (Bool) -> Void] = []

    /// A user's prints, lockout count or password given changed: that
    /// user's LAEnvironment subscribers hear it when the call ends.
    func publishUserChanged(_ uid: UInt32) { for handler in userChanged { handler(uid) } }

    /// A reader, sleep or the lid changed: every subscriber is judged again.
    func publishEnvironmentMayHaveChanged() { for handler in environmentMayHaveChanged { handler() } }

    /// true: sleep begins, every reader is about to close, so whoever keeps
    /// one open between operations (an fprintd claim) gives it back now;
    /// false: after resume, the readers are offered again.
    func publishSleepChanged(_ sleeping: Bool) { for handler in sleepChanged { handler(sleeping) } }

    func onUserChanged(_ handler: @escaping @ServiceActor (UInt32) -> Void) { userChanged.append(handler) }

    func onEnvironmentMayHaveChanged(_ handler: @escaping @ServiceActor () -> Void) {
        environmentMayHaveChanged.append(handler)
    }

    func onSleepChanged(_ handler: @escaping @ServiceActor (Bool) -> Void) { sleepChanged.append(handler) }
}
