// localauth-prompt: LocalAuth's system sheet for one desktop session
// (issue 14). It runs as the person, in their session (XDG autostart or the
// systemd user unit in data/), connects to the SYSTEM bus where localauthd
// serves, and registers there as the prompt agent of its uid and session:
// from then on each evaluation of a program of that session shows here.
// One loop, one thread: GTK's loop is GLib's default main context, which is
// also DBusCore's `EventLoop.processDefault`, run by this main thread.
internal import CGtk
import DBusCore
import Glibc

let arguments = CommandLine.arguments.dropFirst()
if arguments.contains("--help") || arguments.contains("-h") {
    print("""
        usage: localauth-prompt
        LocalAuth's fingerprint sheet for this desktop session: shows each evaluation
        that a program of this session asks localauthd for. Started by the session
        (/etc/xdg/autostart/localauth-prompt.desktop or the systemd user unit
        localauth-prompt.service). Uses DISPLAY / WAYLAND_DISPLAY and the system bus
        (DBUS_SYSTEM_BUS_ADDRESS points it elsewhere).
        """)
    exit(0)
}
if let unknown = arguments.first {
    Output.error("unknown argument \(unknown) (try --help)")
    exit(2)
}

guard gtk_init_check() != 0 else {
    Output.error("cannot open the display (no DISPLAY or WAYLAND_DISPLAY?)")
    exit(1)
}
ColorScheme.follow()

let loop = EventLoop.processDefault
let bus: BusConnection
do {
    bus = try BusConnection.connect(to: .system, loop: loop)
} catch {
    Output.error("cannot connect to the system bus: \(error)")
    exit(1)
}
// Detached: top-level code is on the main actor, whose queue never runs here
// (this thread runs the GLib loop); the agent lives on AgentActor.
Task.detached { await Keep.start(bus) }
loop.run()

/// Keeps the agent alive for the life of the process.
@AgentActor
enum Keep {
    static var agent: PromptAgent?

    static func start(_ bus: BusConnection) async {
        let agent = PromptAgent(bus: bus)
        self.agent = agent
        await agent.start()
    }
}
