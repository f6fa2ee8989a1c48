#!/usr/bin/python3
"""One uid pushing on the rights bounds, for the per-uid limit tests.

    rights-flood.py save APPS PER_APP SECRET_BYTES   SaveRight APPS*PER_APP rights
    rights-flood.py keys APPS PER_APP                 GetPublicKey of each
    rights-flood.py list APP                          ListRights of one app, timed
    rights-flood.py subscribe CONNECTIONS SECONDS     SubscribeEnvironment from each
                                                      connection, kept for SECONDS

App ids are org.example.Flood<N>. Prints one line per outcome kind
(`ok=N`, `error NAME=N`); `list` also prints `rights=N` and `ms=T` (the
median of 5 calls); `subscribe` prints `subscribed` once done, and keeps
its connections for SECONDS.
"""
import collections
import os
import sys
import time

import dbus

bus_address = os.environ["DBUS_SYSTEM_BUS_ADDRESS"]
outcomes = collections.Counter()


def service_on(bus):
    return dbus.Interface(bus.get_object("org.example.LocalAuth", "/org/example/LocalAuth", introspect=False),
                          "org.example.LocalAuth")


def attempt(call):
    try:
        result = call()
        outcomes["ok"] += 1
        return result
    except dbus.exceptions.DBusException as error:
        outcomes["error " + error.get_dbus_name()] += 1
        return None


mode = sys.argv[1]
bus = dbus.bus.BusConnection(bus_address)
service = service_on(bus)
if mode in ("save", "keys"):
    apps, per_app = int(sys.argv[2]), int(sys.argv[3])
    secret = dbus.ByteArray(b"\x07" * int(sys.argv[4])) if mode == "save" else None
    for app in range(apps):
        for index in range(per_app):
            options = {"app-id": "org.example.Flood%d" % app}
            if mode == "save":
                options["secret"] = secret
                attempt(lambda: service.SaveRight("r%d" % index, "default", options, signature="ssa{sv}"))
            else:
                attempt(lambda: service.GetPublicKey("r%d" % index, options, signature="sa{sv}"))
elif mode == "list":
    options = {"app-id": sys.argv[2]}
    times = []
    rights = None
    for _ in range(5):
        started = time.monotonic()
        rights = attempt(lambda: service.ListRights(options, signature="a{sv}"))
        times.append((time.monotonic() - started) * 1000)
    print("rights=%d" % (len(rights) if rights is not None else -1))
    print("ms=%.1f" % sorted(times)[2])
elif mode == "subscribe":
    kept = []
    for _ in range(int(sys.argv[2])):
        connection = dbus.bus.BusConnection(bus_address)
        kept.append(connection)
        attempt(lambda: service_on(connection).SubscribeEnvironment())
for kind, count in sorted(outcomes.items()):
    print("%s=%d" % (kind, count))
if mode == "subscribe":
    print("subscribed")
    sys.stdout.flush()
    time.sleep(float(sys.argv[3]))
sys.stdout.flush()
