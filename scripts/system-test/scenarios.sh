#!/bin/bash
# The system test's scenarios, run as root *inside* the booted container
# (scripts/system-test/run enters it with nsenter): real systemd, dbus-daemon,
# logind, polkitd and sshd; our packages installed with apt; libfprint's
# virtual reader (the drop-in gives localauthd.service FP_VIRTUAL_DEVICE).
#   scenarios.sh [NAME...]     (default: every scenario, in order)
# One line per scenario (PASS/FAIL/SKIP name, seconds, and why), then
# "N passed, N failed". On a failure: the scenario's own log and the
# service's journal since the scenario started.
set -uo pipefail
export LANG=C.UTF-8

DEBS=/opt/systest/debs
VFP=/var/lib/localauth/vfp.sock
FPRINTD_VFP=/var/lib/fprint/vfp.sock
OBJ=/org/example/LocalAuth
IFACE=org.example.LocalAuth
LOGS=/var/log/systest
mkdir -p "$LOGS"

# ------------------------------------------------------------------ helpers
# Every helper returns non-zero with a reason on stderr (the scenario's log).
why() { echo "WHY: $*" >&2; return 1; }
now() { echo "$EPOCHREALTIME"; }
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }'; }
uid_of() { id -u "$1"; }

# One command to libfprint's virtual device (it listens only while the reader
# is open: retry for ~5 s, as scripts/rig.sh vfp does).
vfp() {  # SOCKET COMMAND...
    local sock="$1"; shift
    python3 - "$sock" "$*" <<'PY'
import socket, sys, time
path, cmd = sys.argv[1], sys.argv[2]
deadline = time.monotonic() + 5.0
while True:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path); s.sendall(cmd.encode()); s.close(); break
    except OSError as e:
        s.close()
        if time.monotonic() > deadline:
            sys.exit("vfp: cannot send %r to %s: %s" % (cmd, path, e))
        time.sleep(0.02)
PY
}

wait_for() {  # SECONDS WHAT COMMAND...: poll every 0.1 s
    local seconds="$1" what="$2"; shift 2
    local end=$(( ${EPOCHSECONDS} + seconds ))
    while [ "$EPOCHSECONDS" -le "$end" ]; do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
    why "waited ${seconds} s for $what"
}

unit_state() { systemctl show -P ActiveState "$1"; }
is_active() { [ "$(unit_state "$1")" = active ]; }
is_inactive() { [ "$(unit_state "$1")" = inactive ]; }

# A logind session opened as a display manager opens it: a root process in
# a system service (gdm.service's worker) runs PAM's session stack with
# pam_systemd, XDG_SEAT=seat0 and the class given. Prints the session id.
open_seat_session() {  # UNIT USER CLASS(user|greeter)
    local unit="$1" user="$2" class="$3" id=""
    systemctl stop "$unit" 2>/dev/null; systemctl reset-failed "$unit" 2>/dev/null
    rm -f "/run/$unit.session"
    systemd-run --quiet --unit="$unit" --service-type=exec -E SYSTEST_SESSION_FILE="/run/$unit.session" \
        -E XDG_SEAT=seat0 -E XDG_SESSION_CLASS="$class" -E XDG_SESSION_TYPE=wayland -E XDG_SESSION_DESKTOP=systest \
        /usr/bin/python3 /opt/systest/session-holder.py systest-display "$user" || { why "systemd-run $unit failed"; return 1; }
    for _ in $(seq 100); do
        id="$(cat "/run/$unit.session" 2>/dev/null)"
        [ -n "$id" ] && break
        is_active "$unit" || break
        sleep 0.1
    done
    [ -n "$id" ] && [ "$id" != "?" ] || { journalctl -q -u "$unit" -o cat >&2; why "no logind session for $user ($unit)"; return 1; }
    echo "$id"
}
close_seat_session() { systemctl stop "$1" 2>/dev/null; systemctl reset-failed "$1" 2>/dev/null; true; }
session_prop() { loginctl show-session "$1" -P "$2"; }
active_session_of_seat() { loginctl show-seat seat0 -P ActiveSession; }

# A process of USER in a scope of USER's systemd --user (user@UID.service),
# as GNOME starts apps (app-gnome-NAME-PID.scope) and GNOME Terminal its tabs
# (vte-spawn-UUID.scope): setpriv (no PAM, no session of its own), then
# systemd-run --user --scope moves it into the user manager's app.slice.
in_user_scope() {  # USER SCOPE-PREFIX COMMAND...
    local user="$1" prefix="$2"; shift 2
    local uid; uid="$(uid_of "$user")"
    setpriv --reuid="$uid" --regid="$(id -g "$user")" --init-groups --reset-env \
        env HOME="/home/$user" USER="$user" LOGNAME="$user" PATH=/usr/bin:/bin LANG=C.UTF-8 \
        XDG_RUNTIME_DIR="/run/user/$uid" DBUS_SESSION_BUS_ADDRESS="unix:path=/run/user/$uid/bus" \
        systemd-run --user --scope --quiet --unit="$prefix-$RANDOM$RANDOM.scope" -- "$@"
}

# Enroll USER's finger named NAME (the virtual reader's print) as root with
# the installed localauthctl: one SCAN each time it asks.
enroll() {  # USER NAME
    local user="$1" name="$2" log="$LOGS/enroll-$1.log" sent=0 asked pid
    localauthctl enroll --user "$user" >"$log" 2>&1 &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        asked=$(grep -c -E "^The reader needs|^Scan [0-9]+ of [0-9]+ done" "$log" 2>/dev/null || true)
        if [ "${asked:-0}" -gt "$sent" ]; then vfp "$VFP" SCAN "$name" || break; sent=$((sent + 1)); fi
        sleep 0.05
    done
    wait "$pid" || { cat "$log" >&2; why "localauthctl enroll --user $user failed"; return 1; }
}

lockout_count() { cat "/var/lib/localauth/lockout/$(uid_of "$1")" 2>/dev/null || echo 0; }

# An evaluation by USER's app in a user scope, fed FINGER (or nothing) by the
# reader. Sets EVAL_RC, EVAL_OUT, EVAL_SECONDS.
evaluate_in_app_scope() {  # USER FINGER|-
    local user="$1" finger="$2" out="$LOGS/evaluate-$1.$$.log" t0 pid
    t0=$(now)
    in_user_scope "$user" app-gnome-systest localauthctl evaluate --reason "system test" >"$out" 2>&1 &
    pid=$!
    if [ "$finger" != - ]; then
        # the scan starts once the evaluation reached the reader
        vfp "$VFP" SCAN "$finger" 2>>"$out" || true
    fi
    wait "$pid"; EVAL_RC=$?
    EVAL_SECONDS=$(since "$t0")
    EVAL_OUT="$(cat "$out")"
    echo "evaluate as $user (finger $finger): rc=$EVAL_RC in ${EVAL_SECONDS}s: $EVAL_OUT" >&2
}

# A PAM service of the tests: pam_localauth (debug: it logs its verdict and
# its time) and nothing after it but pam_deny, so the result is the module's.
pam_service() {  # NAME
    cat > "/etc/pam.d/$1" <<'CONF'
auth     [success=done default=ignore] pam_localauth.so timeout=10 debug
auth     requisite pam_deny.so
account  required pam_permit.so
CONF
}

# The module's log lines (pam_syslog: "PAM-SERVICE(pam_localauth:auth): ...").
module_log_since() { journalctl -q --since "@$1" -o cat -t "$2" 2>/dev/null | grep pam_localauth; }

# --------------------------------------------------------------- scenarios

# Our .debs, installed with apt as a person would (apt-get install ./x.deb),
# offline: every dependency must already be in the root. localauth-prompt is
# left out (its GTK is not in the root; no display server here).
scenario_apt_installs_the_packages() {
    local debs=()
    for package in localauthd libpam-localauth localauth-tools liblocalauth-1-0 gir1.2-localauth-1.0; do
        debs+=("$(ls $DEBS/${package}_*.deb)")
    done
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        "${debs[@]}" >"$LOGS/apt-install.log" 2>&1 ||
        { tail -n 30 "$LOGS/apt-install.log" >&2; why "apt-get install of our packages failed"; return 1; }
    for package in localauthd libpam-localauth localauth-tools; do
        [ "$(dpkg-query -W -f='${db:Status-Status}' "$package")" = installed ] || why "$package is not installed" || return 1
    done
    # The maintainer scripts reloaded systemd and the bus: the unit and the
    # activation file are known without a reboot.
    systemctl cat localauthd.service >/dev/null || why "systemd does not know localauthd.service" || return 1
    busctl --system call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus ListActivatableNames |
        grep -q '"org.example.LocalAuth"' || why "the bus cannot activate org.example.LocalAuth" || return 1
    is_inactive localauthd || why "localauthd runs right after installation (it is bus-activated only)"
}

# Bus activation through systemd, idle exit, activation again; the unit's
# figures as systemd sees them running.
scenario_bus_activation_and_idle_exit() {
    systemctl stop localauthd; is_inactive localauthd || why "localauthd did not stop" || return 1
    local t0 out; t0=$(now)
    out="$(setpriv --reuid=alice --regid=alice --init-groups busctl --system call org.example.LocalAuth $OBJ $IFACE CanEvaluatePolicy u 1 2>&1)"
    echo "first CanEvaluatePolicy (alice, no session): $out in $(since "$t0") s" >&2
    case "$out" in "b "*|*org.example.LocalAuth.Error.*) ;; *) why "CanEvaluatePolicy got no answer of the service: $out"; return 1 ;; esac
    is_active localauthd || why "the call did not start localauthd.service through systemd" || return 1
    local pid; pid="$(systemctl show -P MainPID localauthd)"
    [ "$(readlink /proc/"$pid"/exe)" = /usr/libexec/localauthd ] || why "MainPID $pid is not /usr/libexec/localauthd" || return 1
    grep -q "^0::/system.slice/localauthd.service" /proc/"$pid"/cgroup ||
        grep -q ":name=systemd:/system.slice/localauthd.service" /proc/"$pid"/cgroup || why "pid $pid is not in localauthd.service's cgroup" || return 1
    echo "figures: $(systemctl show localauthd -p MainPID -p MemoryCurrent -p TasksCurrent -p NRestarts -p ExecMainStartTimestampMonotonic | paste -sd' ')" >&2
    echo "figures: $(systemd-analyze security localauthd.service --no-pager 2>/dev/null | tail -n1)" >&2
    # The sandbox as applied: only the state directory is writable.
    grep -q ' /var/lib/localauth .*rw' /proc/"$pid"/mountinfo || why "the state directory is not mounted rw in the service" || return 1
    grep -E ' / / .* ro[, ]' /proc/"$pid"/mountinfo >/dev/null || why "the root is not read-only in the service (ProtectSystem=strict)" || return 1
    # Idle exit (30 s, the shipped --idle-timeout) with Result=success.
    wait_for 45 "localauthd to exit when idle" is_inactive localauthd || return 1
    [ "$(systemctl show -P Result localauthd)" = success ] || why "the idle exit's result is $(systemctl show -P Result localauthd)" || return 1
    echo "idle exit after $(since "$t0") s since the first call" >&2
    t0=$(now)
    setpriv --reuid=alice --regid=alice --init-groups busctl --system call org.example.LocalAuth $OBJ $IFACE CanEvaluatePolicy u 1 >/dev/null 2>&1
    is_active localauthd || why "the next call did not start it again" || return 1
    echo "activated again in $(since "$t0") s" >&2
}

# GNOME's app scope in alice's active display session: the app evaluates and
# the finger answers. After a switch to bob's session on seat0 the same app
# is refused without a scan; after switching back it works again.
scenario_app_scope_in_active_display_session() {
    local alice bob
    alice="$(open_seat_session systest-display-alice alice user)" || return 1
    [ "$(active_session_of_seat)" = "$alice" ] || why "alice's session $alice is not seat0's active one ($(active_session_of_seat))" || return 1
    echo "alice's display session $alice: $(loginctl show-session "$alice" -p Class -p Type -p Seat -p Remote -p Active -p State | paste -sd' ')" >&2
    wait_for 20 "user@$(uid_of alice).service" is_active "user@$(uid_of alice).service" || return 1
    enroll alice alice-right-index || return 1
    evaluate_in_app_scope alice alice-right-index
    [ "$EVAL_RC" = 0 ] || why "alice's app in her active session was refused" || return 1

    # Fast user switching: bob's session on seat0 comes to the front.
    bob="$(open_seat_session systest-display-bob bob user)" || return 1
    loginctl activate "$bob"
    wait_for 5 "bob's session to be active" test "$(active_session_of_seat)" = "$bob" || return 1
    evaluate_in_app_scope alice -
    [ "$EVAL_RC" != 0 ] || why "alice's app was let through while bob's session is in front" || return 1
    echo "$EVAL_OUT" | grep -q -i -E "not at the reader|NotAtTheReader|not authorized|authorization|denied|-1004|appCancel|notInteractive|interaction" ||
        echo "NOTE: the refusal reads: $EVAL_OUT" >&2
    awk -v s="$EVAL_SECONDS" 'BEGIN { exit !(s < 3) }' || why "the refusal took ${EVAL_SECONDS}s (a scan was waited for?)" || return 1

    loginctl activate "$alice"
    wait_for 5 "alice's session to be active again" test "$(active_session_of_seat)" = "$alice" || return 1
    evaluate_in_app_scope alice alice-right-index
    [ "$EVAL_RC" = 0 ] || why "alice's app was refused after switching back" || return 1
}

scenario_cleanup_sessions() { close_seat_session systest-display-alice; close_seat_session systest-display-bob; close_seat_session systest-greeter; }

ALL=(apt_installs_the_packages bus_activation_and_idle_exit app_scope_in_active_display_session)

# ------------------------------------------------------------------ runner
passed=0; failed=0
[ $# -gt 0 ] && ALL=("$@")
for name in "${ALL[@]}"; do
    name="${name//-/_}"
    log="$LOGS/$name.log"
    cursor="$(journalctl -n0 --show-cursor -q 2>/dev/null | sed -n 's/^-- cursor: //p')"
    t0=$(now)
    if ! declare -F "scenario_$name" >/dev/null; then
        echo "FAIL ${name//_/-}: no such scenario"; failed=$((failed + 1)); continue
    fi
    ( "scenario_$name" ) >"$log" 2>&1
    rc=$?
    scenario_cleanup_sessions >/dev/null 2>&1
    seconds=$(since "$t0")
    if [ $rc = 0 ]; then
        echo "PASS ${name//_/-} (${seconds} s)"
        passed=$((passed + 1))
    else
        echo "FAIL ${name//_/-} (${seconds} s): $(grep '^WHY: ' "$log" | tail -n1 | cut -c6-)"
        failed=$((failed + 1))
        {
            echo "----- ${name//_/-}: its log"
            sed 's/^/  /' "$log"
            echo "----- ${name//_/-}: journalctl -u localauthd since it started"
            journalctl -q --no-pager -o short-monotonic -u localauthd ${cursor:+--after-cursor="$cursor"} | tail -n 60 | sed 's/^/  /'
            echo "-----"
        } >&2
    fi
done
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
