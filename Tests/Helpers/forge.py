#!/usr/bin/python3
"""Forged signals, for the security tests: anyone on a system bus may send a
unicast signal to anyone, with any interface and member.

    forge.py name-owner-changed   every connection "left the bus", told to
                                  org.example.LocalAuth (as if from the bus)
    forge.py enroll-status        EnrollStatus(enroll-stage-passed, 99, 99)
                                  to every connection, as if from the service
    forge.py evaluation-status ID EvaluationStatus(ID, no-match) to every
                                  connection, as if from the service

Prints the number of signals sent, once those sent to the service are handled.
"""
import os
import sys

import dbus
import dbus.lowlevel

bus = dbus.bus.BusConnection(os.environ["DBUS_SYSTEM_BUS_ADDRESS"])
driver = dbus.Interface(bus.get_object("org.freedesktop.DBus", "/org/freedesktop/DBus"), "org.freedesktop.DBus")
names = [str(n) for n in driver.ListNames() if str(n).startswith(":") and str(n) != bus.get_unique_name()]
sent = 0
kind = sys.argv[1]
for name in names:
    if kind == "name-owner-changed":
        message = dbus.lowlevel.SignalMessage("/org/freedesktop/DBus", "org.freedesktop.DBus", "NameOwnerChanged")
        message.set_destination("org.example.LocalAuth")
        message.append(name, name, "", signature="sss")
    elif kind == "enroll-status":
        message = dbus.lowlevel.SignalMessage("/org/example/LocalAuth", "org.example.LocalAuth", "EnrollStatus")
        message.set_destination(name)
        message.append("enroll-stage-passed", dbus.UInt32(99), dbus.UInt32(99), signature="suu")
    elif kind == "evaluation-status":
        message = dbus.lowlevel.SignalMessage("/org/example/LocalAuth", "org.example.LocalAuth", "EvaluationStatus")
        message.set_destination(name)
        message.append(sys.argv[2], "no-match", signature="ss")
    else:
        sys.exit("unknown kind " + kind)
    bus.send_message(message)
    sent += 1
bus.flush()
# One call to the service on this same connection: the bus delivers our
# messages to it in order, so once this is answered, every forged signal sent
# to the service has been handled.
try:
    bus.call_blocking("org.example.LocalAuth", "/org/example/LocalAuth", "org.example.LocalAuth",
                      "CanEvaluatePolicy", "u", (dbus.UInt32(1),))
except dbus.exceptions.DBusException:
    pass
print("sent=%d" % sent)
