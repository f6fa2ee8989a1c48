#!/bin/bash
# LocalAuth demo, all real parts: a private system bus and the real polkitd
# (scripts/rig.sh), localauthd on libfprint's virtual sensor, and localauthctl.
#
#   scripts/demo.sh        (as root; `make demo` builds first)
#
# Walks through: status, enroll (feeding the virtual sensor), list, a matching
# evaluate, and a non-matching one. Prints each step's exit code; exits 0 when
# every step behaved as expected. Everything it started is stopped on exit.
# BUILD_DIR overrides where the binaries are (default .build/debug);
# LOCALAUTHD / LOCALAUTHCTL name the programs themselves, e.g. the installed
# package's: LOCALAUTHD=/usr/libexec/localauthd LOCALAUTHCTL=/usr/bin/localauthctl.

set -uo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$REPO/.build/debug}"
LOCALAUTHD="${LOCALAUTHD:-$BUILD_DIR/localauthd}"
LOCALAUTHCTL="${LOCALAUTHCTL:-$BUILD_DIR/localauthctl}"
RIG="$REPO/scripts/rig.sh"
FINGER=right-index-finger
STEP_TIMEOUT=60          # seconds any one localauthctl call may take

[ "$(id -u)" = 0 ] || { echo "demo.sh: run as root (it starts a private bus and polkitd)" >&2; exit 1; }
for b in "$LOCALAUTHD" "$LOCALAUTHCTL"; do
    [ -x "$b" ] || { echo "demo.sh: $b not built (run: make build)" >&2; exit 1; }
done

TMP="$(mktemp -d /tmp/localauth-demo.XXXXXX)"
chmod 0755 "$TMP"
VFP="$TMP/vfp.sock"
DAEMON_PID=""
FEED_PID=""

cleanup() {
    local rc=$?
    set +e
    [ -n "$FEED_PID" ] && kill "$FEED_PID" 2>/dev/null
    if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
        kill -TERM "$DAEMON_PID" 2>/dev/null
        for _ in $(seq 1 100); do kill -0 "$DAEMON_PID" 2>/dev/null || break; sleep 0.03; done
        kill -0 "$DAEMON_PID" 2>/dev/null && kill -KILL "$DAEMON_PID" 2>/dev/null
        wait "$DAEMON_PID" 2>/dev/null
    fi
    "$RIG" stop "$TMP/rig" >/dev/null 2>&1
    if [ "${KEEP_DEMO_DIR:-}" = 1 ]; then
        echo "(kept $TMP)"
    else
        rm -rf "$TMP"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

heading() { printf '\n=== %s ===\n' "$*"; }

# vfp_send SOCK CMD: one command to libfprint's virtual device (rig.sh retries
# the connect while the device is not open yet).
vfp_send() { "$RIG" vfp "$1" "$2" >/dev/null; }

# vfp_feed SOCK CMD COUNT: send CMD COUNT times, 300 ms apart, in the
# background. Exactly as many scans as the step needs: the virtual device
# queues commands, and a spare scan would be eaten by the next step.
vfp_feed() {
    ( for _ in $(seq 1 "$3"); do sleep 0.3; vfp_send "$1" "$2" || exit 1; done
      echo "  (sensor: sent '$2' $3 time(s))" ) &
    FEED_PID=$!
}

# run_step EXPECT(ok|fail) FEED_CMD|- COUNT ARGS...: runs localauthctl ARGS
# (feeding the sensor COUNT times FEED_CMD), prints its output and exit code.
FAILURES=0
run_step() {
    local expect="$1" feed="$2" count="$3"; shift 3
    printf '$ localauthctl'; printf ' %q' "$@"; printf '\n'
    timeout "$STEP_TIMEOUT" "$LOCALAUTHCTL" "$@" &
    local pid=$!
    [ "$feed" != - ] && vfp_feed "$VFP" "$feed" "$count"
    wait "$pid"; local rc=$?
    if [ -n "$FEED_PID" ]; then wait "$FEED_PID" 2>/dev/null; FEED_PID=""; fi
    local verdict
    if { [ "$expect" = ok ] && [ $rc -eq 0 ]; } || { [ "$expect" = fail ] && [ $rc -ne 0 ] && [ $rc -ne 124 ]; }; then
        verdict="as expected"
    else
        verdict="UNEXPECTED (expected $expect)"; FAILURES=$((FAILURES + 1))
    fi
    [ $rc -eq 124 ] && verdict="$verdict; timed out after ${STEP_TIMEOUT}s"
    echo "-> exit code $rc ($verdict)"
}

heading "Starting the rig: private system bus + polkitd"
"$RIG" start "$TMP/rig" || exit 1
set -a; . "$TMP/rig/env"; set +a

heading "Starting localauthd on the virtual fingerprint sensor"
mkdir -p "$TMP/state" "$TMP/fprint-store"
FP_VIRTUAL_DEVICE="$VFP" FP_DRIVERS_WHITELIST=virtual_device FP_DRIVERS_ALLOWLIST=virtual_device \
    "$LOCALAUTHD" --state-dir "$TMP/state" --idle-timeout 0 --fprintd-store "$TMP/fprint-store" \
    </dev/null >"$TMP/localauthd.log" 2>&1 &
DAEMON_PID=$!
up=0
for _ in $(seq 1 500); do
    kill -0 "$DAEMON_PID" 2>/dev/null || break
    if dbus-send --bus="$DBUS_SYSTEM_BUS_ADDRESS" --print-reply=literal --dest=org.freedesktop.DBus \
            /org/freedesktop/DBus org.freedesktop.DBus.NameHasOwner string:org.example.LocalAuth 2>/dev/null \
            | grep -q true; then up=1; break; fi
    sleep 0.02
done
if [ $up != 1 ]; then
    echo "localauthd did not come up; its log:" >&2; cat "$TMP/localauthd.log" >&2
    exit 1
fi
echo "localauthd (pid $DAEMON_PID) owns org.example.LocalAuth on $DBUS_SYSTEM_BUS_ADDRESS"

heading "1. Status"
run_step ok - 0 status

heading "2. Enroll $FINGER (the virtual sensor gets 'SCAN demo-finger' once per stage)"
run_step ok "SCAN demo-finger" 5 enroll "$FINGER"

heading "3. List enrolled fingers"
run_step ok - 0 list

heading "4. Evaluate with the enrolled finger (expect success)"
run_step ok "SCAN demo-finger" 1 evaluate --reason "Unlock the demo"

heading "5. Evaluate with someone else's finger (expect failure after three tries)"
run_step fail "SCAN someone-else" 3 evaluate --reason "Unlock the demo"

heading "Summary"
if [ "$FAILURES" -eq 0 ]; then
    echo "demo: all steps behaved as expected"
else
    echo "demo: $FAILURES step(s) did not behave as expected; localauthd's log:"
    tail -n 40 "$TMP/localauthd.log"
    exit 1
fi
