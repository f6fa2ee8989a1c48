#!/bin/bash
# What an app pays for one preflight (CanEvaluatePolicy(1) answered "yes")
# through each client: liblocalauth-1 from Python (PyGObject), raw D-Bus from
# Python (GDBus through PyGObject, and python3-dbus), and, given SWIFT_BENCH=
# a program that calls LAContext.canEvaluatePolicy, the Swift library. Each
# client makes 200 preflights in one process after 10 to warm up and prints
# the median and its RSS (VmRSS) at the end. On the test rig (scripts/rig.sh)
# with the service of BINARIES (default .build/debug) on libfprint's virtual
# reader and one enrolled finger. Needs root; `make clientlib` first.
# Results: docs/CLIENTS.md, "What a preflight costs".
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BINARIES="${BINARIES:-$REPO/.build/debug}"
BUILD="$REPO/.build/clientlib"
PY=/usr/bin/python3
WORK="$(mktemp -d /tmp/localauth-bench-clients.XXXXXX)"
chmod 0755 "$WORK"

exec 9>/tmp/localauth-rig.lock
flock 9
SERVICE=""
cleanup() {
    [ -z "$SERVICE" ] || { kill "$SERVICE" 2>/dev/null || true; wait "$SERVICE" 2>/dev/null || true; }
    "$REPO/scripts/rig.sh" stop "$WORK/rig" >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT
"$REPO/scripts/rig.sh" start "$WORK/rig" >/dev/null
set -a; . "$WORK/rig/env"; set +a
export FP_DRIVERS_WHITELIST=virtual_device FP_VIRTUAL_DEVICE="$WORK/vfp.sock"
"$BINARIES/localauthd" --state-dir "$WORK/state" --fprintd-store "$WORK/fprintd-store" --idle-timeout 0 >"$WORK/localauthd.log" 2>&1 &
SERVICE=$!
for _ in $(seq 500); do
    dbus-send --bus="$DBUS_SYSTEM_BUS_ADDRESS" --print-reply --dest=org.freedesktop.DBus / \
        org.freedesktop.DBus.NameHasOwner string:org.example.LocalAuth 2>/dev/null | grep -q "boolean true" && break
    sleep 0.02
done
"$BINARIES/localauthctl" enroll >"$WORK/enroll.log" 2>&1 &
ENROLL=$!
sent=0
while kill -0 "$ENROLL" 2>/dev/null; do
    asked=$(grep -c -E "^The reader needs|^Scan [0-9]+ of [0-9]+ done" "$WORK/enroll.log" 2>/dev/null || true)
    asked=${asked:-0}  # the tool has not written its log yet
    if [ "$asked" -gt "$sent" ]; then "$REPO/scripts/rig.sh" vfp "$FP_VIRTUAL_DEVICE" SCAN bench-finger; sent=$((sent + 1)); fi
    sleep 0.02
done
wait "$ENROLL"

measure='
import time
def rss():
    return next(l.split()[1] for l in open("/proc/self/status") if l.startswith("VmRSS")) + " kB"
def run(name, preflight):
    for _ in range(10): preflight()
    samples = []
    for _ in range(200):
        start = time.perf_counter_ns(); preflight(); samples.append(time.perf_counter_ns() - start)
    samples.sort()
    print(f"{name} median_us={samples[100] / 1000:.0f} p90_us={samples[180] / 1000:.0f} rss={rss()}")
'
GI_TYPELIB_PATH="$BUILD" LD_LIBRARY_PATH="$BUILD" "$PY" -c "$measure"'
import gi; gi.require_version("LocalAuth", "1.0"); from gi.repository import LocalAuth
context = LocalAuth.Context()
run("python-liblocalauth", lambda: context.can_evaluate_policy(LocalAuth.Policy.DEVICE_OWNER_AUTHENTICATION_WITH_BIOMETRICS))'
"$PY" -c "$measure"'
import gi; from gi.repository import Gio, GLib
bus = Gio.bus_get_sync(Gio.BusType.SYSTEM)
run("python-gdbus-raw", lambda: bus.call_sync("org.example.LocalAuth", "/org/example/LocalAuth", "org.example.LocalAuth",
    "CanEvaluatePolicy", GLib.Variant("(u)", (1,)), GLib.VariantType("(b)"), Gio.DBusCallFlags.NONE, -1, None))'
"$PY" -c "$measure"'
import dbus
service = dbus.Interface(dbus.SystemBus().get_object("org.example.LocalAuth", "/org/example/LocalAuth"), "org.example.LocalAuth")
run("python-dbus-raw", lambda: service.CanEvaluatePolicy(dbus.UInt32(1)))'
"$PY" -c "$measure"'
import gi; from gi.repository import Gio
print(f"python-gio-import-only rss={rss()}")'
if [ -n "${SWIFT_BENCH:-}" ]; then "$SWIFT_BENCH"; fi
# One process per call, as a shell script would: gdbus.
start=$(date +%s%N)
for _ in $(seq 20); do
    gdbus call --system --dest org.example.LocalAuth --object-path /org/example/LocalAuth \
        --method org.example.LocalAuth.CanEvaluatePolicy 1 >/dev/null
done
echo "gdbus-cli-process-per-call mean_us=$(( ($(date +%s%N) - start) / 20000 ))"
