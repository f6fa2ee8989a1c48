#!/bin/bash
# The evaluation profile of BENCHMARKS.md ("Evaluation"), in one run: the rig,
# both daemons enrolled, then (1) evaluations.py's medians, (2) hops.py's parts
# measured alone, (3) cpu.sh for each daemon, (4) a system-wide record of the
# message syscalls during evaluations and timeline.py's breakdown of it.
# Root; takes the rig lock itself. LOCALAUTHD=PATH picks the daemon.
#   Tools/Bench/profile/run.sh [CYCLES]
set -e
[ -n "$PROFILE_LOCKED" ] || PROFILE_LOCKED=1 exec flock -o /tmp/localauth-rig.lock "$0" "$@"
here="$(cd "$(dirname "$0")" && pwd)"; n=${1:-300}
D=$(mktemp -d /tmp/localauth-profile.XXXXXX)
trap '"$here/rig.sh" down $D >/dev/null 2>&1 || true; rm -rf $D' EXIT
"$here/rig.sh" up $D
E="/usr/bin/python3 $here/evaluations.py unix:path=$D/system_bus_socket $D/localauthd-vfp.sock $D/fprintd-vfp.sock"
$E --enroll --cycles 20 >/dev/null
echo "== evaluations, alternating rounds of 50"; $E --cycles $n
echo "== the parts alone"; /usr/bin/python3 "$here/hops.py" unix:path=$D/system_bus_socket $n
echo "== on-CPU time per cycle"; "$here/cpu.sh" $D ours $n; "$here/cpu.sh" $D fprintd $n
perf record -q -a -o $D/sys.perf -e syscalls:sys_enter_sendmsg -e syscalls:sys_exit_recvmsg \
    -e syscalls:sys_enter_accept4 -e syscalls:sys_enter_accept -e syscalls:sys_exit_recvfrom 2>/dev/null & rec=$!
sleep 1
echo "== under perf record (syscall tracepoints)"; $E --cycles 200
kill -INT $rec; wait $rec || true
cat $D/dbus.pid $D/fprintd.pid $D/localauthd.pid $D/polkitd.pid | tr '\n' ' ' > $D/pids
perf script -i $D/sys.perf -F comm,pid,tid,time,event,trace 2>/dev/null > $D/sys.txt
echo "== timeline (us)"; /usr/bin/python3 "$here/timeline.py" $D
