#!/usr/bin/python3
"""A claimer that leaves while its Claim is on its way (issue 30 item 6).

    claim-race.py COUNT

COUNT times: connects to the bus, sends Device 0's Claim("") without
waiting for the answer, stays 0 to 4 ms, and closes the connection. Prints
`sent=COUNT` at the end.
"""
import os
import random
import sys
import time

import dbus
import dbus.lowlevel

count = int(sys.argv[1])
address = os.environ["DBUS_SYSTEM_BUS_ADDRESS"]
for _ in range(count):
    bus = dbus.bus.BusConnection(address)
    claim = dbus.lowlevel.MethodCallMessage("net.reactivated.Fprint", "/net/reactivated/Fprint/Device/0",
                                            "net.reactivated.Fprint.Device", "Claim")
    claim.append("", signature="s")
    bus.send_message(claim)
    bus.flush()
    time.sleep(random.uniform(0, 0.004))
    bus.close()
print("sent=%d" % count, flush=True)
