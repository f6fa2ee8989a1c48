#!/usr/bin/python3
# Drives python-dbusmock's logind and upower stand-ins on the rig's bus, and
# listens for EnvironmentChanged as another user (Tests/EndToEndTests/EnvironmentTests.swift).
#   mock-world.py ADDRESS setup            GetSessionByPID, LidClosed, sessions: root local on seat0, nobody remote
#   mock-world.py ADDRESS sleep true|false PrepareForSleep
#   mock-world.py ADDRESS sleep-flip       PrepareForSleep(true) then (false) at once
#   mock-world.py ADDRESS lid true|false   UPower's LidIsClosed (emits PropertiesChanged)
#   mock-world.py ADDRESS inhibitors       logind's inhibitors, one "what who mode" a line
#   mock-world.py ADDRESS listen OUT       SubscribeEnvironment, then one line per EnvironmentChanged into OUT
import sys
import dbus

address, command = sys.argv[1], sys.argv[2]
MOCK = 'org.freedesktop.DBus.Mock'

if command == 'listen':
    import dbus.mainloop.glib
    from gi.repository import GLib
    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.bus.BusConnection(address)
    out = open(sys.argv[3], 'a', buffering=1)
    def changed(state, sender=None):
        out.write('changed %s\n' % ','.join('%s=%s' % (k, bool(v) if isinstance(v, dbus.Boolean) else len(v) if isinstance(v, dbus.Array) else int(v)) for k, v in sorted(state.items())))
    owner = bus.get_name_owner('org.example.LocalAuth')
    bus.add_signal_receiver(changed, signal_name='EnvironmentChanged', dbus_interface='org.example.LocalAuth',
                            sender_keyword='sender', bus_name=owner)
    service = bus.get_object('org.example.LocalAuth', '/org/example/LocalAuth')
    service.SubscribeEnvironment(dbus_interface='org.example.LocalAuth')
    out.write('subscribed\n')
    GLib.MainLoop().run()
    sys.exit(0)

bus = dbus.bus.BusConnection(address)
login1 = bus.get_object('org.freedesktop.login1', '/org/freedesktop/login1')
if command == 'setup':
    login1.AddMethod('org.freedesktop.login1.Manager', 'GetSessionByPID', 'u', 'o',
        "ret = None\n"
        "for k, o in objects.items():\n"
        "    if '/session/' in k and o.props['org.freedesktop.login1.Session']['User'][0] == os.stat('/proc/%d' % args[0]).st_uid: ret = dbus.ObjectPath(k)\n"
        "if ret is None: raise dbus.exceptions.DBusException('no session', name='org.freedesktop.login1.NoSessionForPID')", dbus_interface=MOCK)
    login1.AddProperty('org.freedesktop.login1.Manager', 'LidClosed', False, dbus_interface=MOCK)
    login1.AddSession('c1', 'seat0', dbus.UInt32(0), 'root', True, dbus_interface=MOCK)
    path = login1.AddSession('c2', 'seat1', dbus.UInt32(65534), 'nobody', True, dbus_interface=MOCK)
    session = bus.get_object('org.freedesktop.login1', path)
    session.Set('org.freedesktop.login1.Session', 'Remote', True, dbus_interface='org.freedesktop.DBus.Properties')
    session.Set('org.freedesktop.login1.Session', 'Seat', dbus.Struct(('', dbus.ObjectPath('/')), signature='so'),
                dbus_interface='org.freedesktop.DBus.Properties')
elif command == 'sleep':
    login1.EmitSignal('org.freedesktop.login1.Manager', 'PrepareForSleep', 'b', [sys.argv[3] == 'true'],
                      dbus_interface=MOCK)
elif command == 'sleep-flip':
    # A suspend that failed at once: PrepareForSleep(true), then (false) right after.
    for sleeping in (True, False):
        login1.EmitSignal('org.freedesktop.login1.Manager', 'PrepareForSleep', 'b', [sleeping],
                          dbus_interface=MOCK)
elif command == 'lid':
    upower = bus.get_object('org.freedesktop.UPower', '/org/freedesktop/UPower')
    upower.Set('org.freedesktop.UPower', 'LidIsClosed', sys.argv[3] == 'true',
               dbus_interface='org.freedesktop.DBus.Properties')
elif command == 'inhibitors':
    for what, who, why, mode, uid, pid in login1.ListInhibitors(dbus_interface='org.freedesktop.login1.Manager'):
        print(what, who, mode)
else:
    sys.exit('unknown command ' + command)
