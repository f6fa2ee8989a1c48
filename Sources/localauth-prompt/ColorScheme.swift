internal import CGtkShims
import DBusCore
import Glibc

/// Dark or light, as the desktop prefers. The sheet's colours all come from
/// the theme (Style in PromptWindow.swift); this picks the theme's variant.
/// GTK 4.8 reads the theme from XSETTINGS or GTK_THEME itself, but not the
/// freedesktop colour-scheme preference (GNOME 42+, KDE): that is read here
/// from the settings portal on the session bus, and followed as it changes.
/// LOCALAUTH_PROMPT_COLOR_SCHEME=dark|light overrides both.
enum ColorScheme {
    static func follow() {
        switch getenv("LOCALAUTH_PROMPT_COLOR_SCHEME").map({ String(cString: $0) }) {
        case "dark"?: return cgtkshims_prefer_dark_theme(1)
        case "light"?: return cgtkshims_prefer_dark_theme(0)
        default: break
        }
        // Only an existing session bus: libdbus would otherwise try to start one.
        guard getenv("DBUS_SESSION_BUS_ADDRESS") != nil,
              let session = try? BusConnection.connect(to: .session, loop: EventLoop.processDefault) else { return }
        Task { await Portal.start(on: session) }
    }
}

@AgentActor
final class Portal {
    static let name = "org.freedesktop.portal.Desktop"
    static let interface = "org.freedesktop.portal.Settings"
    let bus: BusConnection
    init(bus: BusConnection) { self.bus = bus }
    private static var current: Portal?

    static func start(on bus: BusConnection) async {
        await Portal(bus: bus).start()
    }

    func start() async {
        Self.current = self
        do {
            try await bus.followOwner(of: Self.name)
            try await bus.subscribe(sender: Self.name, interface: Self.interface, member: "SettingChanged",
                                    extraMatch: ",arg0='org.freedesktop.appearance',arg1='color-scheme'") { message in
                let arguments = message.arguments
                guard arguments.count == 3 else { return }
                Self.apply(arguments[2])
            }
            let reply = try await bus.call(destination: Self.name, path: "/org/freedesktop/portal/desktop",
                                           interface: Self.interface, member: "Read",
                                           arguments: [.string("org.freedesktop.appearance"), .string("color-scheme")],
                                           timeout: 2)
            if let value = reply.first { Self.apply(value) }
        } catch {
            // No portal: GTK's own settings decide.
        }
    }

    /// 1: prefer dark; 2: prefer light; 0: no preference (the theme's default).
    nonisolated static func apply(_ value: DBusValue) {
        guard let scheme = value.unwrapped.uint32 else { return }
        cgtkshims_prefer_dark_theme(scheme == 1 ? 1 : 0)
    }
}
