#!/usr/bin/python3
"""Many pending calls at once, for the limit tests.

    flood.py CONNECTIONS CALLS SECONDS

Opens CONNECTIONS connections to the bus and sends CALLS EvaluatePolicy(1)
calls from each without waiting, then collects answers for SECONDS and
prints one line per outcome kind: `pending=N`, `ok=N`, `error NAME=N`.
Then it exits, leaving the bus (which cancels whatever is still pending).
"""
import collections
import os
import sys

import dbus
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

connections, calls, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
DBusGMainLoop(set_as_default=True)
outcomes = collections.Counter()
total = connections * calls


def record(kind):
    outcomes[kind] += 1


kept = []  # connections and proxies must outlive the loop, or they close
for c in range(connections):
    bus = dbus.bus.BusConnection(os.environ["DBUS_SYSTEM_BUS_ADDRESS"])
    kept.append(bus)
    service = bus.get_object("org.example.LocalAuth", "/org/example/LocalAuth", introspect=False)
    kept.append(service)
    for i in range(calls):
        service.get_dbus_method("EvaluatePolicy", "org.example.LocalAuth")(
            dbus.UInt32(1), "Flood", {"request-id": "flood-%d-%d" % (c, i)}, signature="usa{sv}",
            reply_handler=lambda *a: record("ok"),
            error_handler=lambda e: record("error " + e.get_dbus_name()), timeout=120)

loop = GLib.MainLoop()
GLib.timeout_add(int(seconds * 1000), loop.quit)
loop.run()
answered = sum(outcomes.values())
outcomes["pending"] = total - answered
for kind, count in sorted(outcomes.items()):
    print("%s=%d" % (kind, count))
sys.stdout.flush()
os._exit(0)
