#!/usr/bin/python3
"""A caller of the reliability suite, run as any uid (setpriv) on the rig's
bus (DBUS_SYSTEM_BUS_ADDRESS). Prints one JSON object.

    worker.py malformed XML SEED START COUNT   calls START.. of the generated list (cyclic)
    worker.py fprintd-malformed DIR SEED START COUNT   the same over fprintd's Manager and Device
                                               XML in DIR (devices from GetDevices)
    worker.py fprintd-claim DEVICE             claims DEVICE (as this uid), prints ready,
                                               holds it until killed
    worker.py concurrent N MEMBER SIG JSON     N connections, one call each, all at once
    worker.py large DEVICE BYTES KIND:N,...    N connections per KIND, each sending at once one
                                               call with a BYTES-long string (KIND: fprintd-device-
                                               property, fprintd-manager-property, fprintd-device-
                                               method, localauth); prints the answers per kind
    worker.py call MEMBER SIG JSON [SECONDS]   one call; with SECONDS, also counts the
                                               EvaluationStatus/EnrollStatus signals this
                                               connection sees meanwhile (eavesdropping asked)
JSON: the arguments; a dict becomes a{sv} (str -> s, bool -> b, float -> d).
"""
import json
import os
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bus  # noqa: E402
import contract  # noqa: E402
from bus import Gio, GLib  # noqa: E402

ADDRESS = os.environ["DBUS_SYSTEM_BUS_ADDRESS"]


def arguments(signature, values):
    out = []
    for value in values:
        if isinstance(value, dict):
            out.append({k: GLib.Variant("b" if isinstance(v, bool) else "d" if isinstance(v, float) else "s", v)
                        for k, v in value.items()})
        else:
            out.append(value)
    return out


def malformed(xml, seed, start, count):
    calls = contract.generate(xml, int(seed))
    chosen = [calls[(int(start) + k) % len(calls)] for k in range(int(count))]
    return summarize(calls, bus.run_calls(ADDRESS, chosen))


def summarize(calls, results):
    outcomes = {}
    bad = []
    by_service = 0
    for label, outcome, answered_by_service, _ in results:
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        by_service += answered_by_service
        if outcome != "no-reply-sent" and not bus.is_named(outcome):
            bad.append([label, outcome])
    return {"sent": len(results), "outcomes": outcomes, "bad": bad, "by_service": by_service,
            "generated": len(calls)}


def fprintd_devices(connection):
    reply = connection.call_sync(contract.FPRINT, contract.FPRINT_MANAGER, "net.reactivated.Fprint.Manager",
                                 "GetDevices", None, GLib.VariantType("(ao)"), Gio.DBusCallFlags.NONE, 10000, None)
    return list(reply.unpack()[0])


def fprintd_malformed(xml_dir, seed, start, count):
    connection = bus.connect(ADDRESS)
    devices = fprintd_devices(connection)
    connection.close_sync(None)
    calls = contract.generate_fprintd(os.path.join(xml_dir, "net.reactivated.Fprint.Manager.xml"),
                                      os.path.join(xml_dir, "net.reactivated.Fprint.Device.xml"), devices, int(seed))
    chosen = [calls[(int(start) + k) % len(calls)] for k in range(int(count))]
    results = bus.run_calls(ADDRESS, chosen)
    result = summarize(calls, results)
    result["devices"] = devices
    # What each Device method answered on the real device: shows which
    # states (claimed by us, by another, free) the calls met.
    by_member = {}
    for call, (_, outcome, _, _) in zip(chosen, results):
        if call.path in devices and call.interface == "net.reactivated.Fprint.Device":
            counts = by_member.setdefault(call.member, {})
            counts[outcome] = counts.get(outcome, 0) + 1
    result["by_member"] = by_member
    return result


def fprintd_claim(device):
    connection = bus.connect(ADDRESS)
    connection.call_sync(contract.FPRINT, device, "net.reactivated.Fprint.Device", "Claim", GLib.Variant("(s)", ("",)),
                         None, Gio.DBusCallFlags.NONE, 10000, None)
    print(json.dumps({"ready": True}), flush=True)
    context = GLib.MainContext.default()
    while True:
        context.iteration(True)


def concurrent(n, member, signature, values):
    context = GLib.MainContext.default()
    connections = [bus.connect(ADDRESS) for _ in range(int(n))]
    values = json.loads(values)
    records = []
    for k, connection in enumerate(connections):
        msg = Gio.DBusMessage.new_method_call(contract.SERVICE, contract.PATH, bus.IFACE, member)
        own = [v.replace("%d", str(k)) if isinstance(v, str) else v for v in values]
        own = [dict((key, val.replace("%d", str(k)) if isinstance(val, str) else val) for key, val in v.items())
               if isinstance(v, dict) else v for v in own]
        msg.set_body(GLib.Variant("(%s)" % signature, tuple(arguments(signature, own))))
        record = {"k": k, "sent": time.time(), "outcome": None, "answered": None}
        records.append(record)

        def done(conn, result, record=record):
            record["outcome"], _, _ = bus.outcome_of(conn, result)
            record["answered"] = time.time()
        connection.send_message_with_reply(msg, Gio.DBusSendMessageFlags.NONE, 120000, None, done)
    print(json.dumps({"ready": len(records)}), flush=True)
    while any(r["outcome"] is None for r in records):
        context.iteration(True)
    return {"records": records}


# What large calls a kind sends: (destination, path, interface, member,
# signature, values with the large string as None).
LARGE = {
    "fprintd-device-property": (contract.FPRINT, None, "org.freedesktop.DBus.Properties", "Get", "ss",
                                ["net.reactivated.Fprint.Device", None]),
    "fprintd-manager-property": (contract.FPRINT, contract.FPRINT_MANAGER, "org.freedesktop.DBus.Properties", "Get",
                                 "ss", ["net.reactivated.Fprint.Manager", None]),
    "fprintd-device-method": (contract.FPRINT, None, "net.reactivated.Fprint.Device", "DeleteEnrolledFingers", "s",
                              [None]),
    "localauth": (contract.SERVICE, contract.PATH, contract.SERVICE, "EvaluatePolicy", "usa{sv}", [1, None, {}]),
}


def large(device, size, kinds):
    """Each call on its own connection, all sent before any answer is read
    (GDBus writes them from its own thread); at most 120 s for the answers."""
    size = int(size)
    big = "n" * size
    context = GLib.MainContext.default()
    plan = [(kind, k) for part in kinds.split(",") for kind, n in [part.split(":")] for k in range(int(n))]
    records = []
    connections = []
    for kind, k in plan:
        destination, path, interface, member, signature, values = LARGE[kind]
        msg = Gio.DBusMessage.new_method_call(destination, path or device, interface, member)
        msg.set_body(GLib.Variant("(%s)" % signature, tuple(big if v is None else v for v in values)))
        connection = bus.connect(ADDRESS)
        connections.append(connection)
        record = {"kind": kind, "sent": time.monotonic(), "outcome": None, "by": None, "text_bytes": 0, "seconds": None}
        records.append(record)

        def done(conn, result, record=record):
            try:
                reply = conn.send_message_with_reply_finish(result)
            except GLib.Error as error:
                record["outcome"] = ("timeout" if error.matches(Gio.io_error_quark(), Gio.IOErrorEnum.TIMED_OUT)
                                     else "local:" + error.message[:80])
            else:
                if reply.get_message_type() == Gio.DBusMessageType.ERROR:
                    record["outcome"] = reply.get_error_name()
                    body = reply.get_body()
                    text = body.unpack()[0] if body is not None and body.get_type_string().startswith("(s") else ""
                    record["text_bytes"] = len(text.encode())
                else:
                    record["outcome"] = "reply"
                record["by"] = "bus" if reply.get_sender() == "org.freedesktop.DBus" else "service"
            record["seconds"] = round(time.monotonic() - record["sent"], 2)
        connection.send_message_with_reply(msg, Gio.DBusSendMessageFlags.NONE, 120000, None, done)
        del msg
    print(json.dumps({"ready": len(records)}), flush=True)
    deadline = time.monotonic() + 130
    while any(r["outcome"] is None for r in records) and time.monotonic() < deadline:
        context.iteration(False) or time.sleep(0.005)
    for connection in connections:
        connection.close_sync(None)
    summary = {}
    for r in records:
        s = summary.setdefault(r["kind"], {"outcomes": {}, "longest_text_bytes": 0, "by": {}})
        outcome = r["outcome"] or "no answer"
        s["outcomes"][outcome] = s["outcomes"].get(outcome, 0) + 1
        s["by"][r["by"] or "none"] = s["by"].get(r["by"] or "none", 0) + 1
        s["longest_text_bytes"] = max(s["longest_text_bytes"], r["text_bytes"])
    return {"kinds": summary, "records": records}


def call(member, signature, values, seconds=None):
    client = bus.Client(ADDRESS)
    # Each signal as it comes, so that the suite can act on it (scan, kill).
    client.on_signal = lambda member, values: print(json.dumps({"signal": [member, list(values)]}), flush=True)
    filtered = []
    monitor = False
    if seconds is not None:
        # Ask the bus for everything it would let us see of the service's
        # signals: become a monitor (root only), else eavesdrop match rules
        # (refused on a system bus), else ordinary ones. A filter counts what
        # arrives, addressed to us or not.
        def watch(conn, message, incoming):
            if incoming and message.get_interface() == bus.IFACE and message.get_member() in (
                    "EvaluationStatus", "EnrollStatus"):
                filtered.append([message.get_member(), message.get_destination()])
            return message
        client.connection.add_filter(watch)
        rules = ["type='signal',interface='org.example.LocalAuth'"]
        try:
            client.connection.call_sync("org.freedesktop.DBus", "/org/freedesktop/DBus",
                                        "org.freedesktop.DBus.Monitoring", "BecomeMonitor",
                                        GLib.Variant("(asu)", (rules, 0)), None, Gio.DBusCallFlags.NONE, 5000, None)
            monitor = True
        except GLib.Error:
            for rule in [rules[0] + ",eavesdrop='true'", rules[0]]:
                try:
                    client.connection.call_sync("org.freedesktop.DBus", "/org/freedesktop/DBus",
                                                "org.freedesktop.DBus", "AddMatch", GLib.Variant("(s)", (rule,)), None,
                                                Gio.DBusCallFlags.NONE, 5000, None)
                except GLib.Error:
                    pass
    print(json.dumps({"ready": True}), flush=True)
    if member == "-":
        client.pump(float(seconds))
        outcome, value = "none", None
    else:
        outcome, value = client.call(member, signature, arguments(signature, json.loads(values)), timeout=60)
        if seconds is not None:
            client.pump(float(seconds))
    seen = [[m, list(v)] for (_, m, v) in client.signals]
    return {"outcome": outcome, "value": repr(value), "signals": seen, "filtered": filtered, "monitor": monitor}


def main():
    mode = sys.argv[1]
    if mode == "malformed":
        result = malformed(*sys.argv[2:6])
    elif mode == "fprintd-malformed":
        result = fprintd_malformed(*sys.argv[2:6])
    elif mode == "fprintd-claim":
        result = fprintd_claim(sys.argv[2])
    elif mode == "concurrent":
        result = concurrent(*sys.argv[2:6])
    elif mode == "large":
        result = large(*sys.argv[2:5])
    elif mode == "call":
        result = call(*sys.argv[2:])
    else:
        sys.exit("unknown mode " + mode)
    print(json.dumps(result), flush=True)


main()
