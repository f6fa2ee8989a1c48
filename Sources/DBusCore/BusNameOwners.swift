// Following a well-known name's owner, so that a signal "from" that name
// is believed only from the connection that owns it now.
extension BusConnection {
    /// Starts following which connection owns the well-known `name`, so that
    /// signals subscribed from `name` are checked against its real owner.
    /// Blocks for two round trips; never call it on the loop's own thread.
    public func followOwnerBlocking(of name: String) throws(DBusError) {
        guard startFollowing(name) else { return }
        _ = try callBlocking(Self.busDriverCall("AddMatch", Self.ownerMatchRule(name))).result()
        let seen = state.withLock { $0.ownerChanges[name] ?? 0 }
        let owner = try Self.owner(in: callBlocking(Self.busDriverCall("GetNameOwner", name)))
        applyOwner(owner, of: name, ifNoChangeSince: seen)
    }

    /// The async form of `followOwnerBlocking(of:)`.
    public func followOwner(of name: String, isolation: isolated (any Actor)? = #isolation) async throws(DBusError) {
        guard startFollowing(name) else { return }
        _ = try await call(Self.busDriverCall("AddMatch", Self.ownerMatchRule(name))).result()
        let seen = state.withLock { $0.ownerChanges[name] ?? 0 }
        let owner = try Self.owner(in: await call(Self.busDriverCall("GetNameOwner", name)))
        applyOwner(owner, of: name, ifNoChangeSince: seen)
    }

    /// A call of the bus driver's `member` with one string argument.
    private static func busDriverCall(_ member: String, _ argument: String) throws(DBusError) -> Message {
        try Message.methodCall(
            destination: busDriver, path: "/org/freedesktop/DBus", interface: busDriver, member: member,
            arguments: [.string(argument)])
    }

    /// GetNameOwner's reply: the owner, or nil when nobody owns the name.
    private static func owner(in reply: Message) throws(DBusError) -> String? {
        do {
            return try reply.result().first?.string
        } catch  where error.name == .nameHasNoOwner {
            return nil
        }
    }

    /// The unique name that owns `name` now, if it is followed and owned.
    public func owner(of name: String) -> String? {
        state.withLock { $0.owners[name] ?? nil }
    }

    private static func ownerMatchRule(_ name: String) -> String {
        "type='signal',sender='\(busDriver)',interface='\(busDriver)',member='NameOwnerChanged',arg0='\(name)'"
    }

    /// False if `name` is already followed.
    private func startFollowing(_ name: String) -> Bool {
        state.withLock { state in
            guard state.owners[name] == nil else { return false }
            state.owners[name] = .some(nil)
            return true
        }
    }

    private func applyOwner(_ owner: String?, of name: String, ifNoChangeSince seen: UInt64) {
        state.withLock { state in
            // A NameOwnerChanged that arrived meanwhile is at least as new.
            guard (state.ownerChanges[name] ?? 0) == seen else { return }
            state.owners[name] = .some(owner)
        }
    }

    /// NameOwnerChanged from the bus driver for a followed name: the new owner.
    func noteOwnerChange(_ message: Message) {
        guard message.sender == Self.busDriver, message.interface == Self.busDriver,
            message.member == "NameOwnerChanged"
        else { return }
        let arguments = message.arguments
        guard arguments.count == 3, let name = arguments[0].string, let newOwner = arguments[2].string else { return }
        state.withLock { state in
            guard state.owners[name] != nil else { return }
            state.ownerChanges[name, default: 0] += 1
            state.owners[name] = .some(newOwner.isEmpty ? nil : newOwner)
        }
    }
}
