#!/usr/bin/python3
# A prompt agent that registers and stays on the bus (its registration lives
# as long as its connection), for the per-uid agent limit (CallersTests).
#   hold-agent.py ADDRESS   prints "registered" or "refused <error name>", then waits
import sys
import time
import dbus

bus = dbus.bus.BusConnection(sys.argv[1])
out = sys.stdout
service = bus.get_object('org.example.LocalAuth', '/org/example/LocalAuth')
try:
    service.RegisterPromptAgent(dbus.ObjectPath('/org/example/LocalAuth/PromptAgent'),
                                dbus_interface='org.example.LocalAuth')
    out.write('registered\n')
    out.flush()
except dbus.exceptions.DBusException as error:
    out.write('refused %s\n' % error.get_dbus_name())
    out.flush()
    sys.exit(0)
while True:
    time.sleep(3600)
