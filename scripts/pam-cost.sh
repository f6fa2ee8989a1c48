#!/bin/bash
# What pam_localauth adds to a program that loads it (sudo, login): peak
# resident memory and time, measured with the real libpam (pamtester) on the
# test rig (private bus, real polkitd, localauthd on the virtual reader).
# Needs root and `make build pam`. Prints medians of RUNS runs of:
#   baseline   auth required pam_permit.so
#   module     auth [success=done authinfo_unavail=ignore default=die] pam_localauth.so
#              auth required pam_permit.so
#              for a user without prints: the module connects, asks the
#              service, hears "not enrolled" and the stack moves on (the
#              whole path up to where it would wait for a finger)
#   swift      the baseline with the Swift runtime preloaded (libswiftCore,
#              LD_PRELOAD): the least a module written in Swift would add
# Results are a measurement, not a test: rerun it.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RUNS="${RUNS:-30}"
LOCALAUTHD="${LOCALAUTHD:-$REPO/.build/debug/localauthd}"
MODULE="$REPO/.build/pam/pam_localauth.so"
RIG="$REPO/scripts/rig.sh"
[ "$(id -u)" = 0 ] || { echo "pam-cost.sh: run as root" >&2; exit 1; }
[ -x "$LOCALAUTHD" ] && [ -f "$MODULE" ] || { echo "pam-cost.sh: run make build pam first" >&2; exit 1; }

TMP="$(mktemp -d /tmp/localauth-pam-cost.XXXXXX)"
chmod 0755 "$TMP"
NAME="localauth-cost-$$"
DAEMON=""
cleanup() {
    set +e
    rm -f "/etc/pam.d/$NAME-base" "/etc/pam.d/$NAME-module"
    [ -n "$DAEMON" ] && kill -TERM "$DAEMON" 2>/dev/null && wait "$DAEMON" 2>/dev/null
    "$RIG" stop "$TMP/rig" >/dev/null 2>&1
    rm -rf "$TMP"
}
trap cleanup EXIT

"$RIG" start "$TMP/rig" >/dev/null
set -a; . "$TMP/rig/env"; set +a
mkdir -p "$TMP/state" "$TMP/fprint"
FP_VIRTUAL_DEVICE="$TMP/vfp.sock" FP_DRIVERS_WHITELIST=virtual_device FP_DRIVERS_ALLOWLIST=virtual_device \
    "$LOCALAUTHD" --state-dir "$TMP/state" --idle-timeout 0 --fprintd-store "$TMP/fprint" \
    </dev/null >"$TMP/localauthd.log" 2>&1 &
DAEMON=$!
for _ in $(seq 1 500); do
    busctl --address="$DBUS_SYSTEM_BUS_ADDRESS" status org.example.LocalAuth >/dev/null 2>&1 && break
    sleep 0.02
done

printf 'auth required pam_permit.so\n' >"/etc/pam.d/$NAME-base"
printf 'auth [success=done authinfo_unavail=ignore default=die] %s\nauth required pam_permit.so\n' \
    "$MODULE" >"/etc/pam.d/$NAME-module"

# median of the numbers on stdin
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

measure() {  # SERVICE [PRELOAD] -> "elapsed_ms maxrss_kb" medians
    local service="$1" preload="${2:-}" times="$TMP/times" rss="$TMP/rss" start end
    : >"$times"; : >"$rss"
    for _ in $(seq 1 "$RUNS"); do
        start=$(date +%s%N)
        LD_PRELOAD="$preload" /usr/bin/time -f '%M' -o "$TMP/one" pamtester "$service" root authenticate \
            >/dev/null 2>&1 || { echo "pam-cost.sh: pamtester $service failed" >&2; exit 1; }
        end=$(date +%s%N)
        echo $(( (end - start) / 1000 )) >>"$times"
        cat "$TMP/one" >>"$rss"
    done
    echo "$(awk '{printf "%.1f\n", $1/1000}' "$times" | median) $(median <"$rss")"
}

read -r base_ms base_kb <<<"$(measure "$NAME-base")"
read -r mod_ms mod_kb <<<"$(measure "$NAME-module")"
SWIFT_CORE="$(dirname "$(readlink -f "$(command -v swift)")")/../lib/swift/linux/libswiftCore.so"
read -r swift_ms swift_kb <<<"$(measure "$NAME-base" "$SWIFT_CORE")"
printf '%-34s %12s %14s\n' "pamtester, median of $RUNS" "time (ms)" "peak RSS (KB)"
printf '%-34s %12s %14s\n' "pam_permit only" "$base_ms" "$base_kb"
printf '%-34s %12s %14s\n' "pam_localauth, then pam_permit" "$mod_ms" "$mod_kb"
printf '%-34s %12s %14s\n' "added by pam_localauth" "$(awk "BEGIN{print $mod_ms-$base_ms}")" "$((mod_kb-base_kb))"
printf '%-34s %12s %14s\n' "pam_permit + Swift runtime" "$swift_ms" "$swift_kb"
printf '%-34s %12s %14s\n' "added by the Swift runtime alone" "$(awk "BEGIN{print $swift_ms-$base_ms}")" "$((swift_kb-base_kb))"
