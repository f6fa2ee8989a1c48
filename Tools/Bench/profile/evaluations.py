#!/usr/bin/python3
# Profile of one evaluation (issue 25, BENCHMARKS.md "Evaluation"): drives
# localauthd's EvaluatePolicy and fprintd's Claim/VerifyStart/VerifyStatus/
# VerifyStop/Release cycle on a rig (scripts/rig.sh) as localauth-bench does,
# in alternating rounds, and prints medians. With --marks FILE it writes each
# cycle's start and end (CLOCK_REALTIME, s) for lining up with `strace -ttt`.
#
#   evaluations.py BUS_ADDRESS OURS_VFP_SOCK FPRINTD_VFP_SOCK [--cycles N]
#                         [--enroll] [--marks FILE] [--only ours|fprintd]
import socket, statistics, sys, time, argparse
from gi.repository import Gio, GLib
import virtual_sensor

p = argparse.ArgumentParser()
p.add_argument("bus"); p.add_argument("ours"); p.add_argument("fprintd")
p.add_argument("--cycles", type=int, default=200)
p.add_argument("--enroll", action="store_true")
p.add_argument("--marks")
p.add_argument("--only")
a = p.parse_args()

SCAN_ID = "localauth-bench-finger"
FINGER = "right-index-finger"
flags = Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION


def connect():
    return Gio.DBusConnection.new_for_address_sync(a.bus, flags, None, None)


def scan(path, acknowledged=False):
    virtual_sensor.scan(path, SCAN_ID, acknowledged, who="evaluations")


ctx = GLib.MainContext.default()


def call_async(conn, dest, path, iface, member, args, reply_type=None):
    box = {}
    conn.call(dest, path, iface, member, args, reply_type, Gio.DBusCallFlags.NONE, 10000, None,
              lambda c, r: box.__setitem__("r", r))
    return box


def wait(box):
    while "r" not in box:
        ctx.iteration(True)
    return box["r"]


OURS = ("org.example.LocalAuth", "/org/example/LocalAuth", "org.example.LocalAuth")
ours = connect()
for name in ("org.example.LocalAuth", "net.reactivated.Fprint"):
    for _ in range(200):
        if ours.call_sync("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameHasOwner",
                          GLib.Variant("(s)", (name,)), None, 0, 10000, None).unpack()[0]:
            break
        time.sleep(0.05)
fp = connect()
FP = "net.reactivated.Fprint"
statuses = []
fp.signal_subscribe(FP, "net.reactivated.Fprint.Device", None, None, None, Gio.DBusSignalFlags.NONE,
                    lambda *x: statuses.append((x[4], x[5].unpack())) if x[4] in ("VerifyStatus", "EnrollStatus") else None)
device = fp.call_sync(FP, "/net/reactivated/Fprint/Manager", "net.reactivated.Fprint.Manager",
                      "GetDefaultDevice", None, None, 0, 10000, None).unpack()[0]
DEV = "net.reactivated.Fprint.Device"


def fpcall(member, args=None):
    return fp.call_sync(FP, device, DEV, member, args, None, 0, 10000, None)


if a.enroll:
    box = call_async(ours, *OURS, "Enroll", GLib.Variant("(s)", (FINGER,)))
    for _ in range(5):
        time.sleep(0.03); scan(a.ours, True)
    ours.call_finish(wait(box))
    fpcall("Claim", GLib.Variant("(s)", ("",)))
    statuses.clear()
    fpcall("EnrollStart", GLib.Variant("(s)", (FINGER,)))
    for _ in range(5):
        time.sleep(0.03); scan(a.fprintd, True)
    while not any(s[0] == "EnrollStatus" and s[1][1] for s in statuses):
        ctx.iteration(True)
    fpcall("EnrollStop"); fpcall("Release")
    print("enrolled both", file=sys.stderr)

marks = open(a.marks, "w") if a.marks else None


def ours_cycle():
    box = call_async(ours, *OURS, "EvaluatePolicy", GLib.Variant("(usa{sv})", (1, "localauth-bench", {})))
    scan(a.ours)
    r = ours.call_finish(wait(box)).unpack()
    assert r[0] is True, r


def fprintd_cycle():
    fpcall("Claim", GLib.Variant("(s)", ("",)))
    statuses.clear()
    box = call_async(fp, FP, device, DEV, "VerifyStart", GLib.Variant("(s)", ("any",)))
    scan(a.fprintd)
    fp.call_finish(wait(box))
    while not statuses:
        ctx.iteration(True)
    fpcall("VerifyStop")
    assert statuses[0][1] == ("verify-match", True), statuses
    fpcall("Release")


def run(name, cycle, n, out):
    for _ in range(n):
        w0 = time.time(); t0 = time.perf_counter_ns()
        cycle()
        out.append(time.perf_counter_ns() - t0)
        if marks: marks.write(f"{name} {w0:.6f} {time.time():.6f}\n")


for c in (ours_cycle, fprintd_cycle):
    for _ in range(5): c()
o, f = [], []
done = 0
while done < a.cycles:
    k = min(50, a.cycles - done)
    if a.only != "fprintd": run("ours", ours_cycle, k, o)
    if a.only != "ours": run("fprintd", fprintd_cycle, k, f)
    done += k
ms = lambda v: statistics.median(v) / 1e6
if o: print(f"localauthd evaluation median {ms(o):.3f} ms  p90 {sorted(o)[len(o)*9//10]/1e6:.3f}")
if f: print(f"fprintd cycle      median {ms(f):.3f} ms  p90 {sorted(f)[len(f)*9//10]/1e6:.3f}")
if o and f: print(f"ratio {ms(o)/ms(f):.3f}")
if marks: marks.close()
