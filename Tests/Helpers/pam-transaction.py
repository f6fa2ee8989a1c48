#!/usr/bin/python3
"""One PAM transaction driven step by step through the real libpam, as
sudo and screen lockers drive theirs (pamtester cannot change PAM_USER
between steps).

    pam-transaction.py SERVICE USER PASSWORD STEP...

STEP is one of
    authenticate           pam_authenticate(0)
    authenticate-again     pam_authenticate(0), and the transaction goes on
                           whatever it returns (login and gdm let a person
                           try again on the same handle)
    user=NAME              pam_set_item(PAM_USER, NAME): sudo sets the
                           run-as user after authenticating the invoking one
    setcred-reinitialize   pam_setcred(PAM_REINITIALIZE_CRED), as sudo
    setcred-refresh        pam_setcred(PAM_REFRESH_CRED), as swaylock/i3lock
    setcred-establish      pam_setcred(PAM_ESTABLISH_CRED), as login

Every prompt that hides its echo is answered with PASSWORD. Prints one line
per step, `STEP=pam_strerror`, and exits 0 (the steps' results are the
output); a step that fails ends the transaction.
"""
import ctypes
import ctypes.util
import sys

PAM_PROMPT_ECHO_OFF, PAM_PROMPT_ECHO_ON = 1, 2
PAM_USER = 2
PAM_ESTABLISH_CRED, PAM_REINITIALIZE_CRED, PAM_REFRESH_CRED = 0x0002, 0x0008, 0x0010


class PamMessage(ctypes.Structure):
    _fields_ = [("msg_style", ctypes.c_int), ("msg", ctypes.c_char_p)]


class PamResponse(ctypes.Structure):
    _fields_ = [("resp", ctypes.c_void_p), ("resp_retcode", ctypes.c_int)]


CONV = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.POINTER(PamMessage)),
                        ctypes.POINTER(ctypes.POINTER(PamResponse)), ctypes.c_void_p)


class PamConv(ctypes.Structure):
    _fields_ = [("conv", CONV), ("appdata_ptr", ctypes.c_void_p)]


libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.calloc.restype = ctypes.c_void_p
libc.strdup.restype = ctypes.c_void_p
libc.strdup.argtypes = [ctypes.c_char_p]
pam = ctypes.CDLL("libpam.so.0")
pam.pam_strerror.restype = ctypes.c_char_p

service, user, password, steps = sys.argv[1], sys.argv[2], sys.argv[3].encode(), sys.argv[4:]


def converse(count, messages, responses, _):
    # libpam frees the answers: they must come from malloc.
    answers = libc.calloc(count, ctypes.sizeof(PamResponse))
    array = ctypes.cast(answers, ctypes.POINTER(PamResponse))
    for i in range(count):
        style = messages[i].contents.msg_style
        if style in (PAM_PROMPT_ECHO_OFF, PAM_PROMPT_ECHO_ON):
            array[i].resp = libc.strdup(password if style == PAM_PROMPT_ECHO_OFF else user.encode())
        elif messages[i].contents.msg:
            print("message:", messages[i].contents.msg.decode(errors="replace"), flush=True)
    responses[0] = array
    return 0


conversation = PamConv(CONV(converse), None)
handle = ctypes.c_void_p()
status = pam.pam_start(service.encode(), user.encode(), ctypes.byref(conversation), ctypes.byref(handle))
if status != 0:
    sys.exit("pam_start: %d" % status)
for step in steps:
    if step in ("authenticate", "authenticate-again"):
        status = pam.pam_authenticate(handle, 0)
    elif step.startswith("user="):
        status = pam.pam_set_item(handle, PAM_USER, ctypes.c_char_p(step[5:].encode()))
    elif step.startswith("setcred-"):
        flag = {"reinitialize": PAM_REINITIALIZE_CRED, "refresh": PAM_REFRESH_CRED,
                "establish": PAM_ESTABLISH_CRED}[step[8:]]
        status = pam.pam_setcred(handle, flag)
    else:
        sys.exit("unknown step " + step)
    print("%s=%s" % (step, pam.pam_strerror(handle, status).decode()), flush=True)
    if status != 0 and step != "authenticate-again":
        break
pam.pam_end(handle, status)
