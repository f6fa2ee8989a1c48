#!/bin/bash
# cpu.sh DIR ours|fprintd N: on-CPU time per cycle of localauthd, polkitd,
# fprintd and dbus-daemon (all threads, /proc/PID/task/*/schedstat) during N
# cycles of one daemon (evaluations.py --only). Nothing is attached to them.
D=$1; ONLY=$2; N=$3
pids="localauthd:$(cat $D/localauthd.pid) polkitd:$(cat $D/polkitd.pid) fprintd:$(cat $D/fprintd.pid) dbus:$(cat $D/dbus.pid)"
cpu() { local s=0; for f in /proc/$1/task/*/schedstat; do read a b c < $f; s=$((s+a)); done; echo $s; }
declare -A before
for p in $pids; do before[$p]=$(cpu ${p#*:}); done
/usr/bin/python3 "$(dirname "$0")/evaluations.py" unix:path=$D/system_bus_socket $D/localauthd-vfp.sock $D/fprintd-vfp.sock --cycles $N --only $ONLY &
cp=$!; c0=0
while kill -0 $cp 2>/dev/null; do c0=$(cpu $cp 2>/dev/null || echo $c0); sleep 0.2; done
wait $cp
for p in $pids; do echo "  $ONLY: ${p%%:*} $(( ($(cpu ${p#*:}) - ${before[$p]}) / (N+5) / 1000 )) us/cycle"; done
echo "  $ONLY: client(python) ~$(( c0 / (N+5) / 1000 )) us/cycle (incl. its start-up)"
