#!/usr/bin/python3
"""An app that evaluates over D-Bus, for tests that watch or end it from outside.

    caller.py evaluate            EvaluatePolicy(1) with request id "caller";
                                  prints each EvaluationStatus as it comes
    caller.py evaluate-and-cancel the same, and Cancel("caller") right behind it
                                  on the same connection, before any answer

Prints `status STATUS` lines (flushed at once, so a test can wait for the
first one), then `result=ok` or `error=NAME`.
"""
import os
import sys

import dbus
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

DBusGMainLoop(set_as_default=True)
bus = dbus.bus.BusConnection(os.environ["DBUS_SYSTEM_BUS_ADDRESS"])
loop = GLib.MainLoop()


def status(request_id, value):
    print("status %s" % value, flush=True)


bus.add_signal_receiver(status, signal_name="EvaluationStatus", dbus_interface="org.example.LocalAuth",
                        bus_name="org.example.LocalAuth")


def done(*values):
    print("result=ok", flush=True)
    loop.quit()


def failed(error):
    print("error=%s" % error.get_dbus_name(), flush=True)
    loop.quit()


service = bus.get_object("org.example.LocalAuth", "/org/example/LocalAuth", introspect=False)
service.get_dbus_method("EvaluatePolicy", "org.example.LocalAuth")(
    dbus.UInt32(1), "Unlock", {"request-id": "caller"}, signature="usa{sv}",
    reply_handler=done, error_handler=failed, timeout=120)
if sys.argv[1] == "evaluate-and-cancel":
    service.get_dbus_method("Cancel", "org.example.LocalAuth")(
        "caller", signature="s", reply_handler=lambda: None, error_handler=lambda e: None)
loop.run()
