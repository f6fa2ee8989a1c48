#!/bin/bash
# LocalAuth test rig: a private system-bus-like dbus-daemon and the real polkitd
# on it, with our polkit actions installed and a steerable test rule.
# Everything real, nothing mocked. Needs root (polkitd must start as root; it
# then drops to the `polkitd` user by itself).
#
#   scripts/rig.sh start DIR              start (idempotent); prints one line
#   scripts/rig.sh stop DIR               stop what `start` started, remove the test rule
#   scripts/rig.sh status DIR             exit 0 if the rig in DIR is up
#   scripts/rig.sh revive-polkit DIR      start polkitd again if it died (the bus stays)
#   scripts/rig.sh polkit DIR ACTION ANSWER
#                                         ANSWER: yes|no|auth_self|auth_self_keep|
#                                         auth_admin|auth_admin_keep|default, or
#                                         hold (polkit deliberates on ACTION until
#                                         release, at most 8 s; while it does, the
#                                         file DIR's answers/waiting/ACTION exists)
#                                         or release
#   scripts/rig.sh fprintd DIR VFP_SOCK   also start Debian's fprintd on the rig's bus,
#                                         on libfprint's virtual device at VFP_SOCK
#                                         (the baseline), with an empty store unless
#                                         RIG_FPRINTD_KEEP_STATE=1; `stop` stops it too
#   scripts/rig.sh bus-config SOCKET POLICY [SERVICEDIR]
#                                         print the rig's bus config (on SOCKET, with
#                                         bus POLICY, bus activation from SERVICEDIR)
#   scripts/rig.sh vfp SOCK CMD...        send one command to libfprint's virtual
#                                         device (retries connecting for ~5 s)
#
# DIR/env (KEY=VALUE lines, no quoting; `set -a; . DIR/env; set +a` to use):
#   DBUS_SYSTEM_BUS_ADDRESS  unix:path=DIR/system_bus_socket
#   LOCALAUTH_RIG_DIR        DIR
#   LOCALAUTH_TEST_POLKIT_DIR  directory of per-action answer files (what `polkit` writes)
#   RIG_DBUS_PID, RIG_POLKITD_PID
# Pid files: DIR/dbus.pid, DIR/polkitd.pid (DIR/fprintd.pid). Logs: DIR/*.log.
# The action file stays installed in /usr/share/polkit-1/actions after `stop`
# (it is what a real installation has, and harmless); the test rule and the
# answer directory are removed.

set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
POLKITD=/usr/lib/polkit-1/polkitd
FPRINTD=/usr/libexec/fprintd
ACTIONS_DIR=/usr/share/polkit-1/actions
RULES_DIR=/etc/polkit-1/rules.d
ANSWERS_ROOT=/run/localauth-test-polkit
ACTION_FILE="$REPO/polkit/org.example.LocalAuth.policy"
RIGHTS_ACTION_FILE="$REPO/polkit/org.example.LocalAuth.rights.policy"
BUS_POLICY="$REPO/dbus/org.example.LocalAuth.conf"
RULE_TEMPLATE="$REPO/scripts/polkit-test.rules"

die() { echo "rig.sh: $*" >&2; exit 1; }
usage() { sed -n '2,/^$/{s/^# \{0,1\}//;p}' "$0" >&2; exit 2; }

PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

# ---------------------------------------------------------------- helpers

abs_dir() {  # DIR -> absolute path (DIR need not exist)
    local d="$1"
    case "$d" in /*) ;; *) d="$PWD/$d" ;; esac
    # normalise without requiring existence
    d="$(realpath -m -- "$d")"
    case "$d" in *[[:space:]\'\"\\\$\`]*) die "DIR must not contain spaces, quotes or \$: $d" ;; esac
    printf '%s\n' "$d"
}

rig_id() {  # stable short id of a rig dir
    printf '%s' "$1" | md5sum | cut -c1-12
}

# pid_alive PIDFILE MATCH: the pid in PIDFILE runs and MATCH occurs in its
# cmdline or environment (guards against a recycled pid)
pid_alive() {
    local file="$1" match="$2" pid
    [ -s "$file" ] || return 1
    pid="$(cat "$file")"
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    [ -d "/proc/$pid" ] || return 1
    [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ] || return 1
    if { tr '\0' '\n' <"/proc/$pid/cmdline"; } 2>/dev/null | grep -qxF -- "$match"; then return 0; fi
    if { tr '\0' '\n' <"/proc/$pid/environ"; } 2>/dev/null | grep -qxF -- "$match"; then return 0; fi
    return 1
}

kill_pidfile() {  # PIDFILE MATCH NAME
    local file="$1" match="$2" name="$3" pid i
    if pid_alive "$file" "$match"; then
        pid="$(cat "$file")"
        kill -TERM "$pid" 2>/dev/null || true
        for i in $(seq 1 100); do
            pid_alive "$file" "$match" || break
            sleep 0.02
        done
        if pid_alive "$file" "$match"; then
            echo "rig.sh: $name ($pid) ignored SIGTERM, sending SIGKILL" >&2
            kill -KILL "$pid" 2>/dev/null || true
            for i in $(seq 1 50); do pid_alive "$file" "$match" || break; sleep 0.02; done
        fi
    fi
    rm -f "$file"
}

bus_call() {  # ADDRESS METHOD ARGS... -> dbus-send's printed reply
    local addr="$1"; shift
    dbus-send --bus="$addr" --print-reply=literal --reply-timeout=1000 \
        --dest=org.freedesktop.DBus /org/freedesktop/DBus "org.freedesktop.DBus.$@"
}

has_owner() {  # ADDRESS NAME
    [ "$(bus_call "$1" NameHasOwner "string:$2" 2>/dev/null | tr -d '[:space:]')" = "booleantrue" ]
}

wait_for() {  # SECONDS DESCRIPTION COMMAND...  (polls every 10 ms)
    local secs="$1" what="$2"; shift 2
    local deadline=$(( $(date +%s%N) + secs * 1000000000 ))
    until "$@"; do
        if [ "$(date +%s%N)" -gt "$deadline" ]; then
            echo "rig.sh: timed out after ${secs}s waiting for $what" >&2
            return 1
        fi
        sleep 0.01
    done
}

# ready_or_dead PID CHECK...: true when CHECK succeeds or PID has exited
# (so wait_for stops early; the caller then re-checks and reports)
ready_or_dead() {
    local pid="$1"; shift
    "$@" && return 0
    [ -d "/proc/$pid" ] && [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ] && return 1
    return 0
}

dbus_listening() { [ -s "$DIR/address" ] && [ -S "$SOCK" ]; }

set_vars() {  # DIR
    DIR="$(abs_dir "$1")"
    ID="$(rig_id "$DIR")"
    SOCK="$DIR/system_bus_socket"
    ADDR="unix:path=$SOCK"
    ANSWERS="$ANSWERS_ROOT/$ID"
    RULE="$RULES_DIR/00-localauth-test-$ID.rules"
}

rig_up() {
    pid_alive "$DIR/dbus.pid" "--config-file=$DIR/bus.conf" &&
    pid_alive "$DIR/polkitd.pid" "DBUS_SYSTEM_BUS_ADDRESS=$ADDR" &&
    has_owner "$ADDR" org.freedesktop.PolicyKit1
}

# bus_conf SOCKET POLICY [SERVICEDIR]: a system-bus-like dbus-daemon config on
# stdout, listening on SOCKET, with our bus POLICY included and, if given,
# SERVICEDIR for bus activation.
bus_conf() {
    local sock="$1" policy="$2" servicedir="${3:-}"
    cat <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<!-- LocalAuth test rig: a private bus configured like Debian's system bus
     (/usr/share/dbus-1/system.conf). Written by scripts/rig.sh. -->
<busconfig>
  <type>system</type>
  <auth>EXTERNAL</auth>
  <listen>unix:path=$sock</listen>
$( [ -n "$servicedir" ] && printf '  <servicedir>%s</servicedir>' "$servicedir" )

  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus"
           send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus"
           send_interface="org.freedesktop.DBus.Introspectable"/>
    <allow send_destination="org.freedesktop.DBus"
           send_interface="org.freedesktop.DBus.Properties"/>
    <allow send_destination="org.freedesktop.DBus"
           send_interface="org.freedesktop.DBus.Peer"/>
    <deny send_destination="org.freedesktop.DBus"
          send_interface="org.freedesktop.DBus"
          send_member="UpdateActivationEnvironment"/>
    <deny send_destination="org.freedesktop.DBus"
          send_interface="org.freedesktop.DBus.Debug.Stats"/>
  </policy>

  <policy user="root">
    <allow send_destination="org.freedesktop.DBus"
           send_interface="org.freedesktop.DBus.Monitoring"/>
    <allow send_destination="org.freedesktop.DBus"
           send_interface="org.freedesktop.DBus.Debug.Stats"/>
  </policy>

  <!-- Test-only: python-dbusmock's logind and upower templates stand in for
       systemd-logind and UPower (services we do not own) on this bus; root
       runs them and may own their names; anyone may call them, as on a real
       system (the real files, where installed, say the same). -->
  <policy user="root">
    <allow own="org.freedesktop.login1"/>
    <allow own="org.freedesktop.UPower"/>
  </policy>
  <policy context="default">
    <allow send_destination="org.freedesktop.login1"/>
    <allow send_destination="org.freedesktop.UPower"/>
  </policy>

  <include>$policy</include>
  <include>/usr/share/dbus-1/system.d/org.freedesktop.PolicyKit1.conf</include>
  <include ignore_missing="yes">/usr/share/dbus-1/system.d/net.reactivated.Fprint.conf</include>
</busconfig>
EOF
}

write_bus_conf() {
    bus_conf "$SOCK" "$BUS_POLICY" >"$DIR/bus.conf.tmp"
    mv -f "$DIR/bus.conf.tmp" "$DIR/bus.conf"
}

install_polkit_files() {
    [ -x "$POLKITD" ] || die "$POLKITD not found (apt-get install polkitd)"
    if ! cmp -s "$ACTION_FILE" "$ACTIONS_DIR/org.example.LocalAuth.policy"; then
        install -m 0644 "$ACTION_FILE" "$ACTIONS_DIR/org.example.LocalAuth.policy"
    fi
    # Rights and secrets have their own action file (docs/RIGHTS.md).
    if ! cmp -s "$RIGHTS_ACTION_FILE" "$ACTIONS_DIR/org.example.LocalAuth.rights.policy"; then
        install -m 0644 "$RIGHTS_ACTION_FILE" "$ACTIONS_DIR/org.example.LocalAuth.rights.policy"
    fi
    mkdir -p "$ANSWERS" "$ANSWERS/waiting"
    chmod 0755 "$ANSWERS_ROOT" "$ANSWERS"
    # The rule, running as the polkitd user, marks a held check here.
    chmod 1777 "$ANSWERS/waiting"
    if ! cmp -s "$RULE_TEMPLATE" "$RULE"; then
        # rules.d is 0700 polkitd:root; polkitd reads it after dropping to
        # the polkitd user (it owns the directory), so 0644 root is fine.
        install -m 0644 "$RULE_TEMPLATE" "$RULE"
    fi
}

write_env() {
    cat >"$DIR/env.tmp" <<EOF
DBUS_SYSTEM_BUS_ADDRESS=$ADDR
LOCALAUTH_RIG_DIR=$DIR
LOCALAUTH_TEST_POLKIT_DIR=$ANSWERS
RIG_DBUS_PID=$(cat "$DIR/dbus.pid")
RIG_POLKITD_PID=$(cat "$DIR/polkitd.pid")
EOF
    mv -f "$DIR/env.tmp" "$DIR/env"
}

# ---------------------------------------------------------------- commands

cmd_start() {
    [ "$(id -u)" = 0 ] || die "must run as root (polkitd starts as root and drops to the polkitd user)"
    set_vars "$1"
    local t0; t0=$(date +%s%N)
    mkdir -p "$DIR"
    # polkitd runs as `polkitd` but never needs to read DIR; only root clients use the socket
    # unless a test runs as another uid, so make the socket reachable for those.
    chmod 0755 "$DIR"

    # polkitd drops to the polkitd user *before* it connects to the bus, and
    # callers of another uid (setpriv --reuid=65534 …) need the socket too:
    # every directory above the socket must be searchable by others.
    local d="$DIR"
    while [ "$d" != / ]; do
        d="$(dirname "$d")"
        if [ "$(( 0$(stat -c %a "$d") & 1 ))" = 0 ]; then
            die "$d is not searchable by other users (mode $(stat -c %a "$d")): polkitd (user polkitd) could not reach $SOCK; use a DIR whose parents are o+x (e.g. chmod o+x $d)"
        fi
    done

    if rig_up; then
        install_polkit_files
        write_env
        echo "rig already running in $DIR: DBUS_SYSTEM_BUS_ADDRESS=$ADDR (dbus $(cat "$DIR/dbus.pid"), polkitd $(cat "$DIR/polkitd.pid"))"
        return 0
    fi

    # Half-started or stale: clean up what is ours, then start afresh.
    kill_pidfile "$DIR/polkitd.pid" "DBUS_SYSTEM_BUS_ADDRESS=$ADDR" polkitd
    kill_pidfile "$DIR/dbus.pid" "--config-file=$DIR/bus.conf" dbus-daemon
    rm -f "$SOCK" "$DIR/address" "$DIR/env"

    write_bus_conf
    install_polkit_files

    # setsid: not killed with the caller's terminal/process group; all three
    # standard fds redirected so no caller's pipe is held open by the daemons.
    setsid dbus-daemon --config-file="$DIR/bus.conf" --nofork --print-address=3 \
        3>"$DIR/address" </dev/null >"$DIR/dbus.log" 2>&1 &
    echo $! >"$DIR/dbus.pid"
    if ! wait_for 10 "dbus-daemon to listen on $SOCK" \
            ready_or_dead "$(cat "$DIR/dbus.pid")" dbus_listening \
        || ! pid_alive "$DIR/dbus.pid" "--config-file=$DIR/bus.conf" \
        || ! bus_call "$ADDR" GetId >/dev/null 2>&1; then
        echo "--- $DIR/dbus.log" >&2; tail -n 20 "$DIR/dbus.log" >&2 || true
        kill_pidfile "$DIR/dbus.pid" "--config-file=$DIR/bus.conf" dbus-daemon
        die "dbus-daemon did not come up"
    fi

    DBUS_SYSTEM_BUS_ADDRESS="$ADDR" LOCALAUTH_TEST_POLKIT_DIR="$ANSWERS" \
        setsid "$POLKITD" </dev/null >"$DIR/polkitd.log" 2>&1 &
    echo $! >"$DIR/polkitd.pid"
    if ! wait_for 10 "polkitd to own org.freedesktop.PolicyKit1" \
            ready_or_dead "$(cat "$DIR/polkitd.pid")" has_owner "$ADDR" org.freedesktop.PolicyKit1 \
        || ! pid_alive "$DIR/polkitd.pid" "DBUS_SYSTEM_BUS_ADDRESS=$ADDR" \
        || ! has_owner "$ADDR" org.freedesktop.PolicyKit1; then
        echo "--- $DIR/polkitd.log" >&2; tail -n 20 "$DIR/polkitd.log" >&2 || true
        kill_pidfile "$DIR/polkitd.pid" "DBUS_SYSTEM_BUS_ADDRESS=$ADDR" polkitd
        kill_pidfile "$DIR/dbus.pid" "--config-file=$DIR/bus.conf" dbus-daemon
        die "polkitd did not come up"
    fi

    write_env
    local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    echo "rig up in ${ms} ms: DBUS_SYSTEM_BUS_ADDRESS=$ADDR (dbus $(cat "$DIR/dbus.pid"), polkitd $(cat "$DIR/polkitd.pid")); source $DIR/env"
}

# polkitd 122 can die on a check whose subject left the bus at the wrong
# moment ("Error getting process for system bus name …", then exit): every
# later test would see "PolicyKit1 was not provided". Starts it again on the
# same bus, keeping the bus and everything connected to it. Exit 0 if it was
# alive or came back; prints one line when it had to start it.
cmd_revive_polkit() {
    set_vars "$1"
    [ -f "$DIR/dbus.pid" ] && pid_alive "$DIR/dbus.pid" "--config-file=$DIR/bus.conf" || die "no rig bus in $DIR"
    if pid_alive "$DIR/polkitd.pid" "DBUS_SYSTEM_BUS_ADDRESS=$ADDR" && has_owner "$ADDR" org.freedesktop.PolicyKit1; then
        return 0
    fi
    kill_pidfile "$DIR/polkitd.pid" "DBUS_SYSTEM_BUS_ADDRESS=$ADDR" polkitd
    mv -f "$DIR/polkitd.log" "$DIR/polkitd.log.$(date +%s%N)" 2>/dev/null || true
    DBUS_SYSTEM_BUS_ADDRESS="$ADDR" LOCALAUTH_TEST_POLKIT_DIR="$ANSWERS" \
        setsid "$POLKITD" </dev/null >"$DIR/polkitd.log" 2>&1 &
    echo $! >"$DIR/polkitd.pid"
    wait_for 10 "polkitd to own org.freedesktop.PolicyKit1" \
        ready_or_dead "$(cat "$DIR/polkitd.pid")" has_owner "$ADDR" org.freedesktop.PolicyKit1 || die "polkitd did not come back"
    write_env
    echo "rig.sh: polkitd had died on the rig's bus; started again (pid $(cat "$DIR/polkitd.pid"))"
}

cmd_stop() {
    set_vars "$1"
    kill_pidfile "$DIR/fprintd.pid" "DBUS_SYSTEM_BUS_ADDRESS=$ADDR" fprintd
    kill_pidfile "$DIR/polkitd.pid" "DBUS_SYSTEM_BUS_ADDRESS=$ADDR" polkitd
    kill_pidfile "$DIR/dbus.pid" "--config-file=$DIR/bus.conf" dbus-daemon
    rm -f "$RULE" "$SOCK" "$DIR/address" "$DIR/env"
    rm -rf "$ANSWERS"
    rmdir "$ANSWERS_ROOT" 2>/dev/null || true
    echo "rig stopped in $DIR"
}

cmd_status() {
    set_vars "$1"
    if rig_up; then
        echo "rig up in $DIR: DBUS_SYSTEM_BUS_ADDRESS=$ADDR"
    else
        echo "rig not running in $DIR"; return 1
    fi
}

cmd_polkit() {
    set_vars "$1"
    local action="$2" answer="$3"
    [[ "$action" =~ ^[A-Za-z0-9._-]+$ ]] || die "bad action id: $action"
    [ -d "$ANSWERS" ] || die "rig not started in $DIR (no $ANSWERS)"
    case "$answer" in
        yes|no|auth_self|auth_self_keep|auth_admin|auth_admin_keep)
            printf '%s\n' "$answer" >"$ANSWERS/.$action.tmp"
            chmod 0644 "$ANSWERS/.$action.tmp"
            mv -f "$ANSWERS/.$action.tmp" "$ANSWERS/$action" ;;
        default)
            rm -f "$ANSWERS/$action" ;;
        hold)
            : >"$ANSWERS/$action.hold"; chmod 0644 "$ANSWERS/$action.hold" ;;
        release)
            rm -f "$ANSWERS/$action.hold" ;;
        *) die "ANSWER must be yes|no|auth_self|auth_self_keep|auth_admin|auth_admin_keep|default|hold|release" ;;
    esac
}

cmd_fprintd() {
    set_vars "$1"
    local vfp="$2"
    [ -x "$FPRINTD" ] || die "$FPRINTD not found (apt-get install fprintd)"
    rig_up || die "rig not running in $DIR"
    if pid_alive "$DIR/fprintd.pid" "DBUS_SYSTEM_BUS_ADDRESS=$ADDR" && has_owner "$ADDR" net.reactivated.Fprint; then
        echo "fprintd already running: $(cat "$DIR/fprintd.pid")"; return 0
    fi
    kill_pidfile "$DIR/fprintd.pid" "DBUS_SYSTEM_BUS_ADDRESS=$ADDR" fprintd
    # A new fprintd starts with an empty store: the rig is shared by the test
    # classes of one run, and one class's fprintd prints must not meet another's.
    # RIG_FPRINTD_KEEP_STATE=1 keeps it (a switch from localauthd back to fprintd).
    [ -n "${RIG_FPRINTD_KEEP_STATE:-}" ] || rm -rf "$DIR/fprintd-state"
    mkdir -p "$DIR/fprintd-state"
    chmod 0700 "$DIR/fprintd-state"
    DBUS_SYSTEM_BUS_ADDRESS="$ADDR" STATE_DIRECTORY="$DIR/fprintd-state" \
    FP_VIRTUAL_DEVICE="$vfp" FP_DRIVERS_WHITELIST=virtual_device \
        setsid "$FPRINTD" -t </dev/null >"$DIR/fprintd.log" 2>&1 &
    echo $! >"$DIR/fprintd.pid"
    if ! wait_for 10 "fprintd to own net.reactivated.Fprint" \
            ready_or_dead "$(cat "$DIR/fprintd.pid")" has_owner "$ADDR" net.reactivated.Fprint \
        || ! has_owner "$ADDR" net.reactivated.Fprint; then
        echo "--- $DIR/fprintd.log" >&2; tail -n 20 "$DIR/fprintd.log" >&2 || true
        kill_pidfile "$DIR/fprintd.pid" "DBUS_SYSTEM_BUS_ADDRESS=$ADDR" fprintd
        die "fprintd did not come up"
    fi
    echo "fprintd up: pid $(cat "$DIR/fprintd.pid"), state $DIR/fprintd-state, virtual device $vfp"
}

# One command per connection; libfprint's virtual device accepts only while the
# device is open and its GLib context iterates, so retry connecting for ~5 s.
cmd_vfp() {
    local sock="$1"; shift
    "$PY" - "$sock" "$*" <<'EOF'
import socket, sys, time
path, cmd = sys.argv[1], sys.argv[2]
deadline = time.monotonic() + 5.0
while True:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
        s.sendall(cmd.encode())
        s.close()
        break
    except OSError as e:
        s.close()
        if time.monotonic() > deadline:
            sys.exit("vfp: cannot send %r to %s: %s" % (cmd, path, e))
        time.sleep(0.02)
EOF
}

[ $# -ge 1 ] || usage
# The daemons started here outlive this script: they must not inherit its
# open files (a caller's `flock LOCK scripts/rig.sh …` would stay locked for
# as long as the rig runs). Bash's own script descriptor (255) stays.
for fd_path in /proc/$$/fd/*; do
    fd="${fd_path##*/}"
    case "$fd" in 0|1|2|255) ;; *) eval "exec $fd>&-" 2>/dev/null || true ;; esac
done
unset fd fd_path

cmd="$1"; shift
case "$cmd" in
    start)  [ $# -eq 1 ] || usage; cmd_start "$1" ;;
    stop)   [ $# -eq 1 ] || usage; cmd_stop "$1" ;;
    status) [ $# -eq 1 ] || usage; cmd_status "$1" ;;
    polkit) [ $# -eq 3 ] || usage; cmd_polkit "$1" "$2" "$3" ;;
    revive-polkit) [ $# -eq 1 ] || usage; cmd_revive_polkit "$1" ;;
    fprintd) [ $# -eq 2 ] || usage; cmd_fprintd "$1" "$2" ;;
    vfp)    [ $# -ge 2 ] || usage; cmd_vfp "$@" ;;
    bus-config) [ $# -ge 2 ] && [ $# -le 3 ] || usage; bus_conf "$@" ;;
    -h|--help|help) usage ;;
    *) usage ;;
esac
