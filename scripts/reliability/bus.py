"""D-Bus plumbing for the reliability suite (Gio, from any uid): sending
generated calls with a bounded window, calls that wait for an answer while a
GLib context iterates, and signal collection."""
import os
import time

import gi

gi.require_version("Gio", "2.0")
gi.require_version("GLib", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

from contract import PATH, SERVICE  # noqa: E402

IFACE = SERVICE
NAMED = ("org.example.LocalAuth.Error.", "net.reactivated.Fprint.Error.", "org.freedesktop.DBus.Error.")
# Named, but what the bus says when nobody answered: never acceptable.
UNANSWERED = ("org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.Timeout",
              "org.freedesktop.DBus.Error.TimedOut", "org.freedesktop.DBus.Error.ServiceUnknown",
              "org.freedesktop.DBus.Error.NameHasNoOwner", "org.freedesktop.DBus.Error.Disconnected")


def connect(address):
    flags = (Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION)
    return Gio.DBusConnection.new_for_address_sync(address, flags, None, None)


def message(call):
    msg = Gio.DBusMessage.new_method_call(call.destination, call.path, call.interface, call.member)
    if call.signature:
        msg.set_body(GLib.Variant("(%s)" % call.signature, tuple(call.values)))
    if call.fds:
        fds = Gio.UnixFDList.new()
        for _ in range(call.fds):
            fd = os.open("/dev/null", os.O_RDONLY)
            fds.append(fd)
            os.close(fd)
        msg.set_unix_fd_list(fds)
    if call.no_reply:
        msg.set_flags(Gio.DBusMessageFlags.NO_REPLY_EXPECTED)
    return msg


def outcome_of(connection, result):
    """'reply', an error name, or 'timeout' / 'local:<text>'."""
    try:
        reply = connection.send_message_with_reply_finish(result)
    except GLib.Error as error:
        if error.matches(Gio.io_error_quark(), Gio.IOErrorEnum.TIMED_OUT):
            return "timeout", 0, None
        return "local:" + error.message[:80], 0, None
    if reply.get_message_type() == Gio.DBusMessageType.ERROR:
        return reply.get_error_name(), 1 if reply.get_sender() != "org.freedesktop.DBus" else 0, None
    body = reply.get_body()
    return "reply", 1, (body.unpack() if body is not None else ())


def run_calls(address, calls, window=6, timeout_ms=30000):
    """Sends every call, at most `window` unanswered at once on one
    connection; returns [(label, outcome, answered_by_service, seconds)]."""
    connection = connect(address)
    context = GLib.MainContext.default()
    results = [None] * len(calls)
    pending = [0]
    index = [0]
    serial = [False]   # a call sent alone is unanswered

    def start_next():
        while pending[0] < window and index[0] < len(calls):
            if serial[0] or (calls[index[0]].alone and pending[0] > 0):
                return
            k = index[0]
            index[0] += 1
            call = calls[k]
            try:
                msg = message(call)
            except (TypeError, ValueError, GLib.Error) as error:   # the generator made something unsendable
                results[k] = (call.label, "unsendable:" + str(error)[:60], 0, 0.0)
                continue
            if call.no_reply:
                connection.send_message(msg, Gio.DBusSendMessageFlags.NONE)
                results[k] = (call.label, "no-reply-sent", 0, 0.0)
                continue
            started = time.monotonic()
            pending[0] += 1
            serial[0] = call.alone

            def done(conn, result, k=k, started=started):
                outcome, by_service, _ = outcome_of(conn, result)
                results[k] = (calls[k].label, outcome, by_service, time.monotonic() - started)
                pending[0] -= 1
                if calls[k].alone:
                    serial[0] = False
                start_next()

            connection.send_message_with_reply(msg, Gio.DBusSendMessageFlags.NONE, timeout_ms, None, done)

    start_next()
    while pending[0] > 0 or index[0] < len(calls):
        context.iteration(True)
    connection.flush_sync(None)
    connection.close_sync(None)
    return results


def is_named(outcome):
    return outcome == "reply" or (outcome.startswith(NAMED) and outcome not in UNANSWERED)


class Client:
    """One connection with a GLib context of its own: calls that are
    answered later, and the signals the connection receives."""

    def __init__(self, address):
        self.context = GLib.MainContext.new()
        self.signals = []
        self.on_signal = None
        self.context.push_thread_default()
        try:
            self.connection = connect(address)
            # Callbacks run in the context that is thread-default now: ours.
            self.connection.signal_subscribe(None, IFACE, None, None, None, Gio.DBusSignalFlags.NONE, self._signal)
        finally:
            self.context.pop_thread_default()

    def _signal(self, conn, sender, path, interface, member, parameters):
        self.signals.append((time.monotonic(), member, parameters.unpack()))
        if self.on_signal:
            self.on_signal(member, parameters.unpack())

    def start(self, member, signature="", values=(), timeout=60):
        """Sends a call now; returns a Pending whose .outcome fills in."""
        pending = Pending()
        self.context.push_thread_default()
        try:
            msg = Gio.DBusMessage.new_method_call(SERVICE, PATH, IFACE, member)
            if signature:
                msg.set_body(GLib.Variant("(%s)" % signature, tuple(values)))

            def done(conn, result):
                pending.outcome, _, pending.value = outcome_of(conn, result)
                pending.answered = time.monotonic()
            self.connection.send_message_with_reply(msg, Gio.DBusSendMessageFlags.NONE, int(timeout * 1000), None, done)
        finally:
            self.context.pop_thread_default()
        pending.sent = time.monotonic()
        return pending

    def call(self, member, signature="", values=(), timeout=60):
        pending = self.start(member, signature, values, timeout)
        self.wait(lambda: pending.outcome is not None, timeout + 5)
        return pending.outcome, pending.value

    def pump(self, seconds=0.0):
        end = time.monotonic() + seconds
        while True:
            while self.context.iteration(False):
                pass
            if time.monotonic() >= end:
                return
            time.sleep(0.002)

    def wait(self, predicate, timeout):
        end = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > end:
                return False
            self.context.iteration(False) or time.sleep(0.002)
        return True

    def statuses(self, request_id):
        return [v[1] for (_, m, v) in self.signals if m == "EvaluationStatus" and v[0] == request_id]

    def close(self):
        try:
            self.connection.close_sync(None)
        except GLib.Error:
            pass


class Pending:
    def __init__(self):
        self.outcome = None
        self.value = None
        self.sent = None
        self.answered = None

    @property
    def seconds(self):
        return None if self.answered is None else self.answered - self.sent
