#!/bin/bash
# The bench's set-up by hand, for profiling (BENCHMARKS.md, "Evaluation"):
# scripts/rig.sh's private bus and real polkitd, localauthd (LOCALAUTHD, or the
# release build) on libfprint's virtual_device exactly as localauth-bench
# starts it, and Debian's fprintd beside it on its own virtual sensor.
#   rig.sh up DIR | down DIR      (root; under flock -o /tmp/localauth-rig.lock)
set -e
R="$(cd "$(dirname "$0")/../../.." && pwd)"; D=$2
BIN=${LOCALAUTHD:-$R/.build/release/localauthd}
case $1 in
up)
  mkdir -p $D
  $R/scripts/rig.sh start $D >/dev/null
  mkdir -p $D/localauthd-fprintd-store; chmod 700 $D/localauthd-fprintd-store
  DBUS_SYSTEM_BUS_ADDRESS=unix:path=$D/system_bus_socket FP_VIRTUAL_DEVICE=$D/localauthd-vfp.sock FP_DRIVERS_WHITELIST=virtual_device \
    setsid $BIN --state-dir $D/localauthd-state --idle-timeout 0 --fprintd-store $D/localauthd-fprintd-store > $D/localauthd.log 2>&1 &
  echo $! > $D/localauthd.pid
  $R/scripts/rig.sh fprintd $D $D/fprintd-vfp.sock >/dev/null
  for i in $(seq 100); do grep -q . $D/localauthd.log 2>/dev/null && break; sleep 0.05; done
  echo "localauthd $(cat $D/localauthd.pid) polkitd $(cat $D/polkitd.pid) fprintd $(cat $D/fprintd.pid) dbus $(cat $D/dbus.pid)";;
down)
  kill $(cat $D/localauthd.pid) 2>/dev/null || true
  $R/scripts/rig.sh stop $D;;
esac
