#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Unlock with your fingerprint, from Python (PyGObject and liblocalauth-1).

    unlock.py --preflight          only the preflight
    unlock.py ID SECRET            preflight, evaluate, a cancelled evaluation,
                                   then SECRET kept as right ID, loaded after
                                   the fingerprint, and removed

Every step prints one line (the same lines as the GJS, C and Vala examples).
"""
import sys

import gi

gi.require_version("LocalAuth", "1.0")
from gi.repository import Gio, GLib, LocalAuth  # noqa: E402

BIOMETRICS = LocalAuth.Policy.DEVICE_OWNER_AUTHENTICATION_WITH_BIOMETRICS


def say(line):
    print(line, flush=True)


def failure(step, error):
    name = LocalAuth.error_get_dbus_error_name(error) or "-"
    say(f"{step}: error {error.code} {name}")


def wait(start):
    """Runs the main loop until the async call `start(callback)` answers."""
    loop = GLib.MainLoop()
    answer = {}

    def done(source, result):
        answer["result"] = (source, result)
        loop.quit()

    start(done)
    loop.run()
    return answer["result"]


def preflight(context):
    try:
        context.can_evaluate_policy(BIOMETRICS)
    except GLib.Error as error:
        failure("preflight", error)
        return False
    say(f"preflight: ok biometry-type={int(context.props.biometry_type)}")
    return True


def evaluate(context, step, reason, cancel_on_first_status=False):
    cancellable = Gio.Cancellable()

    def on_status(_context, status):
        say(f"status: {status}")
        if cancel_on_first_status:
            cancellable.cancel()  # the service answers with AppCancel

    handler = context.connect("status", on_status)
    source, result = wait(lambda done: context.evaluate_policy(BIOMETRICS, reason, cancellable, done))
    context.disconnect(handler)
    try:
        source.evaluate_policy_finish(result)
        say(f"{step}: success")
    except GLib.Error as error:
        failure(step, error)


def keep_and_load(identifier, secret):
    store = LocalAuth.RightStore.get_default()
    right = LocalAuth.Right.new(LocalAuth.RightRequirement.BIOMETRY)
    source, result = wait(lambda done: store.save_right(right, identifier, GLib.Bytes.new(secret.encode()), None, done))
    try:
        store.save_right_finish(result)
        say("store: ok")
    except GLib.Error as error:
        return failure("store", error)

    source, result = wait(lambda done: store.right_for_identifier(identifier, None, done))
    right = store.right_for_identifier_finish(result)
    right.connect("status", lambda _right, status: say(f"status: {status}"))
    source, result = wait(lambda done: right.authorize("Open the example's secret", None, done))
    try:
        right.authorize_finish(result)
        source, result = wait(lambda done: right.get_secret().load_data(None, done))
        data = right.get_secret().load_data_finish(result)
        say(f"load: {bytes(data.get_data()).decode()}")
    except GLib.Error as error:
        failure("load", error)
    right.deauthorize()

    source, result = wait(lambda done: store.remove_right_for_identifier(identifier, None, done))
    store.remove_right_for_identifier_finish(result)
    say("remove: ok")



def main(argv):
    context = LocalAuth.Context()
    if not preflight(context):
        return 1
    if argv[1:] == ["--preflight"]:
        return 0
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    state = context.props.evaluated_policy_domain_state
    say(f"domain-state: {state.get_size() if state else 0} bytes")
    evaluate(context, "evaluate", "Unlock the example")
    evaluate(context, "cancel", "Unlock, then cancel", cancel_on_first_status=True)
    keep_and_load(argv[1], argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
