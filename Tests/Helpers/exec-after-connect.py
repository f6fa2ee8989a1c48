#!/usr/bin/python3
"""A caller that connects, calls once, then execs another program that keeps
its bus connection (issue 30, item 10; Tests/EndToEndTests/CallersTests.swift).

    exec-after-connect.py first PROGRAM   connect to $DBUS_SYSTEM_BUS_ADDRESS (a
                                          unix:path=), Hello, GetDomainState; then
                                          exec PROGRAM (a python3) with this script
                                          and the connection's fd, not closed on exec
    exec-after-connect.py quiet PROGRAM   the same, without the first call: Hello, a
                                          second's wait, then the exec
    exec-after-connect.py again FD        (run by the exec) GetDomainState again
                                          on the inherited connection

Prints `first ok`/`first error NAME`, then `again ok`/`again error NAME`. A
raw client: libdbus and GDBus cannot adopt a connection another process
authenticated; this one reads whole messages only, so nothing is lost at exec.
"""
import os
import socket
import struct
import sys

DEST, PATH, IFACE = "org.example.LocalAuth", "/org/example/LocalAuth", "org.example.LocalAuth"


def pad(data, n):
    return data + b"\0" * (-len(data) % n)


def string(value, code):
    raw = value.encode()
    if code == "g":
        return bytes([len(raw)]) + raw + b"\0"
    return struct.pack("<I", len(raw)) + raw + b"\0"


def method_call(serial, path, interface, member, destination):
    fields = b""
    for code, kind, value in ((1, "o", path), (2, "s", interface), (3, "s", member), (6, "s", destination)):
        fields = pad(fields, 8) + bytes([code]) + string(kind, "g")
        fields = pad(fields, 4) + string(value, kind)
    header = struct.pack("<cBBBII", b"l", 1, 0, 1, 0, serial) + struct.pack("<I", len(fields)) + fields
    return pad(header, 8)


def read_exact(sock, count):
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise EOFError("the bus closed the connection")
        data += chunk
    return data


def read_message(sock):
    """One whole message: (type, reply_serial, error_name)."""
    fixed = read_exact(sock, 16)
    assert fixed[0:1] == b"l", fixed
    body_length, _, fields_length = struct.unpack("<III", fixed[4:16])
    rest = read_exact(sock, (-(16 + fields_length) % 8) + fields_length + body_length)
    fields = rest[:fields_length]
    reply_serial, error, offset = None, None, 0
    while offset < len(fields):
        offset += -offset % 8
        code, sig_length = fields[offset], fields[offset + 1]
        kind = fields[offset + 2:offset + 2 + sig_length].decode()
        offset += 3 + sig_length
        if kind in ("s", "o"):
            offset += -offset % 4
            (length,) = struct.unpack("<I", fields[offset:offset + 4])
            value = fields[offset + 4:offset + 4 + length].decode()
            offset += 5 + length
        elif kind == "g":
            length = fields[offset]
            value = fields[offset + 1:offset + 1 + length].decode()
            offset += 2 + length
        elif kind == "u":
            offset += -offset % 4
            (value,) = struct.unpack("<I", fields[offset:offset + 4])
            offset += 4
        else:
            raise ValueError("header field type " + kind)
        if code == 5:
            reply_serial = value
        if code == 4:
            error = value
    return fixed[1], reply_serial, error


def call(sock, serial, member, path=PATH, interface=IFACE, destination=DEST):
    sock.sendall(method_call(serial, path, interface, member, destination))
    while True:
        kind, reply_serial, error = read_message(sock)
        if kind in (2, 3) and reply_serial == serial:
            return "ok" if kind == 2 else "error " + (error or "?")


if sys.argv[1] in ("first", "quiet"):
    address = os.environ["DBUS_SYSTEM_BUS_ADDRESS"]
    assert address.startswith("unix:path="), address
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(address[len("unix:path="):].split(",")[0])
    sock.sendall(b"\0AUTH EXTERNAL " + str(os.getuid()).encode().hex().encode() + b"\r\n")
    line = b""
    while not line.endswith(b"\r\n"):
        line += sock.recv(1)
    assert line.startswith(b"OK "), line
    sock.sendall(b"BEGIN\r\n")
    assert call(sock, 1, "Hello", "/org/freedesktop/DBus", "org.freedesktop.DBus", "org.freedesktop.DBus") == "ok"
    if sys.argv[1] == "first":
        print("first", call(sock, 2, "GetDomainState"), flush=True)
    else:
        import time
        time.sleep(1)   # the service reads a new connection's process when the bus announces it
    fd = sock.detach()
    os.set_inheritable(fd, True)
    os.execv(sys.argv[2], [sys.argv[2], os.path.abspath(__file__), "again", str(fd)])
elif sys.argv[1] == "again":
    sock = socket.socket(fileno=int(sys.argv[2]))
    print("again", call(sock, 3, "GetDomainState"), flush=True)
else:
    sys.exit("unknown command " + sys.argv[1])
