#!/usr/bin/python3
# python-dbusmock's logind template, shaped like real systemd-logind on a
# desktop (Tests/EndToEndTests/CallersTests.swift). The template has sessions
# and users but no GetSessionByPID/GetUserByPID and leaves User.Display
# empty; real logind answers both from the process's cgroup:
#   .../user-UID.slice/session-ID.scope/...     GetSessionByPID: session ID
#   .../user-UID.slice/user@UID.service/...     GetSessionByPID fails with
#                                               org.freedesktop.login1.NoSessionForPID
#                                               ("services forked off systemd --user
#                                               belong to no session"); GetUserByPID: user UID
#   anything else (a system service)            NoSessionForPID / NoUserForPID
# and each user's Display names their graphical session.
#
#   logind-desktop.py ADDRESS setup
#   logind-desktop.py ADDRESS session ID UID NAME SEAT ACTIVE STATE [remote] [display] [greeter] [leader=PID]
#       ACTIVE true|false; STATE active|online|closing; "display": the user's Display;
#       "greeter": Class greeter (gdm's login screen); leader=PID: the session's Leader
#       (the template says pid 1). An active session is its seat's ActiveSession.
#   logind-desktop.py ADDRESS set ID ACTIVE STATE     a session's Active and State now (and the seat's ActiveSession)
#   logind-desktop.py ADDRESS seat-active SEAT ID|none  the seat's ActiveSession: "none" as real logind
#       has it while a getty's VT is in front (no session on that VT)
import sys
import dbus

address, command = sys.argv[1], sys.argv[2]
MOCK = 'org.freedesktop.DBus.Mock'
PROPS = 'org.freedesktop.DBus.Properties'
SESSION = 'org.freedesktop.login1.Session'
SEAT = 'org.freedesktop.login1.Seat'
bus = dbus.bus.BusConnection(address)
login1 = bus.get_object('org.freedesktop.login1', '/org/freedesktop/login1')

# The cgroup path of a pid, as logind reads it (the systemd hierarchy, or the
# unified one): one place for both methods.
CGROUP = (
    "def cgroup_of(pid):\n"
    "    lines = open('/proc/%d/cgroup' % pid).read().splitlines()\n"
    "    for line in lines:\n"
    "        if line.split(':')[1] == 'name=systemd': return line.split(':', 2)[2]\n"
    "    for line in lines:\n"
    "        if line.startswith('0::'): return line[3:]\n"
    "    return ''\n"
    "try:\n"
    "    parts = cgroup_of(args[0]).split('/')\n"
    "except OSError:\n"
    "    raise dbus.exceptions.DBusException('no such process', name='org.freedesktop.login1.NoSuchProcess')\n"
)

if command == 'setup':
    login1.AddMethod('org.freedesktop.login1.Manager', 'GetSessionByPID', 'u', 'o', CGROUP +
        "ret = None\n"
        "for part in parts:\n"
        "    if part.startswith('user@'): break\n"
        "    if part.startswith('session-') and part.endswith('.scope'):\n"
        "        path = '/org/freedesktop/login1/session/' + part[len('session-'):-len('.scope')]\n"
        "        if path in objects: ret = dbus.ObjectPath(path)\n"
        "        break\n"
        "if ret is None: raise dbus.exceptions.DBusException('PID %d does not belong to any known session' % args[0], "
        "name='org.freedesktop.login1.NoSessionForPID')", dbus_interface=MOCK)
    login1.AddMethod('org.freedesktop.login1.Manager', 'GetUserByPID', 'u', 'o', CGROUP +
        "ret = None\n"
        "for part in parts:\n"
        "    if part.startswith('user-') and part.endswith('.slice'):\n"
        "        path = '/org/freedesktop/login1/user/' + part[len('user-'):-len('.slice')]\n"
        "        if path in objects: ret = dbus.ObjectPath(path)\n"
        "if ret is None: raise dbus.exceptions.DBusException('PID %d does not belong to any logged in user' % args[0], "
        "name='org.freedesktop.login1.NoUserForPID')", dbus_interface=MOCK)
    login1.AddProperty('org.freedesktop.login1.Manager', 'LidClosed', False, dbus_interface=MOCK)
elif command == 'session':
    sid, uid, name, seat, active, state = sys.argv[3:9]
    flags = sys.argv[9:]
    seat_object = bus.get_object('org.freedesktop.login1', '/org/freedesktop/login1/seat/%s' % seat) if seat else None
    try:
        before = seat_object.Get(SEAT, 'ActiveSession', dbus_interface=PROPS) if seat_object else None
    except dbus.exceptions.DBusException:
        before = None   # the seat is made by AddSession
    # The template cannot add a session without a seat: a placeholder seat, then no seat (below).
    path = login1.AddSession(sid, seat or 'seatnone', dbus.UInt32(int(uid)), name, active == 'true',
                             dbus_interface=MOCK)
    session = bus.get_object('org.freedesktop.login1', path)
    session.Set(SESSION, 'State', state, dbus_interface=PROPS)
    session.Set(SESSION, 'Remote', 'remote' in flags, dbus_interface=PROPS)
    if 'greeter' in flags:
        session.Set(SESSION, 'Class', 'greeter', dbus_interface=PROPS)
    for flag in flags:
        if flag.startswith('leader='):
            session.Set(SESSION, 'Leader', dbus.UInt32(int(flag[len('leader='):])), dbus_interface=PROPS)
    # The template makes every new session its seat's active one; real logind only the active one.
    if seat and active != 'true':
        seat_object = bus.get_object('org.freedesktop.login1', '/org/freedesktop/login1/seat/%s' % seat)
        seat_object.Set(SEAT, 'ActiveSession', before or dbus.Struct(('', dbus.ObjectPath('/')), signature='so'),
                        dbus_interface=PROPS)
    if seat == '':
        session.Set(SESSION, 'Seat', dbus.Struct(('', dbus.ObjectPath('/')), signature='so'), dbus_interface=PROPS)
    if 'display' in flags:
        user = bus.get_object('org.freedesktop.login1', '/org/freedesktop/login1/user/%s' % uid)
        user.Set('org.freedesktop.login1.User', 'Display', dbus.Struct((sid, dbus.ObjectPath(path)), signature='so'),
                 dbus_interface=PROPS)
elif command == 'set':
    sid, active, state = sys.argv[3:6]
    session = bus.get_object('org.freedesktop.login1', '/org/freedesktop/login1/session/' + sid)
    session.Set(SESSION, 'Active', active == 'true', dbus_interface=PROPS)
    session.Set(SESSION, 'State', state, dbus_interface=PROPS)
    seat = session.Get(SESSION, 'Seat', dbus_interface=PROPS)
    if seat[0]:
        seat_object = bus.get_object('org.freedesktop.login1', seat[1])
        current = seat_object.Get(SEAT, 'ActiveSession', dbus_interface=PROPS)
        if active == 'true':
            seat_object.Set(SEAT, 'ActiveSession', dbus.Struct((sid, session.object_path), signature='so'),
                            dbus_interface=PROPS)
        elif current[0] == sid:
            seat_object.Set(SEAT, 'ActiveSession', dbus.Struct(('', dbus.ObjectPath('/')), signature='so'),
                            dbus_interface=PROPS)
elif command == 'seat-active':
    seat, sid = sys.argv[3:5]
    seat_object = bus.get_object('org.freedesktop.login1', '/org/freedesktop/login1/seat/%s' % seat)
    value = ('', dbus.ObjectPath('/')) if sid == 'none' else (sid, dbus.ObjectPath('/org/freedesktop/login1/session/' + sid))
    seat_object.Set(SEAT, 'ActiveSession', dbus.Struct(value, signature='so'), dbus_interface=PROPS)
else:
    sys.exit('unknown command ' + command)
