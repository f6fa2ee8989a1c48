#!/usr/bin/python3
"""Large calls at once, for the memory bound tests (issue 30 item 1).

    large-calls.py TARGET BYTES COUNT

Opens COUNT connections to the bus and sends from each, without waiting, one
call whose string argument is BYTES long:

    fprintd-property   Properties.Get(Device, <name>) on fprintd's Device 0
    fprintd-method     Device.DeleteEnrolledFingers(<name>) on fprintd's Device 0
    fprintd-manager    Properties.Get(<name>, "x") on fprintd's Manager
    localauth          EvaluatePolicy(1, <reason>, {}) on org.example.LocalAuth

then waits for every answer (at most 120 s) and prints one line per outcome
kind (`ok=N`, `error NAME=N`, `noreply=N`) and `longest-error=N`: the longest
error text, in bytes, that came back.
"""
import collections
import os
import sys

import dbus
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

target, size, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
DBusGMainLoop(set_as_default=True)
outcomes = collections.Counter()
longest = [0]
loop = GLib.MainLoop()
big = "n" * size


def done(kind, text=""):
    outcomes[kind] += 1
    longest[0] = max(longest[0], len(text.encode()))
    if sum(outcomes.values()) == count:
        loop.quit()


def send(bus):
    handlers = dict(reply_handler=lambda *a: done("ok"),
                    error_handler=lambda e: done("error " + (e.get_dbus_name() or "?"), e.get_dbus_message() or ""),
                    timeout=120)
    if target == "fprintd-property":
        device = bus.get_object("net.reactivated.Fprint", "/net/reactivated/Fprint/Device/0", introspect=False)
        device.get_dbus_method("Get", "org.freedesktop.DBus.Properties")(
            "net.reactivated.Fprint.Device", big, signature="ss", **handlers)
    elif target == "fprintd-method":
        device = bus.get_object("net.reactivated.Fprint", "/net/reactivated/Fprint/Device/0", introspect=False)
        device.get_dbus_method("DeleteEnrolledFingers", "net.reactivated.Fprint.Device")(big, signature="s", **handlers)
    elif target == "fprintd-manager":
        manager = bus.get_object("net.reactivated.Fprint", "/net/reactivated/Fprint/Manager", introspect=False)
        manager.get_dbus_method("Get", "org.freedesktop.DBus.Properties")(big, "x", signature="ss", **handlers)
    elif target == "localauth":
        service = bus.get_object("org.example.LocalAuth", "/org/example/LocalAuth", introspect=False)
        service.get_dbus_method("EvaluatePolicy", "org.example.LocalAuth")(
            dbus.UInt32(1), big, {}, signature="usa{sv}", **handlers)
    else:
        sys.exit("unknown target " + target)


kept = []  # connections must outlive the loop, or they close
for _ in range(count):
    bus = dbus.bus.BusConnection(os.environ["DBUS_SYSTEM_BUS_ADDRESS"])
    kept.append(bus)
    send(bus)
GLib.timeout_add_seconds(120, loop.quit)
loop.run()
outcomes["noreply"] = count - sum(outcomes.values())
for kind, n in sorted(outcomes.items()):
    if n:
        print("%s=%d" % (kind, n))
print("longest-error=%d" % longest[0])
