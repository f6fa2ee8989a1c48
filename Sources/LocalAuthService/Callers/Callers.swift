import DBusCore
import Glibc

/// Who is calling: one `CallerRecord` per connection, filled on the
/// connection's first call from the bus driver's GetConnectionCredentials
/// (never from an argument), cached, and dropped when the bus driver says
/// the connection left. Two questions are answered here and nowhere else:
/// which app is this (`identity`), and can this be the person at the reader
/// (`presence`, `session`; Presence.swift).
@ServiceActor
final class Callers {
    let bus: BusConnection
    let logind: Logind
    private var records: [String: CallerRecord] = [:]
    /// Connections whose credentials are being asked for, with how many
    /// calls wait: a connection that leaves meanwhile is not recorded.
    private var asking: [String: Int] = [:]

    init(bus: BusConnection, logind: Logind) {
        self.bus = bus
        self.logind = logind
    }

    var count: Int { records.count }

    /// The record of a connection that has called (and not left), without asking.
    func known(_ sender: String) -> CallerRecord? { records[sender] }

    /// The connection's record: asked of the bus once, then cached. A
    /// connection whose process ran another executable since is refused
    /// (docs/SECURITY.md, "exec after connect").
    func record(for sender: String) async throws(DBusError) -> CallerRecord {
        if let known = records[sender] { return try unchanged(known) }
        asking[sender, default: 0] += 1
        let result: Result<CallerRecord, DBusError>
        do throws(DBusError) {
            result = .success(try await credentials(of: sender))
        } catch {
            result = .failure(error)
        }
        ServiceActor.assertOnLoop()
        let stillHere = asking[sender] != nil
        if let waiting = asking[sender] { asking[sender] = waiting > 1 ? waiting - 1 : nil }
        if let known = records[sender] { return try unchanged(known) }
        let fresh = try result.get()
        if stillHere { records[sender] = fresh }
        return try unchanged(fresh)
    }

    private func unchanged(_ record: CallerRecord) throws(DBusError) -> CallerRecord {
        guard record.executableChanged() else { return record }
        Log.warning("caller \(record.sender) (uid \(record.uid)) runs another executable than when it connected: refused")
        throw DBusError(.accessDenied, "the calling process ran another program since it connected to the bus; connect again")
    }

    // MARK: Connections, as soon as the bus has them

    /// Early reads under way (each a GetConnectionCredentials and a few
    /// /proc reads); past this many, a new connection is read at its first
    /// call instead.
    static let maximumEarlyReads = 16
    private var earlyReads = 0

    /// Follows new unique names on the bus (NameOwnerChanged with no old
    /// owner, from the bus driver only) and makes each connection's record
    /// then, not at its first call: its process and executable are read as
    /// soon as the service can see the connection, so an exec after that is
    /// caught at the next call.
    func followNewConnections() async throws(DBusError) {
        try await bus.subscribe(sender: BusConnection.busDriver, interface: BusConnection.busDriver,
                                member: "NameOwnerChanged", extraMatch: ",arg1=''") { [weak self] message in
            ServiceActor.assumeIsolated { self?.connected(message) }
        }
    }

    private func connected(_ message: Message) {
        guard message.sender == BusConnection.busDriver else { return }
        let arguments = message.arguments
        guard arguments.count == 3, let name = arguments[0].string, name.hasPrefix(":"),
              arguments[1].string == "", arguments[2].string == name, name != bus.uniqueName,
              records[name] == nil, asking[name] == nil, earlyReads < Self.maximumEarlyReads else { return }
        earlyReads += 1
        Task { @ServiceActor [weak self] in
            _ = try? await self?.record(for: name)
            self?.earlyReads -= 1
        }
    }

    /// The bus driver said the connection left (Service.nameOwnerChanged,
    /// which believes only the driver).
    func forget(_ sender: String) {
        records[sender] = nil
        asking[sender] = nil
    }

    private func credentials(of sender: String) async throws(DBusError) -> CallerRecord {
        let call = try Message.methodCall(destination: BusConnection.busDriver, path: "/org/freedesktop/DBus",
                                          interface: BusConnection.busDriver, member: "GetConnectionCredentials",
                                          arguments: [.string(sender)])
        let reply = try await bus.call(call)
        if let error = reply.error { throw error }
        // Taken, so that a ProcessFD is ours to keep (and close).
        let values = reply.takeArguments()
        var pidfd: Int32 = -1
        var uid: UInt32?
        var pid: UInt32?
        var label: String?
        if case .array(_, let entries)? = values.first {
            for case .dictEntry(.string(let key), let wrapped) in entries {
                let value = wrapped.unwrapped
                switch (key, value) {
                case ("UnixUserID", .uint32(let found)): uid = found
                case ("ProcessID", .uint32(let found)): pid = found
                case ("ProcessFD", .unixFD(let fd)): pidfd = fd
                case ("LinuxSecurityLabel", _):
                    // Bytes with a trailing NUL ("unconfined", "snap.vault.vault (enforce)").
                    label = value.byteArray.map { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                default:
                    if case .unixFD(let fd) = value, fd >= 0 { close(fd) }
                }
            }
        }
        guard let uid else {
            if pidfd >= 0 { close(pidfd) }
            throw DBusError(.failed, "the bus did not say who the caller is")
        }
        let process = pid.map { pid in
            let started = ProcessFacts.startTime(pid: pid)
            var process = CallerRecord.Process(pid: pid, pidfd: pidfd, startTime: started)
            // The executable now, kept only if the pid still named the same process after reading it.
            let executable = ProcessFacts.executableID(pid: pid)
            if started != nil, ProcessFacts.startTime(pid: pid) == started { process.executable = executable }
            return process
        }
        if process == nil, pidfd >= 0 { close(pidfd) }
        return CallerRecord(sender: sender, uid: uid, process: process, securityLabel: label)
    }

    // MARK: Which app

    /// Which app the caller is, worked out once per connection from its
    /// process: a proven sandbox or a host program, and its executable.
    /// A process gone (or its pid reused) before the first look is
    /// `.unreadable`: never someone else's identity.
    func identity(_ record: CallerRecord) -> CallerIdentity {
        if let known = record.identity { return known }
        let identity: CallerIdentity
        if let pid = record.livePID, !record.executableChanged() {
            let evidence = ProcessFacts.sandboxEvidence(pid: pid, securityLabel: record.securityLabel)
            let executable = ProcessFacts.executable(pid: pid)
            // Read, then checked again: the pid named the same process, running
            // the executable it connected with, throughout.
            if record.livePID == pid, !record.executableChanged() {
                identity = CallerIdentity(app: AppIdentity.decide(evidence), executable: executable)
            } else {
                identity = CallerIdentity(app: .unreadable, executable: nil)
            }
        } else {
            identity = CallerIdentity(app: .unreadable, executable: nil)
        }
        if identity.executable == nil {
            Log.notice("cannot read the executable of caller \(record.sender) (uid \(record.uid)): it is shown as an unidentified program")
        }
        record.identity = identity
        return identity
    }
}

/// The router's way to who a connection is (Bus/CallRouter.swift): the
/// component adopts the floor's protocol, so the floor names no component.
extension Callers: CallerLookup {}
