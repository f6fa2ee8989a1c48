#!/usr/bin/python3
"""A right's secret from Python, over D-Bus only (docs/RIGHTS.md).

    vault.py store ID SECRET    keep SECRET as right ID (fingerprint required later)
    vault.py load ID            after the fingerprint, print the secret
    vault.py list               the identifiers of this app's rights

Needs python3-dbus. The app id is this program's own reverse-DNS id.
"""
import sys

import dbus

APP = {"app-id": "org.example.PyVault"}


def service():
    bus = dbus.SystemBus()
    return dbus.Interface(bus.get_object("org.example.LocalAuth", "/org/example/LocalAuth"),
                          "org.example.LocalAuth")


def options(**extra):
    return dbus.Dictionary(dict(APP, **extra), signature="sv")


def main(argv):
    la = service()
    if argv[1:2] == ["store"] and len(argv) == 4:
        la.SaveRight(argv[2], "biometry", options(secret=dbus.ByteArray(argv[3].encode())))
    elif argv[1:2] == ["load"] and len(argv) == 3:
        # The call waits for the finger; the handle works only on this connection.
        handle = la.AuthorizeRight(argv[2], "Open the Python vault", options(), timeout=120)
        try:
            print(bytes(la.LoadSecret(handle)).decode())
        finally:
            la.Deauthorize(handle)
    elif argv[1:2] == ["list"]:
        for right in la.ListRights(options()):
            print(right["identifier"])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except dbus.DBusException as error:
        print(f"{error.get_dbus_name()}: {error.get_dbus_message()}", file=sys.stderr)
        sys.exit(1)
