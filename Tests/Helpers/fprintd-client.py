#!/usr/bin/python3
"""A client of fprintd's net.reactivated.Fprint over GDBus (PyGObject), for
the tests of `localauthd --fprintd` (Tests/EndToEndTests/FprintdContractTests).
It calls exactly what fprintd's clients call, in their order, on one connection.

    fprintd-client.py gnome-settings-enroll FINGER
        GNOME Settings' enroll sequence (cc-fingerprint-manager / -dialog):
        GetDefaultDevice, the device's properties, Claim(""),
        ListEnrolledFingers(""), EnrollStart(FINGER), EnrollStatus until done,
        EnrollStop, ListEnrolledFingers(""), Release. Prints `stages N`,
        `enrolling` once EnrollStart returned, `status RESULT DONE` per signal,
        `fingers A,B`.
    fprintd-client.py verify FINGER
        Claim(""), VerifyStart(FINGER), VerifyFingerSelected and VerifyStatus
        until done, VerifyStop, Release. Prints `verifying`, `selected F`,
        `status RESULT DONE`.
    fprintd-client.py calls CALL...
        Each CALL is METHOD or METHOD:ARGUMENT (one string argument), called in
        turn on the default device; prints `METHOD ok [REPLY]` or
        `METHOD error NAME: MESSAGE`.
    fprintd-client.py interrupt FINGER METHOD
        Claim(""), VerifyStart(FINGER), prints `verifying`, then calls METHOD
        (Release or VerifyStop) while the verify waits for a finger, and
        prints, in the order they arrive, `status RESULT DONE` for each
        VerifyStatus and `METHOD returned` (or `METHOD error NAME`) for the
        reply; ends after the reply and 2 s more of signals.
    fprintd-client.py hold USER
        Claim(USER), prints `claimed` (or the error) and waits until killed.
    fprintd-client.py claim-then-verify FINGER
        Claim(""), prints `claimed` (or `claim-error NAME: MESSAGE` and ends),
        waits for SIGUSR1 (a test talks to the device meanwhile, as fprintd's
        own tests do between Claim and VerifyStart), then VerifyStart(FINGER)
        as `verify` does, VerifyStop, Release, and prints `released`.
    fprintd-client.py manager
        GetDevices and GetDefaultDevice; prints `devices P,…` and `default P`.

Every line is flushed at once, so a test can wait for it.
"""
import os
import signal
import sys

from gi.repository import Gio, GLib

NAME = "net.reactivated.Fprint"
DEVICE = "net.reactivated.Fprint.Device"

bus = Gio.DBusConnection.new_for_address_sync(
    os.environ["DBUS_SYSTEM_BUS_ADDRESS"],
    Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION, None, None)
manager = Gio.DBusProxy.new_sync(bus, Gio.DBusProxyFlags.NONE, None, NAME, "/net/reactivated/Fprint/Manager",
                                 "net.reactivated.Fprint.Manager", None)


def say(*words):
    print(" ".join(str(word) for word in words), flush=True)


def default_device():
    path = manager.call_sync("GetDefaultDevice", None, Gio.DBusCallFlags.NONE, -1, None).unpack()[0]
    return Gio.DBusProxy.new_sync(bus, Gio.DBusProxyFlags.NONE, None, NAME, path, DEVICE, None)


def call(device, method, *arguments):
    signature = "(" + "s" * len(arguments) + ")"
    parameters = GLib.Variant(signature, arguments) if arguments else None
    return device.call_sync(method, parameters, Gio.DBusCallFlags.NONE, 60000, None)


def error_name(error):
    return Gio.DBusError.get_remote_error(error) or str(error)


def error_message(error):
    """The service's message, without GDBus's "GDBus.Error:NAME: " before it."""
    prefix = "GDBus.Error:" + error_name(error) + ": "
    return error.message[len(prefix):] if error.message.startswith(prefix) else error.message


def wait_for_done(device, signal_names):
    """Runs the loop until a status signal says done."""
    loop = GLib.MainLoop()

    def on_signal(proxy, sender, signal, parameters):
        if signal == "VerifyFingerSelected":
            say("selected", parameters.unpack()[0])
        elif signal in signal_names:
            result, done = parameters.unpack()
            say("status", result, "true" if done else "false")
            if done:
                loop.quit()

    def on_owner(proxy, spec):
        if proxy.get_name_owner() is None:
            say("service-gone")
            loop.quit()

    device.connect("g-signal", on_signal)
    device.connect("notify::g-name-owner", on_owner)
    return loop


def gnome_settings_enroll(finger):
    device = default_device()
    stages = device.get_cached_property("num-enroll-stages")
    say("stages", stages.unpack() if stages else "?")
    say("name", device.get_cached_property("name").unpack())
    call(device, "Claim", "")
    try:
        call(device, "ListEnrolledFingers", "")
    except GLib.Error as error:
        say("list-before", error_name(error))
    loop = wait_for_done(device, ["EnrollStatus"])
    call(device, "EnrollStart", finger)
    say("enrolling")
    loop.run()
    call(device, "EnrollStop")
    fingers = call(device, "ListEnrolledFingers", "").unpack()[0]
    say("fingers", ",".join(fingers))
    call(device, "Release")


def verify(finger):
    device = default_device()
    call(device, "Claim", "")
    loop = wait_for_done(device, ["VerifyStatus"])
    try:
        call(device, "VerifyStart", finger)
    except GLib.Error as error:
        say("verify-start", error_name(error), error_message(error))
        call(device, "Release")
        return
    say("verifying")
    loop.run()
    for method in ["VerifyStop", "Release"]:
        try:
            call(device, method)
        except GLib.Error as error:
            say(method, "error", error_name(error))


def calls(items):
    device = default_device()
    for item in items:
        method, _, argument = item.partition(":")
        arguments = (argument,) if ":" in item else ()
        try:
            reply = call(device, method, *arguments)
            say(method, "ok", reply.unpack() if reply is not None and len(reply.unpack()) else "")
        except GLib.Error as error:
            say(method, "error", error_name(error) + ":", error_message(error))


def interrupt(finger, method):
    device = default_device()
    call(device, "Claim", "")
    loop = GLib.MainLoop()

    def on_signal(proxy, sender, signal, parameters):
        if signal == "VerifyStatus":
            result, done = parameters.unpack()
            say("status", result, "true" if done else "false")

    device.connect("g-signal", on_signal)
    call(device, "VerifyStart", finger)
    say("verifying")
    # Let the device start waiting for a finger (both daemons answer
    # VerifyStart once the reader is open).
    GLib.timeout_add(300, lambda: start_interrupting(device, method, loop) and False)
    GLib.timeout_add_seconds(30, loop.quit)
    loop.run()


def start_interrupting(device, method, loop):
    def replied(proxy, result):
        try:
            proxy.call_finish(result)
            say(method, "returned")
        except GLib.Error as error:
            say(method, "error", error_name(error))
        # Signals sent before the reply were dispatched before it, in order.
        GLib.timeout_add_seconds(2, loop.quit)

    device.call(method, None, Gio.DBusCallFlags.NONE, 60000, None, replied)
    return False


def hold(user):
    device = default_device()
    try:
        call(device, "Claim", user)
        say("claimed")
    except GLib.Error as error:
        say("error", error_name(error))
        return
    GLib.MainLoop().run()


def claim_then_verify(finger):
    device = default_device()
    try:
        call(device, "Claim", "")
    except GLib.Error as error:
        say("claim-error", error_name(error) + ":", error_message(error))
        return
    go_on = GLib.MainLoop()
    # Before "claimed": the test signals once it has read that line.
    GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGUSR1, lambda: go_on.quit() or False)
    say("claimed")
    go_on.run()
    loop = wait_for_done(device, ["VerifyStatus"])
    call(device, "VerifyStart", finger)
    say("verifying")
    loop.run()
    call(device, "VerifyStop")
    call(device, "Release")
    say("released")


def show_manager():
    devices = manager.call_sync("GetDevices", None, Gio.DBusCallFlags.NONE, -1, None).unpack()[0]
    say("devices", ",".join(devices))
    try:
        say("default", manager.call_sync("GetDefaultDevice", None, Gio.DBusCallFlags.NONE, -1, None).unpack()[0])
    except GLib.Error as error:
        say("default", error_name(error))


command = sys.argv[1]
if command == "gnome-settings-enroll":
    gnome_settings_enroll(sys.argv[2])
elif command == "verify":
    verify(sys.argv[2])
elif command == "calls":
    calls(sys.argv[2:])
elif command == "interrupt":
    interrupt(sys.argv[2], sys.argv[3])
elif command == "hold":
    hold(sys.argv[2])
elif command == "claim-then-verify":
    claim_then_verify(sys.argv[2])
elif command == "manager":
    show_manager()
else:
    sys.exit("unknown command " + command)
