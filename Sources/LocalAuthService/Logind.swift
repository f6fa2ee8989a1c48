import DBusCore
import Glibc

/// logind and UPower, as the service follows them: suspend and resume
/// (`PrepareForSleep`, with a delay inhibitor held while awake), the lid
/// (logind's `LidClosed`, UPower's `LidIsClosed`), sessions' `Active`/`State`
/// changing (a user switch: EnvironmentChanged subscribers are judged again).
/// Callers' sessions are
/// Callers/Presence.swift's. Every signal is believed only from the current owner of
/// its well-known name (`followOwner` + sender-checked `subscribe`).
///
/// Without logind on the bus (containers, the test rig without the mock):
/// no suspend handling, the lid counts as open, and callers count as local;
/// logged once (docs/SECURITY.md). Once the service has seen logind, its
/// absence is a restart or a crash, not a machine without logind: callers
/// are then not at the reader until it is back (fails closed).
@ServiceActor
final class Logind {
    static let name = "org.freedesktop.login1"
    static let path: ObjectPath = "/org/freedesktop/login1"
    static let manager = "org.freedesktop.login1.Manager"
    static let session = "org.freedesktop.login1.Session"
    static let upower = "org.freedesktop.UPower"
    static let upowerPath: ObjectPath = "/org/freedesktop/UPower"
    static let properties = "org.freedesktop.DBus.Properties"

    private let bus: BusConnection
    private var lidClosedLogind = false
    private var lidClosedUPower = false
    /// The delay inhibitor's fd while held (closing it releases it), else -1.
    private(set) var inhibitor: Int32 = -1
    private var saidNoLogind = false
    /// logind owned its name at some point of this service's life: from
    /// then on, its absence fails closed.
    private(set) var seen = false

    /// PrepareForSleep(true: going to sleep / false: resumed).
    var onSleep: (@ServiceActor (Bool) -> Void)?
    /// The lid opened or closed.
    var onLidChange: (@ServiceActor () -> Void)?
    /// A session's `Active` or `State` changed (a user switch, a logout).
    var onSessionChange: (@ServiceActor () -> Void)?
    /// Counts what may have changed the session in front of the reader, as
    /// logind signalled it: a session's `Active` (a switch on a seat), logind
    /// leaving or coming back. A verify throws away a scan read across one
    /// (Evaluation/Verification.swift).
    private(set) var frontChanges: UInt64 = 0

    init(bus: BusConnection) {
        self.bus = bus
        // Started while logind is away (its restart, and we were activated
        // meanwhile): systemd runs the machine and logind has run since boot.
        seen = Self.logindHasRun(busAddress: getenv("DBUS_SYSTEM_BUS_ADDRESS").map { String(cString: $0) })
    }

    /// Under systemd (`/run/systemd/system`, sd_booted) with logind's seat
    /// directory made since boot (`/run/systemd/seats`, written by logind
    /// only): a machine with logind, whether it is on the bus now or not.
    /// Only for the machine's own system bus: a private one (the test rig
    /// on a systemd host) never had the machine's logind on it.
    nonisolated static func logindHasRun(root: String = "", busAddress: String?) -> Bool {
        if let busAddress, !["unix:path=/run/dbus/system_bus_socket", "unix:path=/var/run/dbus/system_bus_socket"]
            .contains(busAddress) { return false }
        return access(root + "/run/systemd/system", F_OK) == 0 && access(root + "/run/systemd/seats", F_OK) == 0
    }

    var lidClosed: Bool { lidClosedLogind || lidClosedUPower }
    var isPresent: Bool { bus.owner(of: Self.name) != nil }

    /// Follows both names, subscribes to their signals, reads the lid, and
    /// takes the sleep inhibitor. Nothing here fails the service's start.
    func start() async {
        // The eight bus calls below are sent together and answered in about
        // one round trip's time, not eight (they stood before the service's
        // name, so before its first answer: BENCHMARKS.md, issue 25). The bus
        // applies them in the order it receives them, and all are awaited
        // before the lid is read, so no change between the two is missed.
        let bus = self.bus
        do {
            async let followLogind: Void = bus.followOwner(of: Self.name)
            async let followUPower: Void = bus.followOwner(of: Self.upower)
            async let sleep = bus.subscribe(sender: Self.name, interface: Self.manager, member: "PrepareForSleep",
                                            path: Self.path.rawValue) { [weak self] message in
                ServiceActor.assumeIsolated { self?.prepareForSleep(message) }
            }
            async let logindLid = bus.subscribe(sender: Self.name, interface: Self.properties, member: "PropertiesChanged",
                                                path: Self.path.rawValue) { [weak self] message in
                ServiceActor.assumeIsolated { self?.propertiesChanged(message, upower: false) }
            }
            async let upowerLid = bus.subscribe(sender: Self.upower, interface: Self.properties, member: "PropertiesChanged",
                                                path: Self.upowerPath.rawValue) { [weak self] message in
                ServiceActor.assumeIsolated { self?.propertiesChanged(message, upower: true) }
            }
            // Sessions' objects (any path under /org/freedesktop/login1/session):
            // logind signals `Active` when the seat switches users.
            async let sessions = bus.subscribe(sender: Self.name, interface: Self.properties, member: "PropertiesChanged",
                                               extraMatch: ",arg0='\(Self.session)'") { [weak self] message in
                ServiceActor.assumeIsolated { self?.sessionChanged(message) }
            }
            // logind leaving and coming back (a restart): from the bus driver only.
            async let owner = bus.subscribe(sender: BusConnection.busDriver, interface: BusConnection.busDriver,
                                            member: "NameOwnerChanged", extraMatch: ",arg0='\(Self.name)'") { [weak self] message in
                ServiceActor.assumeIsolated { self?.ownerChanged(message) }
            }
            _ = try await (followLogind, followUPower, sleep, logindLid, upowerLid, sessions, owner)
        } catch {
            Log.warning("cannot follow logind and UPower: \(error)")
        }
        async let closedLogind = property(Self.name, Self.path, Self.manager, "LidClosed")
        async let closedUPower = property(Self.upower, Self.upowerPath, Self.upower, "LidIsClosed")
        if let closed = await closedLogind { lidClosedLogind = closed }
        if let closed = await closedUPower { lidClosedUPower = closed }
        if isPresent {
            seen = true
            await takeInhibitor()
            Log.info("following logind: lid \(lidClosed ? "closed" : "open")")
        } else if seen {
            Log.warning("logind has run since boot but is not on the bus: no caller is at the reader until it is back")
        } else {
            noLogind()
        }
    }

    /// logind's name changed owner (the bus driver said so): seen once, its
    /// absence fails closed; either way who is at the reader may have changed.
    private func ownerChanged(_ message: Message) {
        guard message.sender == BusConnection.busDriver else { return }
        let arguments = message.arguments
        guard arguments.count == 3, arguments[0].string == Self.name, let owner = arguments[2].string else { return }
        if owner.isEmpty {
            guard seen else { return }
            Log.warning("logind left the bus: no caller is at the reader until it is back")
        } else {
            let back = seen
            seen = true
            Log.notice(back ? "logind is back on the bus" : "logind is on the bus now: following it")
        }
        frontChanges &+= 1
        onSessionChange?()
    }

    private func noLogind() {
        guard !saidNoLogind else { return }
        saidNoLogind = true
        Log.notice("logind is not on the bus: callers count as local, the lid as open, and suspend is not followed")
    }

    private func property(_ destination: String, _ path: ObjectPath, _ interface: String, _ name: String) async -> Bool? {
        guard bus.owner(of: destination) != nil,
              let reply = try? await bus.call(destination: destination, path: path, interface: Self.properties,
                                              member: "Get", arguments: [.string(interface), .string(name)], timeout: 5)
        else { return nil }
        return reply.first?.unwrapped.bool
    }

    private func prepareForSleep(_ message: Message) {
        guard message.sender == bus.owner(of: Self.name), let sleeping = message.arguments.first?.bool else { return }
        onSleep?(sleeping)
    }

    private func propertiesChanged(_ message: Message, upower: Bool) {
        guard message.sender == bus.owner(of: upower ? Self.upower : Self.name) else { return }
        let arguments = message.arguments
        guard arguments.count >= 2, arguments[0].string == (upower ? Self.upower : Self.manager),
              let changed = arguments[1].stringKeyedDictionary,
              let closed = changed[upower ? "LidIsClosed" : "LidClosed"]?.bool else { return }
        let before = lidClosed
        if upower { lidClosedUPower = closed } else { lidClosedLogind = closed }
        guard before != lidClosed else { return }
        Log.info("the lid is now \(lidClosed ? "closed" : "open")")
        onLidChange?()
    }

    /// A session became active or inactive (or closing): who is at the
    /// reader may have changed. Believed only from logind's current owner.
    private func sessionChanged(_ message: Message) {
        guard message.sender == bus.owner(of: Self.name), message.path?.hasPrefix(Self.path.rawValue + "/session/") == true
        else { return }
        let arguments = message.arguments
        guard arguments.count >= 2, arguments[0].string == Self.session else { return }
        let changed = arguments[1].stringKeyedDictionary ?? [:]
        let invalidated = arguments.count >= 3 ? arguments[2].stringArray ?? [] : []
        let activeChanged = changed["Active"] != nil || invalidated.contains("Active")
        guard activeChanged || changed["State"] != nil || invalidated.contains("State") else { return }
        if activeChanged { frontChanges &+= 1 }
        onSessionChange?()
    }

    // MARK: The sleep inhibitor

    /// Takes logind's delay inhibitor for sleep: logind then waits (at most
    /// its InhibitDelayMaxSec) until we closed the readers and released it.
    func takeInhibitor() async {
        guard inhibitor < 0, isPresent else { return }
        do {
            let call = try Message.methodCall(destination: Self.name, path: Self.path, interface: Self.manager,
                                              member: "Inhibit",
                                              arguments: [.string("sleep"), .string("localauthd"),
                                                          .string("close the fingerprint reader"), .string("delay")])
            let reply = try await bus.call(call, timeout: 5)
            if let error = reply.error { throw error }
            // The fd is ours (a duplicate libdbus made for us): closing it releases the inhibitor.
            let values = reply.takeArguments()
            guard case .unixFD(let fd)? = values.first, fd >= 0 else {
                for case .unixFD(let fd) in values where fd >= 0 { close(fd) }
                throw DBusError(.failed, "Inhibit returned no file descriptor")
            }
            for case .unixFD(let extra) in values.dropFirst() where extra >= 0 { close(extra) }
            guard inhibitor < 0 else {
                close(fd)   // another take won meanwhile
                return
            }
            inhibitor = fd
            Log.info("holding logind's sleep delay inhibitor")
        } catch {
            Log.warning("could not take logind's sleep inhibitor: \(error)")
        }
    }

    /// Closes the inhibitor's fd: logind may suspend now.
    func releaseInhibitor() {
        guard inhibitor >= 0 else { return }
        close(inhibitor)
        inhibitor = -1
        Log.info("released logind's sleep inhibitor")
    }

    // MARK: The caller's session (Callers/Presence.swift asks)

    /// Without logind nobody can say where a caller sits: callers count as
    /// local (docs/SECURITY.md), said once in the log; but once logind was
    /// seen, it is away (restarting): nobody is at the reader meanwhile.
    func presenceWithoutLogind() -> Presence {
        if seen { return .logindAway }
        noLogind()
        return .unknown
    }
}
