#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A password manager's quick unlock, from Python (PyGObject and liblocalauth-1).

The four calls of KeePassXC's quick-unlock interface (setKey, getKey,
hasKey, reset), which Bitwarden's biometric trait also has
(enroll_persistent, unlock), on LocalAuth.QuickUnlock (docs/APPS.md):

    quick-unlock.py set DATABASE      a new random 32-byte key kept for DATABASE
    quick-unlock.py get DATABASE      the key, after the owner's finger
    quick-unlock.py has DATABASE      whether a key is kept (no finger)
    quick-unlock.py forget DATABASE   forget DATABASE's key
    quick-unlock.py reset             forget every key of this app

Each prints one line; a key is shown only as its SHA-256, never itself. The
app id is LOCALAUTH_APP_ID (a real app uses its own, e.g.
org.keepassxc.KeePassXC; a Flatpak's comes from its sandbox). A real app
keeps the key only long enough to decrypt its database's composite key,
which it stored encrypted with the key when quick unlock was turned on.
"""
import hashlib
import os
import sys

import gi

gi.require_version("LocalAuth", "1.0")
from gi.repository import GLib, LocalAuth  # noqa: E402


def say(line):
    print(line, flush=True)


def failure(step, error):
    name = LocalAuth.error_get_dbus_error_name(error) or "-"
    say(f"{step}: error {error.code} {name}")
    return 1


def wait(start):
    """Runs the main loop until the async call `start(callback)` answers."""
    loop = GLib.MainLoop()
    answer = {}

    def done(_source, result):
        answer["result"] = result
        loop.quit()

    start(done)
    loop.run()
    return answer["result"]


def digest(key):
    return hashlib.sha256(bytes(key.get_data())).hexdigest()[:16]


def main(argv):
    quick = LocalAuth.QuickUnlock.new()
    command, database = (argv[1:] + [None, None])[:2]
    try:
        if command == "set" and database is not None:
            # os.urandom: the kernel's CSPRNG, as the apps' own key generators.
            key = GLib.Bytes.new(os.urandom(32))
            quick.set_key_finish(wait(lambda done: quick.set_key(database, key, None, done)))
            say(f"set: ok sha256={digest(key)}")
        elif command == "get" and database is not None:
            quick.connect("status", lambda _quick, status: say(f"status: {status}"))
            key = quick.get_key_finish(wait(lambda done: quick.get_key(database, f"Unlock {database}", None, done)))
            say(f"get: ok sha256={digest(key)}")
        elif command == "has" and database is not None:
            say(f"has: {'yes' if quick.has_key(database) else 'no'}")
        elif command == "forget" and database is not None:
            quick.reset_key_finish(wait(lambda done: quick.reset_key(database, None, done)))
            say("forget: ok")
        elif command == "reset" and database is None:
            quick.reset_finish(wait(lambda done: quick.reset(None, done)))
            say("reset: ok")
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except GLib.Error as error:
        return failure(command, error)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
