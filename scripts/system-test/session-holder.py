#!/usr/bin/python3
"""Opens a PAM session and holds it until SIGTERM, as a display manager's
worker does (gdm opens the greeter's session with gdm-launch-environment and
the person's with gdm-password, then waits). Run as root, in a system
service (systemd-run --unit=...): pam_systemd registers the session with
logind, with the class, type and seat in XDG_SESSION_CLASS,
XDG_SESSION_TYPE and XDG_SEAT; the holder itself becomes the session's
leader. Usage: session-holder.py PAM-SERVICE USER
Prints "session XDG_SESSION_ID" once the session is open, and writes the
id to $SYSTEST_SESSION_FILE."""
import ctypes, ctypes.util, os, signal, sys

libpam = ctypes.CDLL(ctypes.util.find_library("pam") or "libpam.so.0")


class PamMessage(ctypes.Structure):
    _fields_ = [("msg_style", ctypes.c_int), ("msg", ctypes.c_char_p)]


class PamResponse(ctypes.Structure):
    _fields_ = [("resp", ctypes.c_char_p), ("resp_retcode", ctypes.c_int)]


CONV_FUNC = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.POINTER(PamMessage)),
                             ctypes.POINTER(ctypes.POINTER(PamResponse)), ctypes.c_void_p)


class PamConv(ctypes.Structure):
    _fields_ = [("conv", CONV_FUNC), ("appdata_ptr", ctypes.c_void_p)]


@CONV_FUNC
def conversation(count, messages, responses, data):
    return 19  # PAM_CONV_ERR: nothing here answers questions


libpam.pam_start.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(PamConv), ctypes.POINTER(ctypes.c_void_p)]
libpam.pam_getenv.restype = ctypes.c_char_p
libpam.pam_getenv.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
libpam.pam_putenv.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
libpam.pam_set_item.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
for name in ("pam_open_session", "pam_close_session", "pam_acct_mgmt"):
    getattr(libpam, name).argtypes = [ctypes.c_void_p, ctypes.c_int]
libpam.pam_end.argtypes = [ctypes.c_void_p, ctypes.c_int]

service, user = sys.argv[1].encode(), sys.argv[2].encode()
conv = PamConv(conversation, None)
handle = ctypes.c_void_p()
result = libpam.pam_start(service, user, ctypes.byref(conv), ctypes.byref(handle))
if result != 0:
    sys.exit("pam_start: %d" % result)
for variable in ("XDG_SEAT", "XDG_SESSION_CLASS", "XDG_SESSION_TYPE", "XDG_SESSION_DESKTOP", "XDG_VTNR"):
    if os.environ.get(variable):
        libpam.pam_putenv(handle, ("%s=%s" % (variable, os.environ[variable])).encode())
tty = os.environ.get("SYSTEST_PAM_TTY")
if tty:
    libpam.pam_set_item(handle, 3, ctypes.c_char_p(tty.encode()))  # PAM_TTY
result = libpam.pam_acct_mgmt(handle, 0) or libpam.pam_open_session(handle, 0)
if result != 0:
    sys.exit("pam_open_session: %d" % result)
session = libpam.pam_getenv(handle, b"XDG_SESSION_ID")
session = session.decode() if session else "?"
print("session", session, flush=True)
# The journal files this line under the session's scope (logind moved us
# there), not under the unit: the id goes to a file as well.
if os.environ.get("SYSTEST_SESSION_FILE"):
    with open(os.environ["SYSTEST_SESSION_FILE"] + ".tmp", "w") as out:
        out.write(session + "\n")
    os.rename(os.environ["SYSTEST_SESSION_FILE"] + ".tmp", os.environ["SYSTEST_SESSION_FILE"])

stop = []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
signal.signal(signal.SIGINT, lambda *_: stop.append(1))
while not stop:
    signal.pause()
libpam.pam_close_session(handle, 0)
libpam.pam_end(handle, 0)
