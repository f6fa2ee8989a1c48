#!/usr/bin/python3
# The parts of an evaluation measured alone on the rig (issue 25, BENCHMARKS.md
# "Evaluation"): a Ping to localauthd (the bus hop there and back), a preflight
# (CanEvaluatePolicy: the hop plus the caller's presence and prints), and polkit's
# CheckAuthorization for org.example.LocalAuth.evaluate with this client's own
# bus name as the subject (what the service asks before each evaluation).
#   profile-hops.py BUS_ADDRESS [N]
import statistics, sys, time
from gi.repository import Gio, GLib
bus = sys.argv[1]; n = int(sys.argv[2]) if len(sys.argv) > 2 else 500
c = Gio.DBusConnection.new_for_address_sync(bus, Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT
                                            | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION, None, None)
LA = ("org.example.LocalAuth", "/org/example/LocalAuth")
PK = ("org.freedesktop.PolicyKit1", "/org/freedesktop/PolicyKit1/Authority", "org.freedesktop.PolicyKit1.Authority")
subject = ("system-bus-name", {"name": GLib.Variant("s", c.get_unique_name())})
cases = {
    "ping localauthd": lambda: c.call_sync(*LA, "org.freedesktop.DBus.Peer", "Ping", None, None, 0, 5000, None),
    "preflight (CanEvaluatePolicy)": lambda: c.call_sync(*LA, "org.example.LocalAuth", "CanEvaluatePolicy",
                                                         GLib.Variant("(u)", (1,)), None, 0, 5000, None),
    "polkit CheckAuthorization": lambda: c.call_sync(*PK, "CheckAuthorization", GLib.Variant(
        "((sa{sv})sa{ss}us)", (subject, "org.example.LocalAuth.evaluate", {}, 0, ""))
        , None, 0, 5000, None),
    "bus GetConnectionUnixUser": lambda: c.call_sync("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
        "GetConnectionUnixUser", GLib.Variant("(s)", (c.get_unique_name(),)), None, 0, 5000, None),
}
r = cases["polkit CheckAuthorization"]().unpack()
assert r[0][0] is True, r
times = {k: [] for k in cases}
for _ in range(n):          # interleaved, so drift hits every case alike
    for k, f in cases.items():
        t = time.perf_counter_ns(); f(); times[k].append(time.perf_counter_ns() - t)
for k, v in times.items():
    print(f"{k:32s} median {statistics.median(v)/1e3:7.0f} us  p90 {sorted(v)[len(v)*9//10]/1e3:7.0f} us")
