#!/bin/bash
# The package test (opt-in, `make deb-test`; needs root, takes about a minute
# after `make deb`): installs out/debian/*.deb on this machine with apt, then
# on the test rig (scripts/rig.sh: a private bus and the real polkitd) starts
# the *installed* /usr/libexec/localauthd on libfprint's virtual reader,
# enrolls a finger with the installed localauthctl, and runs a preflight from
# each example language against the installed library: Python and GJS
# through the installed typelib, C through the installed .pc and headers,
# Vala through the installed .vapi. Each must print
# "preflight: ok biometry-type=1"; before the finger is enrolled each must
# print the service's BiometryNotEnrolled (-7).
#
# The packages stay installed: removing localauthd would take the polkit
# action files that running test rigs use (/usr/share/polkit-1/actions) with
# it. `apt-get purge localauthd localauth-prompt libpam-localauth
# liblocalauth-1-0 liblocalauth-dev gir1.2-localauth-1.0 localauth-tools`
# when no rig runs, then `scripts/rig.sh start` puts the action files back.
#
# The rig part runs under the shared rig lock (/tmp/localauth-rig.lock).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEBS="${DEBS:-$REPO/out/debian}"
EXAMPLES="$REPO/Examples/LibLocalAuth"

die() { echo "test-packages: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "must run as root (apt, the rig)"
ls "$DEBS"/*.deb >/dev/null 2>&1 || die "no packages in $DEBS (make deb)"

echo "test-packages: installing $(ls "$DEBS"/*.deb | wc -l) packages"
# confold: a conffile left by an earlier `make install` on this machine stays as it is.
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends --reinstall \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "$DEBS"/*.deb >/dev/null
for package in localauthd localauth-prompt libpam-localauth liblocalauth-1-0 liblocalauth-dev gir1.2-localauth-1.0 localauth-tools; do
    [ "$(dpkg-query -W -f='${db:Status-Status}' "$package")" = installed ] || die "$package is not installed"
done

WORK="$(mktemp -d /tmp/localauth-package-test.XXXXXX)"
chmod 0755 "$WORK"
# C and Vala, against the installed development files only.
cc -Wall -Werror -o "$WORK/unlock-c" "$EXAMPLES/c/unlock.c" $(pkg-config --cflags --libs liblocalauth-1)
valac --pkg liblocalauth-1 --directory "$WORK" -o "$WORK/unlock-vala" "$EXAMPLES/vala/unlock.vala" >/dev/null

exec 9>/tmp/localauth-rig.lock
flock 9
RIG="$WORK/rig"
SERVICE=""
cleanup() {
    [ -z "$SERVICE" ] || { kill "$SERVICE" 2>/dev/null || true; wait "$SERVICE" 2>/dev/null || true; }
    "$REPO/scripts/rig.sh" stop "$RIG" >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT
"$REPO/scripts/rig.sh" start "$RIG" >/dev/null
set -a; . "$RIG/env"; set +a
export FP_DRIVERS_WHITELIST=virtual_device FP_VIRTUAL_DEVICE="$WORK/vfp.sock"
/usr/libexec/localauthd --state-dir "$WORK/state" --fprintd-store "$WORK/fprintd-store" --idle-timeout 0 \
    >"$WORK/localauthd.log" 2>&1 &
SERVICE=$!
for _ in $(seq 500); do
    dbus-send --bus="$DBUS_SYSTEM_BUS_ADDRESS" --print-reply --dest=org.freedesktop.DBus / \
        org.freedesktop.DBus.NameHasOwner string:org.example.LocalAuth 2>/dev/null | grep -q "boolean true" && break
    kill -0 "$SERVICE" 2>/dev/null || { cat "$WORK/localauthd.log"; die "the installed localauthd exited"; }
    sleep 0.02
done

preflights() {  # EXPECTED: every language must print it
    local expected="$1" failed=0 name output
    for name in python gjs c vala; do
        case "$name" in
            python) output="$(/usr/bin/python3 "$EXAMPLES/python/unlock.py" --preflight 2>&1 || true)" ;;
            gjs) output="$(gjs -m "$EXAMPLES/gjs/unlock.js" --preflight 2>&1 || true)" ;;
            c) output="$("$WORK/unlock-c" --preflight 2>&1 || true)" ;;
            vala) output="$("$WORK/unlock-vala" --preflight 2>&1 || true)" ;;
        esac
        if [ "$output" = "$expected" ]; then
            echo "test-packages: $name: $output"
        else
            echo "test-packages: $name: expected '$expected', got '$output'" >&2
            failed=1
        fi
    done
    return $failed
}

preflights "preflight: error -7 org.example.LocalAuth.Error.BiometryNotEnrolled"

# Enroll with the installed localauthctl: one scan each time it asks.
/usr/bin/localauthctl enroll >"$WORK/enroll.log" 2>&1 &
ENROLL=$!
sent=0
while kill -0 "$ENROLL" 2>/dev/null; do
    asked=$(grep -c -E "^The reader needs|^Scan [0-9]+ of [0-9]+ done" "$WORK/enroll.log" 2>/dev/null || true)
    asked=${asked:-0}  # the tool has not written its log yet
    if [ "$asked" -gt "$sent" ]; then
        "$REPO/scripts/rig.sh" vfp "$FP_VIRTUAL_DEVICE" SCAN package-test-finger
        sent=$((sent + 1))
    fi
    sleep 0.02
done
wait "$ENROLL" || { cat "$WORK/enroll.log"; die "enroll failed"; }

preflights "preflight: ok biometry-type=1"
/usr/bin/python3 -c 'import gi; gi.require_version("LocalAuth", "1.0"); from gi.repository import LocalAuth; print("import: LocalAuth", LocalAuth.Context().props.biometry_type.value_nick)' \
    | sed 's/^/test-packages: python /'
echo "test-packages: all preflights passed against the installed packages"
