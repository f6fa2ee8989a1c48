/// What flows against the order in which the components are made: the
/// components made first (the Evaluator, the Enroller's prints, the reader
/// choice, the sleep cycle, fprintd's Devices) publish; the Environment, made
/// after them because it asks them, subscribes when it is made. One event
/// instead of a reference back, so that no two components hold each other.
@ServiceActor
final class ServiceEvents {
    private var userChanged: [@ServiceActor (UInt32) -> Void] = []
    private var environmentMayHaveChanged: [@ServiceActor () -> Void] = []

    /// A user's prints, lockout count or password given changed: that
    /// user's LAEnvironment subscribers hear it when the call ends.
    func publishUserChanged(_ uid: UInt32) { for handler in userChanged { handler(uid) } }

    /// A reader, sleep or the lid changed: every subscriber is judged again.
    func publishEnvironmentMayHaveChanged() { for handler in environmentMayHaveChanged { handler() } }

    func onUserChanged(_ handler: @escaping @ServiceActor (UInt32) -> Void) { userChanged.append(handler) }

    func onEnvironmentMayHaveChanged(_ handler: @escaping @ServiceActor () -> Void) {
        environmentMayHaveChanged.append(handler)
    }
}
