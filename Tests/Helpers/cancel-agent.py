#!/usr/bin/python3
"""A hostile polkit authentication agent, for the security tests.

    cancel-agent.py METHOD SIGNATURE JSON-ARGUMENTS

Registers itself with polkitd as the authentication agent of its own process
(a unix-process subject, as `pkttyagent --process` does; any program may do
this for itself), answers every BeginAuthentication with
org.freedesktop.PolicyKit1.Error.Cancelled at once, and calls METHOD of
org.example.LocalAuth with the arguments. polkit then reports the check as
"not authorized, dismissed". Prints:

    message=TEXT      what polkit asked the agent to show, once per request
    asked=N           how many times polkit asked this agent
    result=ok         or: error=NAME message
"""
import json
import os
import sys

import dbus
import dbus.service
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

AGENT_PATH = "/org/example/LocalAuthTest/CancellingAgent"
asked = 0


class CancellingAgent(dbus.service.Object):
    @dbus.service.method("org.freedesktop.PolicyKit1.AuthenticationAgent",
                         in_signature="sssa{ss}sa(sa{sv})", out_signature="")
    def BeginAuthentication(self, action_id, message, icon, details, cookie, identities):
        global asked
        asked += 1
        print("message=%s" % message)
        raise dbus.exceptions.DBusException("the person clicked Cancel",
                                            name="org.freedesktop.PolicyKit1.Error.Cancelled")

    @dbus.service.method("org.freedesktop.PolicyKit1.AuthenticationAgent",
                         in_signature="s", out_signature="")
    def CancelAuthentication(self, cookie):
        pass


def start_time():
    with open("/proc/self/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return int(fields[19])  # field 22 of the whole line


def main():
    method, signature, arguments = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    DBusGMainLoop(set_as_default=True)
    bus = dbus.SystemBus()
    CancellingAgent(bus, AGENT_PATH)
    authority = dbus.Interface(bus.get_object("org.freedesktop.PolicyKit1", "/org/freedesktop/PolicyKit1/Authority"),
                               "org.freedesktop.PolicyKit1.Authority")
    subject = ("unix-process", {"pid": dbus.UInt32(os.getpid()), "start-time": dbus.UInt64(start_time()),
                                "uid": dbus.Int32(os.getuid())})
    authority.RegisterAuthenticationAgent(subject, "C", AGENT_PATH)

    loop = GLib.MainLoop()
    outcome = []

    def done(*values):
        outcome.append("result=ok")
        loop.quit()

    def failed(error):
        outcome.append("error=%s %s" % (error.get_dbus_name(), error.get_dbus_message()))
        loop.quit()

    service = bus.get_object("org.example.LocalAuth", "/org/example/LocalAuth")
    service.get_dbus_method(method, "org.example.LocalAuth")(
        *arguments, signature=signature, reply_handler=done, error_handler=failed, timeout=60)
    loop.run()
    print("asked=%d" % asked)
    print(outcome[0])
    sys.stdout.flush()


main()
