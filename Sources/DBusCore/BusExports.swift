internal import CDBus

// Serving method calls: the objects exported, each call bounded then handed
// to its object's handler (or answered UnknownObject, or, above an exported
// object, Introspect with its children), and the call as its handler sees it.
extension BusConnection {
    /// An exported object: its handler and the largest call body it takes.
    struct Export {
        var maximumBodyBytes: Int
        var oversized: (@Sendable (IncomingCall) -> Void)?
        var handler: MethodHandler
    }

    /// Serves method calls to `path` with `handler` (on the loop's thread).
    ///
    /// `maximumBodyBytes` is the largest call body the object takes
    /// (`Message.approximateBodySize`): a larger call never reaches `handler`,
    /// so nothing decodes it, keeps it or echoes it. It is answered by
    /// `oversized` (a contract's own error name), or else with
    /// org.freedesktop.DBus.Error.LimitsExceeded; either way the message is
    /// released at once. Every object states its bound: there is no default.
    public func export(
        _ path: ObjectPath, maximumBodyBytes: Int,
        oversized: (@Sendable (IncomingCall) -> Void)? = nil, handler: @escaping MethodHandler
    ) {
        let export = Export(maximumBodyBytes: maximumBodyBytes, oversized: oversized, handler: handler)
        state.withLock { $0.objects[path.rawValue] = export }
    }

    /// Stops serving `path`: its calls get UnknownObject again, and its
    /// parent's Introspect no longer lists it (a device that was unplugged).
    public func unexport(_ path: ObjectPath) {
        _ = state.withLock { $0.objects.removeValue(forKey: path.rawValue) }
    }

    /// The paths served now, sorted.
    public var exportedPaths: [String] { state.withLock { $0.objects.keys.sorted() } }

    /// One method call, from `route` on the loop's thread.
    func routeMethodCall(_ message: Message) {
        let call = IncomingCall(message: message, connection: self)
        let path = message.path ?? "/"
        let (export, exported) = state.withLock { ($0.objects[path], Array($0.objects.keys)) }
        if let export {
            // Bounded before anything is decoded (docs/SECURITY.md, "Limits").
            let size = message.approximateBodySize
            guard size <= export.maximumBodyBytes else {
                if let oversized = export.oversized { return oversized(call) }
                return call.fail(
                    DBusError(
                        .limitsExceeded,
                        "the call's arguments are larger than \(export.maximumBodyBytes) bytes"))
            }
            export.handler(call)
            return
        }
        // Paths above an exported object answer Introspect with their children,
        // so that `busctl tree` and d-feet can walk down to it.
        let children = Set(exported.compactMap { ObjectPath.child(of: path, toward: $0) }).sorted()
        if !children.isEmpty {
            if message.interface == nil || message.interface == "org.freedesktop.DBus.Introspectable",
                message.member == "Introspect"
            {
                call.reply([.string(Introspection.node(children: children))])
            } else {
                call.fail(DBusError(.unknownMethod, "no method \(message.member ?? "") at \(path)"))
            }
            return
        }
        call.fail(DBusError(.unknownObject, "no object at path \(path)"))
    }
}

/// A method call being served. Reply exactly once with `reply` or `fail`.
public struct IncomingCall: Sendable {
    public let message: Message
    let connection: BusConnection

    public var sender: String { message.sender ?? "" }
    public var interface: String? { message.interface }
    public var member: String { message.member ?? "" }
    public var path: String { message.path ?? "/" }
    public var signature: String { message.signature }
    public var arguments: [DBusValue] { message.arguments }

    /// Replies with `values`; if they cannot be marshalled the caller gets that error.
    public func reply(_ values: [DBusValue] = []) {
        guard message.expectsReply else { return }
        do {
            connection.send(try message.methodReturn(values))
        } catch {
            fail(error)
        }
    }

    public func fail(_ error: DBusError) {
        guard message.expectsReply, let reply = message.errorReply(error) else { return }
        connection.send(reply)
    }
}

extension ObjectPath {
    /// The name of the child of `parent` on the way to `descendant`, if any.
    static func child(of parent: String, toward descendant: String) -> String? {
        let prefix = parent == "/" ? "/" : parent + "/"
        guard descendant.hasPrefix(prefix), descendant != parent else { return nil }
        return descendant.dropFirst(prefix.count).split(separator: "/").first.map(String.init)
    }
}

enum Introspection {
    static let doctype = """
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
        """

    static func node(children: [String]) -> String {
        var xml = doctype + "\n<node>\n"
        xml += "  <interface name=\"org.freedesktop.DBus.Introspectable\">\n"
        xml += "    <method name=\"Introspect\"><arg name=\"xml_data\" type=\"s\" direction=\"out\"/></method>\n"
        xml += "  </interface>\n"
        for child in children { xml += "  <node name=\"\(child)\"/>\n" }
        return xml + "</node>\n"
    }
}
