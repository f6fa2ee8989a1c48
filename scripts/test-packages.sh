#!/bin/bash
# The package test (opt-in, `make deb-test`; needs root, takes about a minute
# after `make deb`): installs out/debian/SUITE/*.deb (this machine's suite)
# on this machine with apt, then
# on the test rig (scripts/rig.sh: a private bus and the real polkitd) starts
# the *installed* /usr/libexec/localauthd on libfprint's virtual reader,
# enrolls a finger with the installed localauthctl, and runs a preflight from
# each example language against the installed library: Python and GJS
# through the installed typelib, C through the installed .pc and headers,
# Vala through the installed .vapi. Each must print
# "preflight: ok biometry-type=1"; before the finger is enrolled each must
# print the service's BiometryNotEnrolled (-7).
#
# Then the package that replaces fprintd (docs/FPRINTD.md): with dpkg's
# resolver (apt), localauth-fprintd goes in next to libpam-fprintd, which
# depends on fprintd (= its version): our Provides must satisfy it, fprintd
# itself must go (Conflicts) and its files become ours (Replaces).
#
# At the end (also on failure) every one of our packages is purged again and
# fprintd and libpam-fprintd are put back if they were installed before;
# the project's action files that rigs copy into /usr/share/polkit-1/actions
# are put back too. All of it runs under the shared rig lock
# (/tmp/localauth-rig.lock): installing and purging change the action files.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The packages built for this machine's suite (make deb SUITE=...).
DEBS="${DEBS:-$REPO/out/debian/$(. /etc/os-release && echo "$VERSION_CODENAME")}"
EXAMPLES="$REPO/Examples/LibLocalAuth"

die() { echo "test-packages: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "must run as root (apt, the rig)"
ls "$DEBS"/*.deb >/dev/null 2>&1 || die "no packages in $DEBS (make deb)"

OURS="localauthd localauth-prompt libpam-localauth liblocalauth-1-0 liblocalauth-dev gir1.2-localauth-1.0 localauth-tools"
status() { dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || true; }
APT="env DEBIAN_FRONTEND=noninteractive apt-get -y -qq --no-install-recommends"
# What to put back at the end: fprintd's packages as they are now.
RESTORE=""
for package in fprintd libpam-fprintd; do
    [ "$(status "$package")" != installed ] || RESTORE="$RESTORE $package"
done

exec 9>/tmp/localauth-rig.lock
flock 9
WORK="$(mktemp -d /tmp/localauth-package-test.XXXXXX)"
chmod 0755 "$WORK"
RIG="$WORK/rig"
SERVICE=""
cleanup() {
    [ -z "$SERVICE" ] || { kill "$SERVICE" 2>/dev/null || true; wait "$SERVICE" 2>/dev/null || true; }
    "$REPO/scripts/rig.sh" stop "$RIG" >/dev/null 2>&1 || true
    rm -rf "$WORK"
    echo "test-packages: purging our packages${RESTORE:+, putting back$RESTORE}"
    # shellcheck disable=SC2086
    $APT purge localauth-fprintd $OURS >/dev/null 2>&1 || true
    # shellcheck disable=SC2086
    [ -z "$RESTORE" ] || $APT install $RESTORE >/dev/null || echo "test-packages: could not reinstall$RESTORE" >&2
    install -m 0644 "$REPO/polkit/org.example.LocalAuth.policy" "$REPO/polkit/org.example.LocalAuth.rights.policy" \
        /usr/share/polkit-1/actions/
    for package in localauth-fprintd $OURS; do
        [ "$(status "$package")" != installed ] || echo "test-packages: $package is still installed" >&2
    done
}
trap cleanup EXIT

# Every package but the one that replaces fprintd (that one comes last).
# confold: a conffile left by an earlier `make install` on this machine stays as it is.
DEFAULT_DEBS=()
for package in $OURS; do DEFAULT_DEBS+=("$(ls "$DEBS/${package}_"*.deb)"); done
echo "test-packages: installing ${#DEFAULT_DEBS[@]} packages"
$APT install --reinstall -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "${DEFAULT_DEBS[@]}" >/dev/null
for package in $OURS; do
    [ "$(status "$package")" = installed ] || die "$package is not installed"
done

# C and Vala, against the installed development files only.
cc -Wall -Werror -o "$WORK/unlock-c" "$EXAMPLES/c/unlock.c" $(pkg-config --cflags --libs liblocalauth-1)
valac --pkg liblocalauth-1 --directory "$WORK" -o "$WORK/unlock-vala" "$EXAMPLES/vala/unlock.vala" >/dev/null
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
kill "$SERVICE"; wait "$SERVICE" || true; SERVICE=""

# The package that replaces fprintd, next to libpam-fprintd.
$APT install libpam-fprintd >/dev/null
$APT install "$(ls "$DEBS"/localauth-fprintd_*.deb)" >"$WORK/fprintd-swap.log" 2>&1 ||
    { cat "$WORK/fprintd-swap.log"; die "apt refused localauth-fprintd"; }
[ "$(status localauth-fprintd)" = installed ] || die "localauth-fprintd is not installed"
[ "$(status libpam-fprintd)" = installed ] || die "libpam-fprintd went with fprintd: Provides: fprintd did not satisfy it"
[ "$(status fprintd)" != installed ] || die "fprintd is still installed next to localauth-fprintd"
for file in /usr/share/polkit-1/actions/net.reactivated.fprint.device.policy \
            /usr/share/dbus-1/system-services/net.reactivated.Fprint.service \
            /usr/share/dbus-1/system.d/net.reactivated.Fprint.conf \
            /lib/systemd/system/localauthd.service.d/fprintd.conf; do
    owner="$(dpkg-query -S "$file" | cut -d: -f1)"
    [ "$owner" = localauth-fprintd ] || die "$file belongs to '$owner', not localauth-fprintd"
done
grep -qx "ExecStart=/usr/libexec/localauthd --fprintd" /lib/systemd/system/localauthd.service.d/fprintd.conf ||
    die "the installed drop-in does not run localauthd --fprintd"
apt-get check -qq || die "apt-get check fails with localauth-fprintd"
[ -z "$(dpkg --audit)" ] || { dpkg --audit; die "dpkg --audit is not clean"; }
echo "test-packages: localauth-fprintd replaced fprintd; libpam-fprintd stays (Provides: $(dpkg-query -W -f='${Provides}' localauth-fprintd))"

# And back, as docs/FPRINTD.md says: installing fprintd takes localauth-fprintd
# away (Conflicts), libpam-fprintd stays, fprintd's files are fprintd's again.
$APT install fprintd >"$WORK/fprintd-back.log" 2>&1 || { cat "$WORK/fprintd-back.log"; die "apt refused fprintd back"; }
[ "$(status localauth-fprintd)" != installed ] || die "localauth-fprintd stayed next to fprintd"
[ "$(status libpam-fprintd)" = installed ] || die "libpam-fprintd went away on the way back"
[ "$(dpkg-query -S /usr/share/polkit-1/actions/net.reactivated.fprint.device.policy | cut -d: -f1)" = fprintd ] ||
    die "fprintd's polkit actions are not fprintd's again"
[ ! -e /lib/systemd/system/localauthd.service.d/fprintd.conf ] || die "the drop-in stayed after localauth-fprintd went"
echo "test-packages: installing fprintd again removed localauth-fprintd; localauthd stays, without --fprintd"
