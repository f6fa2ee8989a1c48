#!/usr/bin/python3
# The driver and the analysis of callgrind-paths.sh (read its header first).
#
#   callgrind-paths.py count BUS VFP_SOCK --preflights N --evaluations M
#       enroll a finger, warm up, then N CanEvaluatePolicy and M EvaluatePolicy
#       that match on the virtual sensor, as localauth-bench does
#   callgrind-paths.py walk BUS VFP_SOCK --pid PID --out FILE
#       (a localauthd --fprintd under callgrind with --instr-atstart=no):
#       enroll, warm up, then one window per part, each opened with
#       `callgrind_control -i on` and closed with a dump (names in FILE):
#       idle (3 s of nothing), evaluate (one EvaluatePolicy, the reader
#       closed as on an idle service), evaluate-open (the next one, the reader
#       still open), verify (fprintd's VerifyStart through to its final
#       VerifyStatus, after Claim)
#   callgrind-paths.py files CALLGRIND_OUT BINARY TREE --object RUN_BINARY
#       the source files of BINARY (unstripped) with nonzero cost in one dump
#       written with --dump-instr=yes of a run of RUN_BINARY (a stripped copy
#       of BINARY, same addresses).
#       Prints one file a line: "inner|outer PATH", PATH relative to TREE when under it.
#       inner: some instruction's line-table entry is in PATH; outer: PATH is
#       only an inlined caller of such instructions.
import argparse, os, re, socket, subprocess, sys, time
import virtual_sensor

SCAN_ID = "localauth-bench-finger"
FINGER = "right-index-finger"
OURS = ("org.example.LocalAuth", "/org/example/LocalAuth", "org.example.LocalAuth")
FP = "net.reactivated.Fprint"
DEV = "net.reactivated.Fprint.Device"
TIMEOUT = 120000  # ms: everything is 20-50x slower under valgrind


def bus_setup(address):
    global Gio, GLib, ctx
    from gi.repository import Gio, GLib
    ctx = GLib.MainContext.default()
    flags = Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION
    conn = Gio.DBusConnection.new_for_address_sync(address, flags, None, None)
    return conn


def wait_for_name(conn, name, seconds=180):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if conn.call_sync("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameHasOwner",
                          GLib.Variant("(s)", (name,)), None, 0, 10000, None).unpack()[0]:
            return
        time.sleep(0.1)
    sys.exit(f"callgrind-paths: {name} never appeared on the bus")


def scan(path, acknowledged=False):
    """Present the virtual finger (libfprint's virtual_device protocol)."""
    virtual_sensor.scan(path, SCAN_ID, acknowledged, attempts=3000, ack_timeout=60, who="callgrind-paths")


def call_async(conn, dest, path, iface, member, args):
    box = {}
    conn.call(dest, path, iface, member, args, None, Gio.DBusCallFlags.NONE, TIMEOUT, None,
              lambda c, r: box.__setitem__("r", r))
    return box


def wait(box):
    while "r" not in box:
        ctx.iteration(True)
    return box["r"]


def enroll(conn, vfp):
    box = call_async(conn, *OURS, "Enroll", GLib.Variant("(s)", (FINGER,)))
    for _ in range(5):
        time.sleep(0.03); scan(vfp, True)
    conn.call_finish(wait(box))


def preflight(conn):
    r = conn.call_sync(*OURS, "CanEvaluatePolicy", GLib.Variant("(u)", (1,)), None, 0, TIMEOUT, None).unpack()
    assert r[0] is True, r


def evaluate(conn, vfp):
    box = call_async(conn, *OURS, "EvaluatePolicy", GLib.Variant("(usa{sv})", (1, "localauth-bench", {})))
    scan(vfp)
    r = conn.call_finish(wait(box)).unpack()
    assert r[0] is True, r


def count(a):
    conn = bus_setup(a.bus)
    wait_for_name(conn, OURS[0])
    enroll(conn, a.vfp)
    for _ in range(20): preflight(conn)
    for _ in range(3): evaluate(conn, a.vfp)
    for _ in range(a.preflights): preflight(conn)
    for _ in range(a.evaluations): evaluate(conn, a.vfp)


def control(pid, *args):
    subprocess.run(["callgrind_control", *args, str(pid)], check=True, stdout=subprocess.DEVNULL)


def walk(a):
    conn = bus_setup(a.bus)
    wait_for_name(conn, OURS[0]); wait_for_name(conn, FP)
    statuses = []
    conn.signal_subscribe(None, DEV, "VerifyStatus", None, None, Gio.DBusSignalFlags.NONE,
                          lambda *x: statuses.append(x[5].unpack()))
    device = conn.call_sync(FP, "/net/reactivated/Fprint/Manager", "net.reactivated.Fprint.Manager",
                            "GetDefaultDevice", None, None, 0, TIMEOUT, None).unpack()[0]

    def fpcall(member, args=None):
        return conn.call_sync(FP, device, DEV, member, args, None, 0, TIMEOUT, None)

    def verify(window=None):
        fpcall("Claim", GLib.Variant("(s)", ("",)))
        statuses.clear()
        if window: control(a.pid, "-i", "on")
        box = call_async(conn, FP, device, DEV, "VerifyStart", GLib.Variant("(s)", ("any",)))
        scan(a.vfp)
        conn.call_finish(wait(box))
        while not any(done for _, done in statuses):
            ctx.iteration(True)
        if window: control(a.pid, "--dump=" + window); control(a.pid, "-i", "off"); names.append(window)
        assert statuses[-1] == ("verify-match", True), statuses
        fpcall("VerifyStop"); fpcall("Release")

    names = []
    enroll(conn, a.vfp)
    for _ in range(20): preflight(conn)
    for _ in range(3): evaluate(conn, a.vfp)
    for _ in range(3): verify()
    time.sleep(4)  # the reader closes (--reader-linger, at most 2 s)
    control(a.pid, "-i", "on"); time.sleep(3)
    control(a.pid, "--dump=idle"); control(a.pid, "-i", "off"); names.append("idle")
    time.sleep(3)
    control(a.pid, "-i", "on")
    evaluate(conn, a.vfp)
    control(a.pid, "--dump=evaluate"); names.append("evaluate")
    evaluate(conn, a.vfp)
    control(a.pid, "--dump=evaluate-open"); control(a.pid, "-i", "off"); names.append("evaluate-open")
    time.sleep(4)
    verify("verify")
    with open(a.out, "w") as f:
        f.write("\n".join(names) + "\n")


def number(text):
    sign = -1 if text[0] == "-" else 1
    text = text.lstrip("+-")
    return sign * (int(text, 16) if text.startswith("0x") else int(text))


def files(a):
    """Executed addresses of the object a.object in one callgrind dump
    (--dump-instr=yes; callgrind writes them relative to the object's load
    address, as in the file), each symbolized with its inlined frames."""
    positions = 1
    names, ours, skip_next, last, fn = {}, False, False, 0, ""
    addresses = {}
    with open(a.dump, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            if line[0] in "0123456789+-*":
                fields = line.split()
                pos = fields[0]
                if pos[0] in "+-":
                    last += number(pos)
                elif pos != "*":
                    last = number(pos)
                if skip_next:  # a call's inclusive cost, not this object's own
                    skip_next = False
                elif ours and any(int(x) for x in fields[positions:]):
                    addresses.setdefault(last, fn)
                continue
            if line.startswith("positions:"):
                positions = len(line.split()) - 1
            elif line.startswith("ob="):
                m = re.match(r"ob=(?:\((\d+)\))?\s*(.*)", line)
                if m.group(2): names["ob", m.group(1)] = m.group(2)
                ours = names.get(("ob", m.group(1)), m.group(2)) == a.object
            elif line.startswith("fn="):
                m = re.match(r"fn=(?:\((\d+)\))?\s*(.*)", line)
                if m.group(2): names["fn", m.group(1)] = m.group(2)
                fn = names.get(("fn", m.group(1)), m.group(2))
            elif line.startswith("calls="):
                skip_next = True
    inner, outer = set(), set()
    agree = 0
    if addresses:
        order = sorted(addresses)
        symbolizer = os.environ.get("LLVM_SYMBOLIZER", "llvm-symbolizer")
        text = "\n".join(hex(x) for x in order) + "\n"
        out = subprocess.run([symbolizer, "--obj=" + a.binary, "--inlining", "--no-demangle"],
                             input=text, capture_output=True, text=True, check=True).stdout
        # One block per address: pairs of lines (function, file:line:column),
        # innermost frame first; blocks separated by an empty line.
        blocks = [b for b in out.split("\n\n") if b.strip()]
        if len(blocks) != len(order):
            sys.exit(f"callgrind-paths: {len(order)} addresses, {len(blocks)} answers from llvm-symbolizer")
        for address, block in zip(order, blocks):
            lines = block.split("\n")
            if lines[-2] == addresses[address]:
                agree += 1
            locations = [re.sub(r":\d+(:\d+)?$", "", l) for l in lines[1::2]]
            for i, loc in enumerate(locations):
                if loc and not loc.startswith("??") and "<compiler-generated>" not in loc:
                    (inner if i == 0 else outer).add(os.path.normpath(loc))
        # The binary and the dump agree on which function each address is in
        # (outermost frame = the symbol callgrind named): else a wrong binary.
        if agree < 0.9 * len(order):
            sys.exit(f"callgrind-paths: only {agree} of {len(order)} addresses are in the function callgrind named: "
                     "is BINARY the unstripped build of the run's binary?")
    print(f"# {a.dump}: {len(addresses)} addresses of {a.object}, {agree} in the function callgrind named", file=sys.stderr)
    tree = os.path.realpath(a.tree) + "/"
    for path in sorted(inner | outer):
        shown = path[len(tree):] if path.startswith(tree) else path
        print(("inner" if path in inner else "outer") + " " + shown)


p = argparse.ArgumentParser()
sub = p.add_subparsers(dest="cmd", required=True)
c = sub.add_parser("count"); c.add_argument("bus"); c.add_argument("vfp")
c.add_argument("--preflights", type=int, required=True); c.add_argument("--evaluations", type=int, required=True)
w = sub.add_parser("walk"); w.add_argument("bus"); w.add_argument("vfp")
w.add_argument("--pid", type=int, required=True); w.add_argument("--out", required=True)
f = sub.add_parser("files"); f.add_argument("dump"); f.add_argument("binary"); f.add_argument("tree")
f.add_argument("--object", required=True)
a = p.parse_args()
{"count": count, "walk": walk, "files": files}[a.cmd](a)
