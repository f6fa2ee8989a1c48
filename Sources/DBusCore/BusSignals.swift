internal import CDBus

// Receiving signals: subscriptions, with or without a match rule, and whose
// sender each must come from (a well-known sender through its followed
// owner: BusNameOwners.swift).
extension BusConnection {
    /// One subscriber: the signals it wants (by sender, interface, member
    /// and path; nil: any) and its handler.
    struct Subscription {
        var sender: String?
        var interface: String
        var member: String?
        var path: String?
        var handler: SignalHandler
    }

    /// Calls `handler` on the loop for each matching signal, after asking the
    /// bus to route them here. Unicast signals addressed to us need no match rule;
    /// pass `addMatchRule: false` for those.
    @discardableResult
    public func subscribe(
        sender: String?, interface: String, member: String?, path: String? = nil,
        extraMatch: String = "", addMatchRule: Bool = true,
        isolation: isolated (any Actor)? = #isolation,
        handler: @escaping SignalHandler
    ) async throws(DBusError) -> UInt64 {
        let id = register(Subscription(sender: sender, interface: interface, member: member, path: path, handler: handler))
        guard addMatchRule else { return id }
        var rule = "type='signal',interface='\(interface)'"
        if let sender { rule += ",sender='\(sender)'" }
        if let member { rule += ",member='\(member)'" }
        if let path { rule += ",path='\(path)'" }
        rule += extraMatch
        _ = try await call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
            interface: "org.freedesktop.DBus", member: "AddMatch", arguments: [.string(rule)])
        return id
    }

    /// Calls `handler` for signals addressed to this connection (unicast), which
    /// the bus delivers without a match rule, sent by `sender`. Takes effect at once.
    ///
    /// Anyone on the bus may send a unicast signal to anyone: the sender is
    /// what makes a signal believable. A well-known `sender` matches only its
    /// current owner, which needs `followOwner(of:)` first; until the owner is
    /// known, nothing matches.
    @discardableResult
    public func subscribeUnicast(
        sender: String, interface: String, member: String?,
        handler: @escaping SignalHandler
    ) -> UInt64 {
        register(Subscription(sender: sender, interface: interface, member: member, path: nil, handler: handler))
    }

    func register(_ subscription: Subscription) -> UInt64 {
        state.withLock { state in
            let id = state.nextSubscription
            state.nextSubscription += 1
            state.subscriptions[id] = subscription
            return id
        }
    }

    /// A signal, from `route` on the loop's thread: the followed owners
    /// first (a NameOwnerChanged), then every subscription it matches.
    func routeSignal(_ message: Message) -> DBusHandlerResult {
        noteOwnerChange(message)
        let handlers = state.withLock { state in
            state.subscriptions.values.filter { $0.matches(message, owners: state.owners) }.map(\.handler)
        }
        for handler in handlers { handler(message) }
        return handlers.isEmpty ? DBUS_HANDLER_RESULT_NOT_YET_HANDLED : DBUS_HANDLER_RESULT_HANDLED
    }
}

extension BusConnection.Subscription {
    /// Whether `message` is for this subscription, its sender included: a
    /// match rule only filters broadcasts, and anyone may send a unicast
    /// signal to anyone, so the sender is checked here for every signal.
    /// The bus driver sends as `org.freedesktop.DBus` itself; every other
    /// connection as its unique name, so a well-known `sender` is compared
    /// with its followed owner (`owners`), and matches nothing while unknown.
    func matches(_ message: Message, owners: [String: String?]) -> Bool {
        guard message.interface == interface else { return false }
        if let member, message.member != member { return false }
        if let path, message.path != path { return false }
        guard let sender else { return true }
        guard let actual = message.sender else { return false }
        if sender.hasPrefix(":") || sender == BusConnection.busDriver { return actual == sender }
        guard let owner = owners[sender] ?? nil else { return false }
        return actual == owner
    }
}
