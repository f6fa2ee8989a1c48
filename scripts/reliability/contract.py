"""The one generator of hostile calls: everything comes from the contract,
dbus/org.example.LocalAuth.xml. For every method of every interface it
derives calls with the wrong signature (missing, extra, swapped arguments),
values of the wrong type, odd values of the right type (empty, huge, odd
strings and finger names, huge and nested option dicts), file descriptors
attached, no-reply calls, and calls to unknown members, interfaces and paths.

A call is a plain tuple, so any process (any uid) regenerates the same list
from the same seed: `generate(xml_path, seed)` is deterministic.
"""
import random
import xml.etree.ElementTree as ET
from collections import namedtuple

from gi.repository import GLib

SERVICE = "org.example.LocalAuth"
PATH = "/org/example/LocalAuth"

Method = namedtuple("Method", "interface name in_args")          # in_args: [(name, signature)]
# alone: sent only when nothing else is unanswered, and nothing follows until
# it is answered (a sequence whose order matters).
Call = namedtuple("Call", "label path interface member signature values fds no_reply destination alone",
                  defaults=(SERVICE, False))

FPRINT = "net.reactivated.Fprint"
FPRINT_MANAGER = "/net/reactivated/Fprint/Manager"
FPRINT_DEVICE_PREFIX = "/net/reactivated/Fprint/Device/"


def methods(xml_path):
    """Every method of the contract, with its in-arguments."""
    found = []
    for interface in ET.parse(xml_path).getroot().findall("interface"):
        for method in interface.findall("method"):
            args = [(a.get("name"), a.get("type")) for a in method.findall("arg") if a.get("direction", "in") == "in"]
            found.append(Method(interface.get("name"), method.get("name"), args))
    return found


def property_names(xml_path):
    return [(i.get("name"), p.get("name")) for i in ET.parse(xml_path).getroot().findall("interface")
            for p in i.findall("property")]


# ---------------------------------------------------------------- values

FINGERS = ["", " ", "right-index-finger\n", "RIGHT-INDEX-FINGER", "right_index_finger", "../right-index-finger",
           "right-index-finger/..", "right-index-finger.tmp-1", "..", ".", "/", "%2F", "any", "7", "0x7",
           "right-index-finger\u0000"[:-1] + "\u202e", "left-thumb-left-thumb", "right-index", "finger",
           "right-index-finger " * 60]


def odd_strings(rng):
    """Valid D-Bus strings (the bus refuses invalid UTF-8 and NULs itself)
    that a parser may not expect."""
    return ["", " ", "\t\n\r", "%s%n%x%p", "../../../../etc/passwd", "\u202eevil", "\ufeff", "\uffff",
            "\U0001f600" * 300, "e\u0301" * 200, "\x7f\x01\x1b[2J", "a" * 1024, "a" * 1025, "a" * 15000,
            "b" * 17000, "c" * (1 << 20), "".join(chr(rng.randrange(0x20, 0x2fff)) for _ in range(200)),
            "user", "root", "nobody", "request-id", "user-cancel", "user-fallback", "app-cancel"] + FINGERS


def odd_uints():
    return [0, 1, 2, 3, 4, 1000, 0x7fffffff, 0xffffffff]


def odd_dicts(rng):
    """a{sv} values: known keys with wrong types, unknown keys, huge, nested."""
    known = ["request-id", "fallback-title", "cancel-title", "reuse-duration", "interaction-not-allowed",
             "user", "replace"]
    wrong = [GLib.Variant("u", 7), GLib.Variant("s", "x" * 2000), GLib.Variant("b", True), GLib.Variant("d", -1.0),
             GLib.Variant("d", float("nan")), GLib.Variant("d", 1e300), GLib.Variant("as", ["a", "b"]),
             GLib.Variant("v", GLib.Variant("s", "root")), GLib.Variant("ay", b"\0\1"), GLib.Variant("x", -5),
             GLib.Variant("a{sv}", {"user": GLib.Variant("s", "root")}), GLib.Variant("s", "")]
    dicts = [{}]
    for key in known:
        for value in wrong:
            dicts.append({key: value})
    dicts.append({"user": GLib.Variant("s", "root")})
    dicts.append({"user": GLib.Variant("s", "nobody")})
    dicts.append({"user": GLib.Variant("s", "no-such-user-%d" % rng.randrange(10 ** 6))})
    dicts.append({"user": GLib.Variant("s", "../root")})
    dicts.append({"reuse-duration": GLib.Variant("d", 301.0), "interaction-not-allowed": GLib.Variant("b", True)})
    dicts.append({"interaction-not-allowed": GLib.Variant("b", True), "request-id": GLib.Variant("s", "")})
    dicts.append({"k%d" % i: GLib.Variant("s", "v") for i in range(500)})          # many keys, under 16 KiB
    dicts.append({"k%d" % i: GLib.Variant("u", i) for i in range(3000)})          # over 16 KiB
    dicts.append({"big": GLib.Variant("ay", bytes(64 * 1024))})
    nested = GLib.Variant("s", "deep")
    for _ in range(30):
        nested = GLib.Variant("v", nested)
    dicts.append({"request-id": nested, "user": nested})
    deep = GLib.Variant("a{sv}", {})
    for _ in range(15):
        deep = GLib.Variant("a{sv}", {"d": deep})
    dicts.append({"nested": deep})
    return dicts


def typed(signature, value):
    return GLib.Variant(signature, value)


def wrong_type_values():
    """One value of each D-Bus type, for arguments of another type."""
    return [("y", 1), ("b", True), ("n", -1), ("q", 1), ("i", -1), ("u", 1), ("x", -1), ("t", 1), ("d", 1.5),
            ("s", "right-index-finger"), ("o", "/org/example/LocalAuth"), ("g", "usa{sv}"), ("as", ["a"]),
            ("ay", b"x"), ("a{ss}", {"user": "root"}), ("(su)", ("a", 1)), ("v", GLib.Variant("s", "s")),
            ("aa{sv}", [{}]), ("a{sv}", {"user": GLib.Variant("s", "root")})]


def baseline(signature):
    """A plausible value of each contract type, for the other arguments."""
    values = {"u": 1, "s": "right-index-finger", "a{sv}": {}, "b": True, "v": GLib.Variant("u", 1),
              "o": "/org/example/LocalAuth/Agent", "ay": b"x", "as": ["a"]}
    if signature not in values:
        # A new type in the contract: the generator must learn it, not skip it.
        raise ValueError("contract.py has no baseline value for the contract's type %r" % signature)
    return values[signature]


def same_type_values(signature, rng):
    if signature == "u":
        return odd_uints()
    if signature == "s":
        return odd_strings(rng)
    if signature == "a{sv}":
        return odd_dicts(rng)
    if signature == "v":
        return [GLib.Variant("u", 0), GLib.Variant("s", "x" * 20000), GLib.Variant("v", GLib.Variant("u", 1))]
    if signature == "o":
        return ["/", "/org/example/LocalAuth", "/" + "a/" * 200 + "b", "/org/example/Agent_" + "x" * 4000]
    return []


# ---------------------------------------------------------------- the generator

def generate(xml_path, seed=0, service=SERVICE, path=PATH, order=None):
    """Every hostile call derived from the contract, in a fixed order.
    service, path: where the contract's object lives; order: method names
    to send first (the rest keep the contract's order), e.g. fprintd's Claim
    first so that the calls after it meet a device this connection holds."""
    rng = random.Random(seed)
    calls = []
    PATH = path  # noqa: N806 (this contract's object, below)

    def add(label, member, signature, values, interface=service, path=path, fds=0, no_reply=False):
        calls.append(Call(label, path, interface, member, signature, values, fds, no_reply, service))

    ordered = methods(xml_path)
    if order:
        ordered.sort(key=lambda m: order.index(m.name) if m.name in order else len(order))
    for method in ordered:
        m, i = method.name, method.interface
        sig = "".join(s for _, s in method.in_args)
        base = [baseline(s) for _, s in method.in_args]
        tag = "%s.%s" % (i.rsplit(".", 1)[-1], m)
        # the right signature, each argument in turn odd (same type) or of another type
        for position, (arg, arg_sig) in enumerate(method.in_args):
            for n, value in enumerate(same_type_values(arg_sig, rng)):
                values = list(base)
                values[position] = value
                add("%s %s odd#%d" % (tag, arg, n), m, sig, values, interface=i)
            for other_sig, value in wrong_type_values():
                if other_sig == arg_sig:
                    continue
                signature = "".join(other_sig if k == position else s for k, (_, s) in enumerate(method.in_args))
                values = list(base)
                values[position] = value
                add("%s %s as %s" % (tag, arg, other_sig), m, signature, values, interface=i)
        # structure: nothing, one too few, one too many, swapped, everything as a variant
        add("%s empty body" % tag, m, "", [], interface=i)
        if method.in_args:
            add("%s one arg short" % tag, m, sig[:-len(method.in_args[-1][1])], base[:-1], interface=i)
            add("%s in a struct" % tag, m, "(%s)" % sig, [tuple(base)], interface=i)
            add("%s as variants" % tag, m, "v" * len(base),
                [GLib.Variant(s, v) for (_, s), v in zip(method.in_args, base)], interface=i)
        add("%s extra arg" % tag, m, sig + "s", base + ["extra"], interface=i)
        add("%s extra dict" % tag, m, sig + "a{sv}", base + [{"user": GLib.Variant("s", "root")}], interface=i)
        if len(method.in_args) >= 2:
            swapped = list(reversed(method.in_args))
            add("%s swapped" % tag, m, "".join(s for _, s in swapped), [baseline(s) for _, s in swapped], interface=i)
        # the right call with file descriptors attached, or asking for no reply
        add("%s with 1 fd" % tag, m, sig, base, interface=i, fds=1)
        add("%s with 3 fds" % tag, m, sig, base, interface=i, fds=3)
        add("%s with an fd in the body" % tag, m, sig + "h", base + [0], interface=i, fds=1)
        add("%s no reply" % tag, m, sig, base, interface=i, no_reply=True)
        add("%s no reply, wrong signature" % tag, m, "t", [1], interface=i, no_reply=True)
        # unknown paths, interfaces, members around the real ones
        add("%s wrong path" % tag, m, sig, base, interface=i, path=PATH + "/Nope")
        add("%s root path" % tag, m, sig, base, interface=i, path="/")
        add("%s unknown interface" % tag, m, sig, base, interface=i + ".Nope")
        add("%s lower case" % tag, m.lower(), sig, base, interface=i)
        add("%s suffixed" % tag, m + "X", sig, base, interface=i)
    # members that are not in the contract, and properties
    first_interface = ordered[0].interface if ordered else service
    for member in ["Nope", "Evaluate", "Introspect", "Get", "Release", "Claim", "VerifyStart", "Exit", "Quit"]:
        add("unknown member %s" % member, member, "", [], interface=first_interface)
    for interface, name in property_names(xml_path):
        for set_sig, set_values in [("ssv", [interface, name, GLib.Variant("u", 2)]),
                                    ("ssv", [interface, name, GLib.Variant("s", "x")])]:
            add("Properties.Set %s" % name, "Set", set_sig, set_values, interface="org.freedesktop.DBus.Properties")
        add("Properties.Get %s on another interface" % name, "Get", "ss", ["org.example.Nope", name],
            interface="org.freedesktop.DBus.Properties")
        add("Properties.Get no such property", "Get", "ss", [interface, name + "X"],
            interface="org.freedesktop.DBus.Properties")
    add("Introspect a child path", "Introspect", "", [], interface="org.freedesktop.DBus.Introspectable",
        path=PATH + "/child")
    return calls


def fprintd_states(device):
    """Right calls in an order a client would not use: claim, start an
    enrollment, then verify, delete, stop the wrong operation, release in the
    middle of an enrollment, claim again and leave an enrollment running into
    the odd calls that follow (no finger is ever put on the reader)."""
    interface = FPRINT + ".Device"
    steps = [("Claim", "s", [""]), ("EnrollStart", "s", ["left-thumb"]), ("VerifyStart", "s", ["any"]),
             ("EnrollStart", "s", ["left-thumb"]), ("DeleteEnrolledFinger", "s", ["left-thumb"]),
             ("DeleteEnrolledFingers2", "", []), ("ListEnrolledFingers", "s", [""]), ("VerifyStop", "", []),
             ("EnrollStop", "", []), ("VerifyStart", "s", ["right-index-finger"]),
             ("EnrollStart", "s", ["right-little-finger"]), ("Release", "", []), ("EnrollStop", "", []),
             ("Claim", "s", [""]), ("EnrollStart", "s", ["left-thumb"])]
    return [Call("Device.%s in sequence #%d" % (member, n), device, interface, member, signature, values, 0, False,
                 FPRINT, True) for n, (member, signature, values) in enumerate(steps)]


def generate_fprintd(manager_xml, device_xml, devices, seed=0):
    """The same generator over fprintd's two interfaces, as localauthd
    --fprintd serves them: the Manager object, every Device object the
    service listed (GetDevices), and Device calls on paths it never made.
    On each device Claim comes first and Release last, so most calls meet a
    device claimed by the sending connection (when Claim("") was allowed)."""
    calls = generate(manager_xml, seed, service=FPRINT, path=FPRINT_MANAGER)
    for device in devices:
        calls += fprintd_states(device)
        calls += generate(device_xml, seed, service=FPRINT, path=device,
                          order=["Claim", "ListEnrolledFingers", "DeleteEnrolledFinger", "DeleteEnrolledFingers",
                                 "DeleteEnrolledFingers2", "VerifyStart", "VerifyStop", "EnrollStart",
                                 "EnrollStop", "Release"])
    for method in methods(device_xml):
        base = [baseline(s) for _, s in method.in_args]
        sig = "".join(s for _, s in method.in_args)
        for unknown in [FPRINT_DEVICE_PREFIX + "999", FPRINT_DEVICE_PREFIX + "4294967296", FPRINT_DEVICE_PREFIX + "00",
                        FPRINT_DEVICE_PREFIX.rstrip("/"), FPRINT_MANAGER]:
            calls.append(Call("Device.%s on %s" % (method.name, unknown), unknown, method.interface, method.name,
                              sig, base, 0, False, FPRINT))
    return calls
