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
export LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive

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
# A measured figure: shown on the scenario's PASS/FAIL line.
figure() { echo "FIGURE: $*" >&2; }
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

# Feed the reader as a person would: one SCAN of FINGER each time the
# service asks for a finger, up to COUNT times, while PID runs. The service's
# EvaluationStatus signals tell when (the runner's dbus-monitor writes them
# to $STATUS_LOG): "place-finger" once, then "no-match" after each failed
# scan but the last. A client's own output cannot tell: sudo's and
# pamtester's are buffered in a pipe until they exit. A SCAN that reaches the
# device before its scan starts is dropped, so the right finger (COUNT 1) is
# placed again every second until the client is done (a match ends the scan;
# extra touches go nowhere).
STATUS_LOG="$LOGS/evaluation-status.log"
status_mark() { local n; n=$(grep -c -E '"(place-finger|no-match)"' "$STATUS_LOG" 2>/dev/null); echo "${n:-0}"; }
feed() {  # PID MARK FINGER COUNT
    local pid="$1" mark="$2" finger="$3" count="$4" sent=0 asked end=$((EPOCHSECONDS + 30))
    # "always": a client of fprintd's interface (pam_fprintd), whose scans the
    # service does not announce on its own interface: the finger is placed
    # every second until the client is done.
    [ "$count" = always ] && sent=always
    while [ "$sent" != always ] && kill -0 "$pid" 2>/dev/null && [ "$sent" -lt "$count" ] && [ "$EPOCHSECONDS" -lt "$end" ]; do
        asked=$(( $(status_mark) - mark ))
        if [ "$asked" -gt "$sent" ]; then
            vfp "$VFP" SCAN "$finger" || break
            echo "$EPOCHREALTIME SCAN $finger ($asked asked)" >&2
            sent=$((sent + 1))
        fi
        sleep 0.05
    done
    if [ "$count" = 1 ] || [ "$count" = always ]; then
        while kill -0 "$pid" 2>/dev/null && [ "$EPOCHSECONDS" -lt "$end" ]; do
            for _ in $(seq 10); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
            vfp "$VFP" SCAN "$finger" 2>/dev/null && echo "$EPOCHREALTIME SCAN $finger again" >&2
        done
    fi
    return 0
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
session_path() { busctl --system call org.freedesktop.login1 /org/freedesktop/login1 org.freedesktop.login1.Manager GetSession s "$1" | sed -n 's/^o "\(.*\)"$/\1/p'; }
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

# What localauthctl enroll prints when it wants the next scan (the first, the
# next stage, or again after a scan the reader could not use).
ENROLL_ASKS="^The reader needs|^Scan [0-9]+ of [0-9]+ done|did not count"

# Enroll USER's finger named NAME (the virtual reader's print) as root with
# the installed localauthctl: one SCAN each time it asks.
enroll() {  # USER NAME
    local user="$1" name="$2" log="$LOGS/enroll-$1.log" sent=0 asked pid
    localauthctl enroll --user "$user" >"$log" 2>&1 &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        asked=$(grep -c -E "$ENROLL_ASKS" "$log" 2>/dev/null || true)
        if [ "${asked:-0}" -gt "$sent" ]; then vfp "$VFP" SCAN "$name" || break; sent=$((sent + 1)); fi
        sleep 0.05
    done
    wait "$pid" || { cat "$log" >&2; why "localauthctl enroll --user $user failed"; return 1; }
}


# Enrolled once per container: later scenarios reuse alice's finger.
ensure_enrolled() {  # USER NAME
    localauthctl list --user "$1" 2>/dev/null | grep -q right-index-finger || enroll "$1" "$2"
}
reset_lockout() {
    busctl --system call org.example.LocalAuth $OBJ $IFACE ResetLockout s "$1" >/dev/null
}

# pam_localauth as the first line of a real service's auth stack (debug: its
# verdict and time reach the journal), before Debian's common-auth.
enable_module_in() {  # PAM-SERVICE
    grep -q pam_localauth "/etc/pam.d/$1" && return 0
    sed -i '0,/^@include common-auth/s//auth [success=done default=ignore] pam_localauth.so timeout=10 debug\n@include common-auth/' "/etc/pam.d/$1"
    grep -q pam_localauth "/etc/pam.d/$1" || why "could not put pam_localauth into /etc/pam.d/$1"
}

# Every VerifyUser on the system bus while it runs, to a file (what proves
# "no scan was even asked for"; the real dbus-daemon's monitor interface).
watch_verify_user() {  # FILE; sets WATCH_PID
    dbus-monitor --system "type='method_call',interface='$IFACE',member='VerifyUser'" >"$1" 2>&1 &
    WATCH_PID=$!
    sleep 0.3
}
verify_user_calls() { kill "$WATCH_PID" 2>/dev/null; wait "$WATCH_PID" 2>/dev/null; grep -c 'member=VerifyUser' "$1"; }

# An SSH client on the container's loopback. Key login as alice (root holds
# her key), or a password login through SSH_ASKPASS.
ssh_key() {  # USER COMMAND
    ssh -i /root/.ssh/id_alice -o BatchMode=yes -o PreferredAuthentications=publickey "$1@127.0.0.1" "$2"
}
ssh_password() {  # USER PASSWORD COMMAND
    printf '#!/bin/sh\necho %s\n' "$2" > /run/systest-askpass; chmod 0700 /run/systest-askpass
    setsid -w env SSH_ASKPASS=/run/systest-askpass SSH_ASKPASS_REQUIRE=force DISPLAY=none \
        ssh -o PubkeyAuthentication=no -o PreferredAuthentications=password -o NumberOfPasswordPrompts=1 \
        "$1@127.0.0.1" "$3" </dev/null
}

lockout_count() { cat "/var/lib/localauth/lockout/$(uid_of "$1")" 2>/dev/null || echo 0; }

# An evaluation by USER's app in a user scope, fed FINGER (or nothing) by the
# reader. Sets EVAL_RC, EVAL_OUT, EVAL_SECONDS.
evaluate_in_app_scope() {  # USER FINGER|-
    local user="$1" finger="$2" out="$LOGS/evaluate-$1.$$.log" t0 pid mark
    t0=$(now); mark=$(status_mark)
    in_user_scope "$user" app-gnome-systest localauthctl evaluate --reason "system test" >"$out" 2>&1 &
    pid=$!
    [ "$finger" = - ] || feed "$pid" "$mark" "$finger" 1
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
# OpenSSH 10 (Debian 13) runs sshd's PAM in sshd-session, which logs under that name.
module_log_since() {  # SINCE PROGRAM
    local tags=(-t "$2"); [ "$2" != sshd ] || tags+=(-t sshd-session)
    journalctl -q --since "@$1" -o cat "${tags[@]}" 2>/dev/null | grep pam_localauth
}

# --------------------------------------------------------------- scenarios

# Our .debs, installed with apt as a person would (apt-get install ./x.deb),
# offline: every dependency must already be in the root (localauth-prompt's
# GTK 4 too; Xvfb stands in for the screen in the agent's scenario).
scenario_apt_installs_the_packages() {
    local debs=()
    for package in localauthd localauth-prompt libpam-localauth localauth-tools liblocalauth-1-0 gir1.2-localauth-1.0; do
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
    figure "activated by the first call in $(since "$t0") s"
    # Any answer of the service will do (alice is in no session here: it may
    # say she is not at the reader); not one of the bus's activation errors.
    case "$out" in "b "*) ;; *"not provided by any .service"*|*Timeout*|*"Connection timed out"*|*ServiceUnknown*|*"Failed to activate"*|*"start job"*)
        why "CanEvaluatePolicy got no answer of the service: $out"; return 1 ;; esac
    is_active localauthd || why "the call did not start localauthd.service through systemd" || return 1
    local pid; pid="$(systemctl show -P MainPID localauthd)"
    [ "$(readlink /proc/"$pid"/exe)" = /usr/libexec/localauthd ] || why "MainPID $pid is not /usr/libexec/localauthd" || return 1
    grep -q "^0::/system.slice/localauthd.service" /proc/"$pid"/cgroup ||
        grep -q ":name=systemd:/system.slice/localauthd.service" /proc/"$pid"/cgroup || why "pid $pid is not in localauthd.service's cgroup" || return 1
    echo "figures: $(systemctl show localauthd -p MainPID -p MemoryCurrent -p TasksCurrent -p NRestarts -p ExecMainStartTimestampMonotonic | paste -sd' ')" >&2
    echo "figures: $(systemd-analyze security localauthd.service --no-pager 2>/dev/null | tail -n1)" >&2
    figure "exposure $(systemd-analyze security localauthd.service --no-pager 2>/dev/null | tail -n1 | sed -n 's/.*: \([0-9.]* [A-Z]*\).*/\1/p')"
    figure "RSS $(($(awk '/^VmRSS/ {print $2}' /proc/"$pid"/status) / 1024)) MB, $(ls /proc/"$pid"/task | wc -l) threads"
    # The sandbox as applied: only the state directory is writable.
    local root_options state_options
    root_options="$(findmnt --task "$pid" -no OPTIONS /)"; state_options="$(findmnt --task "$pid" -no OPTIONS /var/lib/localauth)"
    echo "in the service's mount namespace: / $root_options; /var/lib/localauth $state_options" >&2
    case "$root_options" in ro,*) ;; *) why "the root is not read-only in the service (ProtectSystem=strict)"; return 1 ;; esac
    case "$state_options" in rw,*) ;; *) why "the state directory is not writable in the service"; return 1 ;; esac
    # Idle exit (30 s, the shipped --idle-timeout) with Result=success.
    wait_for 45 "localauthd to exit when idle" is_inactive localauthd || return 1
    [ "$(systemctl show -P Result localauthd)" = success ] || why "the idle exit's result is $(systemctl show -P Result localauthd)" || return 1
    echo "idle exit after $(since "$t0") s since the first call" >&2
    figure "idle exit $(since "$t0") s after the call"
    t0=$(now)
    setpriv --reuid=alice --regid=alice --init-groups busctl --system call org.example.LocalAuth $OBJ $IFACE CanEvaluatePolicy u 1 >/dev/null 2>&1
    is_active localauthd || why "the next call did not start it again" || return 1
    echo "activated again in $(since "$t0") s" >&2
    figure "activated again in $(since "$t0") s"
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
    ensure_enrolled alice alice-right-index || return 1
    evaluate_in_app_scope alice alice-right-index
    [ "$EVAL_RC" = 0 ] || why "alice's app in her active session was refused" || return 1
    # An app of the C library (the Python example over the installed typelib): its preflight.
    local preflight
    preflight="$(in_user_scope alice app-gnome-systest python3 /opt/systest/unlock.py --preflight 2>&1)"
    echo "app preflight, alice in front: $preflight" >&2
    [ "$preflight" = "preflight: ok biometry-type=1" ] || why "the app's preflight in the active session: $preflight" || return 1

    # Fast user switching: bob's session on seat0 comes to the front.
    bob="$(open_seat_session systest-display-bob bob user)" || return 1
    loginctl activate "$bob"
    wait_for 5 "bob's session to be active" test "$(active_session_of_seat)" = "$bob" || return 1
    evaluate_in_app_scope alice -
    [ "$EVAL_RC" != 0 ] || why "alice's app was let through while bob's session is in front" || return 1
    awk -v s="$EVAL_SECONDS" 'BEGIN { exit !(s < 3) }' || why "the refusal took ${EVAL_SECONDS}s (a scan was waited for?)" || return 1
    # Which error: on real logind polkitd refuses the evaluate action first
    # (allow_inactive=no) with PermissionDenied; the preflight, which polkit
    # does not guard, gets the service's NotAtTheReader. Both are what an
    # app expects of a Mac whose user switched away: LAError.biometryNotAvailable (-6).
    echo "$EVAL_OUT" | grep -q -E "PermissionDenied|NotAtTheReader" || why "the refusal is neither PermissionDenied nor NotAtTheReader: $EVAL_OUT" || return 1
    preflight="$(in_user_scope alice app-gnome-systest python3 /opt/systest/unlock.py --preflight 2>&1)"
    echo "app preflight, bob in front: $preflight" >&2
    case "$preflight" in "preflight: error -6 org.example.LocalAuth.Error."*) ;;
        *) why "the app's preflight behind bob's session is not biometryNotAvailable (-6): $preflight"; return 1 ;; esac

    loginctl activate "$alice"
    wait_for 5 "alice's session to be active again" test "$(active_session_of_seat)" = "$alice" || return 1
    evaluate_in_app_scope alice alice-right-index
    [ "$EVAL_RC" = 0 ] || why "alice's app was refused after switching back" || return 1
}


# gdm as it runs: one daemon in gdm.service forks the greeter's worker, which
# opens the greeter session (pam_systemd moves that worker into the session's
# scope; it stays the session's leader, the daemon its parent), and later a
# worker for the person's login, which stays in gdm.service, in no session,
# while it runs the login's auth stack. Here the daemon is a shell in
# gdm.service that starts session-holder.py as the greeter's worker and
# forks each command written to /run/systest-gdm.cmd as a login worker.
# Prints the greeter session's id.
start_gdm_with_greeter() {
    local id=""
    systemctl stop gdm 2>/dev/null; systemctl reset-failed gdm 2>/dev/null
    rm -f /run/systest-gdm.cmd /run/gdm.session; mkfifo /run/systest-gdm.cmd
    systemd-run --quiet --unit=gdm --service-type=exec -E SYSTEST_SESSION_FILE=/run/gdm.session \
        -E XDG_SEAT=seat0 -E XDG_SESSION_CLASS=greeter -E XDG_SESSION_TYPE=wayland -E XDG_SESSION_DESKTOP=systest \
        /bin/sh -c '/usr/bin/python3 /opt/systest/session-holder.py systest-display Debian-gdm &
                    while :; do read -r line < /run/systest-gdm.cmd || continue; /bin/sh -c "$line" & done' ||
        { why "systemd-run gdm failed"; return 1; }
    for _ in $(seq 100); do
        id="$(cat /run/gdm.session 2>/dev/null)"
        [ -n "$id" ] && break
        is_active gdm || break
        sleep 0.1
    done
    [ -n "$id" ] && [ "$id" != "?" ] || { journalctl -q -u gdm -o cat >&2; why "no greeter session (gdm)"; return 1; }
    echo "$id"
}

# Runs COMMAND as a login worker of the gdm daemon above (in gdm.service, in
# no session), its output to OUT and its exit status to OUT.rc; prints the
# pid of a process that lives as long as the worker runs (for feed).
gdm_worker() {  # OUT COMMAND...
    local out="$1"; shift
    rm -f "$out" "$out.rc"
    echo "$* </dev/null >$out 2>&1; echo \$? >$out.rc" > /run/systest-gdm.cmd
    ( end=$((EPOCHSECONDS + 60)); while [ ! -s "$out.rc" ] && [ "$EPOCHSECONDS" -lt "$end" ]; do sleep 0.1; done ) \
        </dev/null >/dev/null 2>&1 &
    echo $!
}
# Waits for the worker to end (its watcher is not this shell's child); its exit status.
gdm_worker_status() {  # OUT PID
    while kill -0 "$2" 2>/dev/null; do sleep 0.1; done
    cat "$1.rc" 2>/dev/null || echo 255
}

# gdm's worker: a greeter session (class greeter, gdm's account) is active on
# seat0; root in gdm's system service, in no session and in no user slice,
# runs the fingerprint PAM stack for alice before any session of hers exists.
# Right finger: success. Wrong finger: failure, and the lockout counts it.
scenario_greeter_worker_fingerprint_login() {
    local greeter out="$LOGS/gdm-worker.log" before pid rc
    ensure_enrolled alice alice-right-index || return 1
    reset_lockout alice
    greeter="$(start_gdm_with_greeter)" || return 1
    [ "$(active_session_of_seat)" = "$greeter" ] || why "the greeter session $greeter is not active on seat0" || return 1
    echo "greeter session $greeter: $(loginctl show-session "$greeter" -p Class -p Seat -p Active -p Remote -p Leader | paste -sd' ')" >&2
    pam_service systest-gdm-fingerprint
    local mark; mark=$(status_mark)
    pid=$(gdm_worker "$out" pamtester -v systest-gdm-fingerprint alice authenticate)
    feed "$pid" "$mark" alice-right-index 1
    rc=$(gdm_worker_status "$out" "$pid")
    cat "$out" >&2
    [ "$rc" = 0 ] && grep -q "successfully authenticated" "$out" || why "gdm's worker could not log alice in with her finger" || return 1

    before=$(lockout_count alice)
    local t0=$EPOCHSECONDS
    mark=$(status_mark)
    pid=$(gdm_worker "$out" pamtester -v systest-gdm-fingerprint alice authenticate)
    feed "$pid" "$mark" someone-else 3
    rc=$(gdm_worker_status "$out" "$pid")
    cat "$out" >&2
    module_log_since "$t0" pamtester >&2
    [ "$rc" != 0 ] && module_log_since "$t0" pamtester | grep -q "AuthenticationFailed" ||
        why "a wrong finger at the greeter did not fail with PAM_AUTH_ERR (AuthenticationFailed)" || return 1
    [ "$(lockout_count alice)" -gt "$before" ] || why "the lockout did not count the wrong finger ($before → $(lockout_count alice))" || return 1
    echo "lockout of alice: $before → $(lockout_count alice)" >&2

    # The same worker in another system service (not the greeter's) is not
    # at the reader, greeter or not: no scan is asked for.
    mark=$(status_mark)
    systemctl reset-failed systest-other 2>/dev/null
    systemd-run --quiet --unit=systest-other --wait --pipe pamtester -v systest-gdm-fingerprint alice authenticate </dev/null >"$out" 2>&1
    cat "$out" >&2
    grep -q "successfully authenticated" "$out" && { why "a root PAM host outside the greeter's service was let in"; return 1; }
    [ "$(status_mark)" = "$mark" ] || why "the service asked for a finger for a PAM host outside the greeter's service" || return 1
    reset_lockout alice
}

# gdm's fingerprint login through pam_fprintd, with localauth-fprintd serving
# fprintd's interface (gdm's gdm-fingerprint service): the same shapes as
# greeter-worker-fingerprint-login, through Debian's pam_fprintd. Right
# finger: success; wrong finger: failure, counted in the one lockout.
scenario_greeter_worker_fingerprint_login_through_pam_fprintd() {
    local out="$LOGS/gdm-fprintd-worker.log" rc before pid
    ensure_enrolled alice alice-right-index || return 1
    reset_lockout alice
    [ "$(status_of localauth-fprintd)" = installed ] || apt_quiet install "$(ls $DEBS/localauth-fprintd_*.deb)" || return 1
    systemctl stop localauthd
    start_gdm_with_greeter >/dev/null || return 1
    cat > /etc/pam.d/systest-gdm-fingerprint-fprintd <<'CONF'
auth     [success=done default=ignore] pam_fprintd.so max-tries=1 timeout=10 debug
auth     requisite pam_deny.so
account  required pam_permit.so
CONF
    pid=$(gdm_worker "$out" pamtester -v systest-gdm-fingerprint-fprintd alice authenticate)
    feed "$pid" 0 alice-right-index always
    rc=$(gdm_worker_status "$out" "$pid")
    cat "$out" >&2
    [ "$rc" = 0 ] && grep -q "successfully authenticated" "$out" || why "gdm's worker could not log alice in through pam_fprintd" || return 1
    before=$(lockout_count alice)
    pid=$(gdm_worker "$out" pamtester -v systest-gdm-fingerprint-fprintd alice authenticate)
    feed "$pid" 0 someone-else always
    rc=$(gdm_worker_status "$out" "$pid")
    cat "$out" >&2
    [ "$rc" != 0 ] || why "a wrong finger logged alice in through pam_fprintd" || return 1
    [ "$(lockout_count alice)" -gt "$before" ] || why "the lockout did not count pam_fprintd's failed match ($before → $(lockout_count alice))" || return 1
}

# fprintd's statuses for libfprint's errors and retries (docs/FPRINTD.md),
# checked against the suite's own fprintd: the same commands of the virtual
# reader during a pam_fprintd verify (gdm's worker, as above), once with
# localauthd --fprintd, once with Debian's fprintd; pam_fprintd logs each
# VerifyStatus. Ours are fprintd 1.94.5's everywhere; Debian 12's fprintd
# 1.94.2 says verify-unknown-error for TOO_HOT, and its libfprint (1.94.5)
# has no TOO_FAST (libfprint 1.94.7).
fprintd_results() {  # SOCKET COMMAND: the VerifyStatus results pam_fprintd saw
    local out="$LOGS/fprintd-results.log" pid cursor
    cursor="$(journalctl -n0 --show-cursor -q | sed -n 's/^-- cursor: //p')"
    logged() { journalctl -q --after-cursor="$cursor" -o cat -t pamtester; }
    pid=$(gdm_worker "$out" pamtester -v systest-gdm-fingerprint-fprintd alice authenticate)
    wait_for 10 "VerifyStart" sh -c "journalctl -q --after-cursor='$cursor' -o cat -t pamtester | grep -q 'VerifyStart completed'"
    vfp "$1" "$2"
    case "$2" in RETRY*) wait_for 5 "the retry" sh -c "journalctl -q --after-cursor='$cursor' -o cat -t pamtester | grep -q '(done: 0)'"
                         vfp "$1" SCAN alice-right-index ;; esac
    gdm_worker_status "$out" "$pid" >/dev/null
    echo "$2: $(grep '^pamtester:' "$out" | tail -n1)" >&2
    logged | sed -n 's/.*Verify result: \([a-z-]*\) .*/\1/p' | paste -sd' '
}
scenario_fprintd_statuses_are_debians() {
    local commands=("ERROR 5" "ERROR 7") ours=() theirs=() expect_ours expect_theirs i fprintd_version bad=""
    dpkg --compare-versions "$(dpkg-query -W -f='${Version}' libfprint-2-2)" ge 1:1.94.7 && commands+=("RETRY 4")
    commands+=("ERROR 257")  # last: the reader is then taken as cooling down
    ensure_enrolled alice alice-right-index || return 1
    reset_lockout alice
    [ "$(status_of localauth-fprintd)" = installed ] || apt_quiet install "$(ls $DEBS/localauth-fprintd_*.deb)" || return 1
    systemctl stop localauthd
    start_gdm_with_greeter >/dev/null || return 1
    printf 'auth [success=done default=ignore] pam_fprintd.so max-tries=1 timeout=10 debug\nauth requisite pam_deny.so\naccount required pam_permit.so\n' \
        > /etc/pam.d/systest-gdm-fingerprint-fprintd
    for i in "${!commands[@]}"; do ours[i]="$(fprintd_results "$VFP" "${commands[i]}")"; done
    systemctl stop localauthd
    apt_quiet install fprintd || return 1
    fprintd_version="$(dpkg-query -W -f='${Version}' fprintd)"
    for i in "${!commands[@]}"; do theirs[i]="$(fprintd_results "$FPRINTD_VFP" "${commands[i]}")"; done
    systemctl stop fprintd
    reset_lockout alice
    for i in "${!commands[@]}"; do
        case "${commands[i]}" in
            "ERROR 5") expect_ours=verify-disconnected expect_theirs=verify-disconnected ;;        # PROTO
            "ERROR 7") expect_ours=verify-no-match expect_theirs=verify-no-match ;;                # DATA_NOT_FOUND
            "ERROR 257") expect_ours=verify-disconnected expect_theirs=verify-disconnected         # TOO_HOT
                dpkg --compare-versions "$fprintd_version" ge 1.94.5 || expect_theirs=verify-unknown-error ;;
            "RETRY 4") expect_ours="verify-too-fast verify-match" expect_theirs="verify-too-fast verify-match" ;;
        esac
        echo "${commands[i]}: localauthd --fprintd '${ours[i]}', Debian's fprintd $fprintd_version '${theirs[i]}'" >&2
        [ "${theirs[i]}" = "$expect_theirs" ] || bad="${commands[i]}: Debian's fprintd $fprintd_version said '${theirs[i]}', docs/FPRINTD.md says '$expect_theirs'"
        [ "${ours[i]}" = "$expect_ours" ] || bad="${commands[i]}: localauthd --fprintd said '${ours[i]}', fprintd 1.94.5 says '$expect_ours'"
    done
    [ -z "$bad" ] || why "$bad" || return 1
    figure "fprintd $fprintd_version: ${#commands[@]} commands"
}

# logind away: the service cannot tell who is at the reader, so it must fail
# closed: alice's app in her (formerly active) display session is refused
# without a scan while systemd-logind is stopped (masked, so the bus cannot
# start it again), and works again once logind is back.
scenario_logind_away_fails_closed() {
    ensure_enrolled alice alice-right-index || return 1
    reset_lockout alice
    local sid
    sid="$(open_seat_session systest-display-alice alice user)" || return 1
    systemctl stop localauthd
    systemctl mask --runtime systemd-logind >/dev/null 2>&1
    systemctl stop systemd-logind
    local calls
    watch_verify_user "$LOGS/logind-away-verify.log"
    evaluate_in_app_scope alice alice-right-index
    calls=$(verify_user_calls "$LOGS/logind-away-verify.log")
    systemctl unmask --runtime systemd-logind >/dev/null 2>&1
    systemctl start systemd-logind
    journalctl -q -u localauthd --since "-60s" -o cat | grep -i logind >&2
    [ "$EVAL_RC" != 0 ] || why "with logind stopped, alice's app was given a scan and passed (callers counted as local)" || return 1
    systemctl stop localauthd
    wait_for 10 "logind back" busctl --system status org.freedesktop.login1 || return 1
    # A restarted logind reads its sessions back from /run/systemd, but here
    # (a container: no VTs) it does not make any of them seat0's active one
    # again, so polkitd's allow_active refuses them all: a real logind's
    # answer, not ours. The session the person opens next is active.
    echo "after logind's restart, session $sid: Active=$(loginctl show-session "$sid" -P Active)," \
        "seat0's active session: '$(active_session_of_seat)'" >&2
    close_seat_session systest-display-alice
    sid="$(open_seat_session systest-display-alice alice user)" || return 1
    wait_for 10 "alice's new session $sid active" sh -c "[ \"\$(loginctl show-session $sid -P Active)\" = yes ]" || return 1
    evaluate_in_app_scope alice alice-right-index
    [ "$EVAL_RC" = 0 ] || why "alice's app was refused after logind came back" || return 1
}

# The sheet's agent, started as our package starts it (its user unit,
# localauth-prompt.service, in USER's user@UID.service) on an X server of its
# own. Prints the agent's bus name once the service logged its registration.
start_agent() {  # USER DISPLAY-NUMBER SINCE
    local user="$1" n="$2" since="$3" uid name
    uid="$(uid_of "$user")"
    systemctl stop "xvfb-$user" 2>/dev/null; systemctl reset-failed "xvfb-$user" 2>/dev/null
    systemd-run --quiet --unit="xvfb-$user" Xvfb ":$n" -ac -nolisten tcp -screen 0 800x600x24 || return 1
    wait_for 10 "Xvfb :$n" test -S "/tmp/.X11-unix/X$n" || return 1
    setpriv --reuid="$uid" --regid="$(id -g "$user")" --init-groups --reset-env \
        env HOME="/home/$user" PATH=/usr/bin:/bin XDG_RUNTIME_DIR="/run/user/$uid" \
        sh -c "systemctl --user set-environment DISPLAY=:$n && systemctl --user restart localauth-prompt.service" ||
        why "systemctl --user start localauth-prompt.service as $user failed" || return 1
    for _ in $(seq 100); do
        name="$(journalctl -q -u localauthd --since "@$since" -o cat | sed -n "s/^prompt agent \(:[0-9.]*\) registered for uid $uid .*/\1/p" | tail -n1)"
        [ -n "$name" ] && break
        sleep 0.1
    done
    [ -n "$name" ] || { journalctl -q --since "@$since" -o cat _UID="$uid" | tail -n 20 >&2; why "$user's agent did not register"; return 1; }
    journalctl -q -u localauthd --since "@$since" -o cat | grep "prompt agent $name registered" >&2
    echo "$name"
}

# The sheet's agent of each person registers for that person's display
# session (GNOME's shape: the user unit under user@UID.service, judged by the
# user's Display session); the sheet of an evaluation goes to the agent of
# the person in front, never to the other's.
scenario_prompt_agent_follows_the_active_display_session() {
    local alice bob alice_agent bob_agent since=$EPOCHSECONDS
    ensure_enrolled alice alice-right-index || return 1
    ensure_enrolled bob bob-right-index || return 1
    reset_lockout alice; reset_lockout bob
    alice="$(open_seat_session systest-display-alice alice user)" || return 1
    alice_agent="$(start_agent alice 11 "$since")" || return 1
    # The service names the session by its logind path (the id escaped: "175" → "_3175"; "c17" as it is).
    journalctl -q -u localauthd --since "@$since" -o cat | grep "prompt agent $alice_agent registered" | grep -q -F "$(session_path "$alice"))" ||
        why "alice's agent is not registered for her display session $alice" || return 1
    bob="$(open_seat_session systest-display-bob bob user)" || return 1
    loginctl activate "$bob"
    wait_for 5 "bob's session in front" test "$(active_session_of_seat)" = "$bob" || return 1
    bob_agent="$(start_agent bob 12 "$since")" || return 1
    [ "$bob_agent" != "$alice_agent" ] || why "one agent for both" || return 1
    local t1=$EPOCHSECONDS
    evaluate_in_app_scope bob bob-right-index
    [ "$EVAL_RC" = 0 ] || why "bob's app in front was refused" || return 1
    journalctl -q -u localauthd --since "@$t1" -o cat | grep "shown by" >&2
    journalctl -q -u localauthd --since "@$t1" -o cat | grep -q "of uid $(uid_of bob) shown by $bob_agent" ||
        why "bob's sheet was not shown by bob's agent" || return 1
    ! journalctl -q -u localauthd --since "@$t1" -o cat | grep -q "shown by $alice_agent" ||
        why "alice's agent was asked while bob is in front" || return 1
    # Back to alice: her agent shows her app's sheet.
    loginctl activate "$alice"
    wait_for 5 "alice's session in front" test "$(active_session_of_seat)" = "$alice" || return 1
    t1=$EPOCHSECONDS
    evaluate_in_app_scope alice alice-right-index
    [ "$EVAL_RC" = 0 ] || why "alice's app was refused after switching back" || return 1
    journalctl -q -u localauthd --since "@$t1" -o cat | grep -q "of uid $(uid_of alice) shown by $alice_agent" ||
        why "alice's sheet was not shown by alice's agent" || return 1
}

# sshd's own PAM: root in ssh.service, no session, PAM_RHOST=127.0.0.1 (a
# loopback connection, as through a port-forward), pam_localauth first in
# /etc/pam.d/sshd, and alice's display session active on seat0 (the person
# may be at the machine; the login is not). The password login works and no
# VerifyUser ever reaches the bus.
scenario_sshd_own_pam_never_scans() {
    local t0 calls
    ensure_enrolled alice alice-right-index || return 1
    open_seat_session systest-display-alice alice user >/dev/null || return 1
    enable_module_in sshd || return 1
    systemctl restart ssh || why "ssh.service does not start" || return 1
    t0=$EPOCHSECONDS
    watch_verify_user "$LOGS/sshd-verify.log"
    ssh_password alice alice-password 'echo LOGGED-IN' >"$LOGS/sshd-login.log" 2>&1
    local rc=$?
    calls=$(verify_user_calls "$LOGS/sshd-verify.log")
    cat "$LOGS/sshd-login.log" >&2
    module_log_since "$t0" sshd >&2
    [ $rc = 0 ] && grep -q LOGGED-IN "$LOGS/sshd-login.log" || why "the SSH password login failed" || return 1
    [ "$calls" = 0 ] || why "sshd's PAM asked localauthd for a fingerprint ($calls VerifyUser, PAM_RHOST=127.0.0.1)" || return 1
    module_log_since "$t0" sshd | grep -q "remote login: no fingerprint" || why "pam_localauth did not log the remote login" || return 1

    # The service's own rule, for a module that does not look at PAM_RHOST:
    # pam_exec in sshd's stack runs a VerifyUser as root from sshd's PAM
    # process (in ssh.service, in no session, before any session exists).
    # The service must refuse it at once, with no scan.
    cat > /run/systest-verify-probe <<'PROBE'
#!/bin/sh
busctl --system --timeout=8 call org.example.LocalAuth /org/example/LocalAuth org.example.LocalAuth \
    VerifyUser sa{sv} "$PAM_USER" 0 >/run/systest-verify-probe.out 2>&1
echo "rc=$? cgroup=$(grep '^0::' /proc/self/cgroup)" >>/run/systest-verify-probe.out
PROBE
    chmod 0755 /run/systest-verify-probe; rm -f /run/systest-verify-probe.out
    sed -i '0,/^auth \[success=done default=ignore\] pam_localauth.so/s//auth optional pam_exec.so quiet \/run\/systest-verify-probe\n&/' /etc/pam.d/sshd
    local mark; mark=$(status_mark)
    ssh_password alice alice-password 'echo LOGGED-IN' >"$LOGS/sshd-login2.log" 2>&1
    sed -i '/systest-verify-probe/d' /etc/pam.d/sshd
    cat /run/systest-verify-probe.out >&2
    grep -q "rc=" /run/systest-verify-probe.out || why "pam_exec did not run the probe in sshd's PAM" || return 1
    grep -q "system.slice/ssh.service" /run/systest-verify-probe.out || echo "NOTE: the probe did not run in ssh.service's cgroup" >&2
    [ "$(status_mark)" = "$mark" ] || why "the service started a scan for sshd's own PAM (root in ssh.service, no session)" || return 1
    grep -q -E "not at the reader|NotAtTheReader|no session on a seat" /run/systest-verify-probe.out ||
        why "the service did not refuse VerifyUser from sshd's PAM as not at the reader" || return 1
}

# sudo inside a real SSH session (key login, the session remote in logind),
# pam_localauth first in /etc/pam.d/sudo, alice's display session active on
# seat0: no scan, and the password follows at once: under 100 ms from
# pam_sm_authenticate's start to its return, as the module logs it.
scenario_sudo_in_ssh_session_falls_to_password() {
    local t0 ms
    ensure_enrolled alice alice-right-index || return 1
    open_seat_session systest-display-alice alice user >/dev/null || return 1
    enable_module_in sudo || return 1
    systemctl start ssh || return 1
    t0=$EPOCHSECONDS
    watch_verify_user "$LOGS/sudo-ssh-verify.log"
    ssh_key alice 'loginctl show-session $XDG_SESSION_ID -p Remote -p Class -p Seat | paste -sd" "; echo alice-password | sudo -S -k -p "" -v && echo SUDO-OK' \
        >"$LOGS/sudo-ssh.log" 2>&1
    local rc=$? calls; calls=$(verify_user_calls "$LOGS/sudo-ssh-verify.log")
    cat "$LOGS/sudo-ssh.log" >&2
    module_log_since "$t0" sudo >&2
    [ $rc = 0 ] && grep -q SUDO-OK "$LOGS/sudo-ssh.log" || why "sudo with the password failed in the SSH session" || return 1
    ms="$(module_log_since "$t0" sudo | sed -n 's/.*authenticate alice: .* after \([0-9.]*\) ms.*/\1/p' | tail -n1)"
    [ -n "$ms" ] || why "pam_localauth logged no authenticate time for sudo" || return 1
    module_log_since "$t0" sudo | grep "authenticate alice:" | grep -q -v "Success" || why "the fingerprint succeeded inside an SSH session" || return 1
    echo "pam_sm_authenticate in sudo over SSH: $ms ms, $calls VerifyUser" >&2
    figure "pam_sm_authenticate ${ms} ms, then the password"
    awk -v m="$ms" 'BEGIN { exit !(m < 100) }' || why "the module took $ms ms before the password (limit 100 ms)" || return 1
}

# The SSH user (key login) runs `systemd-run --user --scope sudo -v` while
# her own display session is active on seat0: the process now sits in a
# scope of her user manager, exactly where GNOME Terminal's tabs sit, and is
# judged by her display session, as polkit judges it. Decided: allowed
# (docs/SECURITY.md, "A scope started from an SSH login"): the finger at the
# reader of her active local session answers. This scenario shows the
# decision; were it changed to a refusal, it would have to change with it.
scenario_ssh_user_scope_sudo_is_judged_by_the_display_session() {
    ensure_enrolled alice alice-right-index || return 1
    reset_lockout alice
    open_seat_session systest-display-alice alice user >/dev/null || return 1
    enable_module_in sudo || return 1
    systemctl start ssh || return 1
    local t0=$EPOCHSECONDS
    local mark; mark=$(status_mark)
    ssh_key alice 'systemd-run --user --scope --quiet sudo -S -k -p "" -v </dev/null && echo SUDO-OK' >"$LOGS/ssh-scope-sudo.log" 2>&1 &
    local pid=$!
    feed "$pid" "$mark" alice-right-index 1
    wait "$pid"; local rc=$?
    cat "$LOGS/ssh-scope-sudo.log" >&2
    module_log_since "$t0" sudo >&2
    [ $rc = 0 ] && grep -q SUDO-OK "$LOGS/ssh-scope-sudo.log" || why "sudo in a scope started over SSH did not take the finger at the reader" || return 1
    module_log_since "$t0" sudo | grep -q "authenticate alice: Success" || why "the module did not report the fingerprint's success" || return 1
}

# GNOME Terminal's shape: sudo in a vte-spawn scope of alice's user manager
# while her display session is active on seat0: the finger answers.
scenario_terminal_scope_sudo_gets_fingerprint() {
    ensure_enrolled alice alice-right-index || return 1
    reset_lockout alice
    open_seat_session systest-display-alice alice user >/dev/null || return 1
    enable_module_in sudo || return 1
    local mark; mark=$(status_mark)
    in_user_scope alice vte-spawn sudo -S -k -p "" -v </dev/null >"$LOGS/terminal-sudo.log" 2>&1 &
    local pid=$!
    feed "$pid" "$mark" alice-right-index 1
    wait "$pid"; local rc=$?
    cat "$LOGS/terminal-sudo.log" >&2
    [ $rc = 0 ] || why "sudo in alice's terminal scope did not take her finger" || return 1
}

# A touch belongs to whoever is in front when the finger is read (issue 37):
# bob is in front and runs `su alice` in his terminal (a vte-spawn scope of
# his user manager; pam_localauth first in /etc/pam.d/su). The control: with
# no switch her finger answers it, as it should (the reader cannot tell whose
# finger it is). Then the attack: the su waits for a finger, alice's session
# is brought to the front (`loginctl activate`, a real switch on seat0) and
# she touches: the su must not pass, and the service says why. On c686a26
# her touch answered the queued VerifyUser and bob got a shell as alice.
# localauthd's journal after CURSOR. Not `-u` with `--after-cursor`: that
# pair sometimes printed nothing on systemd 252 (seen with -t as well).
service_log_after() { journalctl -q --no-pager -o short --after-cursor="$1" | grep ' localauthd\[' | cut -d: -f4- ; }
asked_since() { [ "$(status_mark)" -gt "$1" ]; }  # MARK: the service asked for a finger since
is_seat_active() { [ "$(active_session_of_seat)" = "$1" ]; }
su_in_bobs_terminal() {  # OUT
    in_user_scope bob vte-spawn su alice -c 'echo SU-OK' </dev/null >"$1" 2>&1
}
scenario_su_switched_away_gets_no_touch() {
    ensure_enrolled alice alice-right-index || return 1
    reset_lockout alice
    enable_module_in su || return 1
    local alice bob mark pid rc cursor
    alice="$(open_seat_session systest-display-alice alice user)" || return 1
    bob="$(open_seat_session systest-display-bob bob user)" || return 1
    wait_for 20 "user@$(uid_of bob).service" is_active "user@$(uid_of bob).service" || return 1
    loginctl activate "$bob"
    wait_for 5 "bob's session to be active" is_seat_active "$bob" || return 1

    mark=$(status_mark)
    su_in_bobs_terminal "$LOGS/su-control.log" &
    pid=$!
    feed "$pid" "$mark" alice-right-index 1
    wait "$pid"; rc=$?
    cat "$LOGS/su-control.log" >&2
    [ $rc = 0 ] && grep -q SU-OK "$LOGS/su-control.log" || why "the control failed: su alice with her finger and no switch" || return 1

    # The journal from here on only (the control's "verified" stays out).
    cursor="$(journalctl -n0 --show-cursor -q | sed -n 's/^-- cursor: //p')"
    mark=$(status_mark)
    su_in_bobs_terminal "$LOGS/su-switch.log" &
    pid=$!
    wait_for 10 "su's VerifyUser to ask for a finger" asked_since "$mark" ||
        { cat "$LOGS/su-switch.log" >&2; journalctl -q --no-pager -o cat --after-cursor="$cursor" | tail -n 30 >&2; return 1; }
    loginctl activate "$alice"
    wait_for 5 "alice's session to be active" is_seat_active "$alice" || return 1
    # She touches, and touches again while the su runs.
    feed "$pid" "$(status_mark)" alice-right-index always
    wait "$pid"; rc=$?
    cat "$LOGS/su-switch.log" >&2
    service_log_after "$cursor" | grep -E "at the reader|thrown away|verified" >&2
    ! grep -q SU-OK "$LOGS/su-switch.log" || why "alice's touch after the switch gave bob a shell as alice" || return 1
    [ $rc != 0 ] || why "su passed after the switch" || return 1
    service_log_after "$cursor" | grep -q -E "no longer at the reader|was thrown away|not at the reader" ||
        why "the service logged no presence refusal for the switched-away su" || return 1
    ! service_log_after "$cursor" | grep -q "verified for a PAM module" ||
        why "the service verified a PAM module's call after the switch" || return 1
}

# The service's messages reach the journal with their priorities: five
# wrong fingers from alice's app lock biometry out (a warning), each failed
# match is a notice; `journalctl -u localauthd -p warning` shows the first
# and not the second.
scenario_journal_priorities() {
    ensure_enrolled alice alice-right-index || return 1
    reset_lockout alice
    open_seat_session systest-display-alice alice user >/dev/null || return 1
    local since=$EPOCHSECONDS
    for _ in 1 2; do
        local mark; mark=$(status_mark)
        in_user_scope alice app-gnome-systest localauthctl evaluate --reason "journal" >"$LOGS/journal-eval.log" 2>&1 &
        local pid=$!
        feed "$pid" "$mark" someone-else 3
        wait "$pid"
        cat "$LOGS/journal-eval.log" >&2
    done
    [ "$(lockout_count alice)" -ge 5 ] || why "five wrong fingers did not lock alice out (count $(lockout_count alice))" || return 1
    journalctl -q -u localauthd --since "@$since" -p warning -o cat >"$LOGS/journal-warning.log"
    journalctl -q -u localauthd --since "@$since" -o json --output-fields=PRIORITY,MESSAGE >"$LOGS/journal-all.log"
    cat "$LOGS/journal-warning.log" >&2
    grep -q "biometry locked out for uid $(uid_of alice)" "$LOGS/journal-warning.log" || why "the lockout warning is not in journalctl -p warning" || return 1
    grep -q '"PRIORITY":"5"' "$LOGS/journal-all.log" || why "no notice-level message from localauthd" || return 1
    python3 -c 'import json,sys; rows=[json.loads(l) for l in open(sys.argv[1])]; bad=[r["MESSAGE"] for r in rows if r.get("MESSAGE","").startswith("<")]; sys.exit("priority prefixes left in messages: %s" % bad[:3] if bad else 0)' "$LOGS/journal-all.log" || why "journald did not parse the <N> priority prefixes" || return 1
    reset_lockout alice
}

# fprintd's fingers of USER through net.reactivated.Fprint (whoever serves it:
# Debian's fprintd or localauthd --fprintd), as GNOME Settings asks.
fprint_fingers() {  # USER
    local device
    device="$(gdbus call --system --dest net.reactivated.Fprint --object-path /net/reactivated/Fprint/Manager \
        --method net.reactivated.Fprint.Manager.GetDefaultDevice | sed -n "s/^(objectpath '\(.*\)',)$/\1/p")"
    [ -n "$device" ] || { echo "no fprint device"; return 1; }
    gdbus call --system --dest net.reactivated.Fprint --object-path "$device" \
        --method net.reactivated.Fprint.Device.ListEnrolledFingers "$1"
}
status_of() { dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || echo not-installed; }
apt_quiet() { DEBIAN_FRONTEND=noninteractive apt-get -y -q --no-install-recommends "$@" >>"$LOGS/apt-swap.log" 2>&1 ||
    { tail -n 25 "$LOGS/apt-swap.log" >&2; why "apt-get $* failed"; }; }

# Debian's fprintd enrolls a finger (fprintd-enroll, fed by the reader until
# it says enroll-completed).
fprintd_enroll() {  # USER FINGER NAME
    local log="$LOGS/fprintd-enroll-$1.log" pid sent=0 passed
    fprintd-enroll -f "$2" "$1" >"$log" 2>&1 &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        passed=$(grep -c -E "enroll-stage-passed|Enrolling" "$log" 2>/dev/null || true)
        if [ "${passed:-0}" -gt "$sent" ]; then vfp "$FPRINTD_VFP" SCAN "$3" || break; sent=$((sent + 1)); fi
        sleep 0.05
    done
    wait "$pid"; cat "$log" >&2
    grep -q enroll-completed "$log" || why "fprintd-enroll $1 $2 did not complete"
}

# The package that replaces fprintd, next to libpam-fprintd, as apt resolves
# it; prints survive a switch to Debian's fprintd and back; then everything
# of ours is purged and leaves no file, no user, no process, no PAM line.
scenario_fprintd_swap_and_purge() {
    local fingers
    if [ "$(status_of localauth-fprintd)" = installed ]; then
        systemctl stop localauthd; apt_quiet install fprintd || return 1
    fi
    [ "$(status_of fprintd)" = installed ] && [ "$(status_of libpam-fprintd)" = installed ] ||
        why "the root has no fprintd + libpam-fprintd to start from" || return 1
    # Debian's fprintd enrolls bob's right index finger.
    systemctl stop localauthd
    fprintd_enroll bob right-index-finger bob-right-index || return 1
    systemctl stop fprintd

    # localauth-fprintd in: fprintd out (Conflicts/Replaces), libpam-fprintd stays (Provides).
    apt_quiet install "$(ls $DEBS/localauth-fprintd_*.deb)" || return 1
    [ "$(status_of localauth-fprintd)" = installed ] || why "localauth-fprintd is not installed" || return 1
    [ "$(status_of fprintd)" != installed ] || why "fprintd is still installed beside localauth-fprintd" || return 1
    [ "$(status_of libpam-fprintd)" = installed ] || why "libpam-fprintd went with fprintd" || return 1
    ! command -v fprintd-list >/dev/null || why "fprintd-list is still there" || return 1
    fingers="$(fprint_fingers bob 2>&1)"; echo "bob's fingers through localauthd --fprintd: $fingers" >&2
    echo "$fingers" | grep -q right-index-finger || why "bob's fprintd print is not seen by localauthd --fprintd: $fingers" || return 1
    # net.reactivated.Fprint activated the same unit, with --fprintd.
    is_active localauthd || why "the gdbus call did not start localauthd.service" || return 1
    tr '\0' ' ' </proc/"$(systemctl show -P MainPID localauthd)"/cmdline | grep -q -- --fprintd ||
        why "localauthd.service does not run --fprintd" || return 1
    ! systemctl is-active -q fprintd || why "Debian's fprintd.service runs too" || return 1
    # localauthd enrolls bob's left index finger into fprintd's store.
    localauthctl enroll left-index-finger --user bob >"$LOGS/enroll-bob-left.log" 2>&1 &
    local pid=$! sent=0 asked
    while kill -0 "$pid" 2>/dev/null; do
        asked=$(grep -c -E "$ENROLL_ASKS" "$LOGS/enroll-bob-left.log" 2>/dev/null || true)
        if [ "${asked:-0}" -gt "$sent" ]; then vfp "$VFP" SCAN bob-left-index || break; sent=$((sent + 1)); fi
        sleep 0.05
    done
    wait "$pid" || { cat "$LOGS/enroll-bob-left.log" >&2; why "localauthctl enroll --user bob (fprintd mode) failed"; return 1; }
    systemctl stop localauthd

    # Back to Debian's fprintd (from apt's cache: the container has no network).
    apt_quiet install fprintd || return 1
    [ "$(status_of fprintd)" = installed ] && [ "$(status_of localauth-fprintd)" != installed ] ||
        why "installing fprintd did not replace localauth-fprintd" || return 1
    fingers="$(fprintd-list bob 2>&1)"; echo "fprintd-list bob: $fingers" >&2
    echo "$fingers" | grep -q right-index-finger && echo "$fingers" | grep -q left-index-finger ||
        why "Debian's fprintd lost a print after the switch back: $fingers" || return 1
    systemctl stop fprintd

    # And localauth-fprintd once more: both prints still there.
    apt_quiet install "$(ls $DEBS/localauth-fprintd_*.deb)" || return 1
    fingers="$(fprint_fingers bob 2>&1)"
    echo "$fingers" | grep -q right-index-finger && echo "$fingers" | grep -q left-index-finger ||
        why "localauthd --fprintd lost a print on the second switch: $fingers" || return 1

    # Purge: with the pam-auth-update profile on, and the service running.
    sed -i '/pam_localauth/d' /etc/pam.d/sudo /etc/pam.d/sshd /etc/pam.d/su
    rm -f /etc/pam.d/systest-gdm-fingerprint /etc/pam.d/systest-gdm-fingerprint-fprintd
    pam-auth-update --package --enable localauth || why "pam-auth-update --enable localauth failed" || return 1
    grep -q pam_localauth /etc/pam.d/common-auth || why "the localauth profile is not in common-auth" || return 1
    busctl --system call org.example.LocalAuth $OBJ $IFACE CanEvaluatePolicy u 1 >/dev/null 2>&1
    local files; files="$(dpkg -L localauthd localauth-prompt libpam-localauth localauth-tools localauth-fprintd liblocalauth-1-0 gir1.2-localauth-1.0 | sort -u)"
    local users_before; users_before="$(getent passwd | cut -d: -f1 | sort)"
    apt_quiet purge localauth-fprintd localauthd localauth-prompt libpam-localauth localauth-tools liblocalauth-1-0 gir1.2-localauth-1.0 || return 1
    local left=""
    while read -r f; do
        [ -n "$f" ] && [ ! -d "$f" ] && { [ -e "$f" ] || [ -L "$f" ]; } && left="$left $f"
    done <<<"$files"
    [ -z "$left" ] || why "files left after purge:$left" || return 1
    [ ! -e /var/lib/localauth ] || why "/var/lib/localauth is left after purge" || return 1
    ! pgrep -x localauthd >/dev/null || why "localauthd still runs after purge (pid $(pgrep -x localauthd))" || return 1
    ! pgrep -f /usr/libexec/localauth-prompt >/dev/null || why "localauth-prompt still runs after purge" || return 1
    ! grep -rl pam_localauth /etc/pam.d >/dev/null || why "PAM still names pam_localauth: $(grep -rl pam_localauth /etc/pam.d)" || return 1
    [ "$(getent passwd | cut -d: -f1 | sort)" = "$users_before" ] || why "the accounts changed with the purge" || return 1
    ! getent passwd | grep -qi localauth || why "an account of ours is left" || return 1
    systemctl cat localauthd.service >/dev/null 2>&1 && why "systemd still knows localauthd.service" && return 1
    # The person's prints are fprintd's, not ours: Debian's fprintd, installed
    # again, still has both.
    apt_quiet install fprintd libpam-fprintd || return 1
    fingers="$(fprintd-list bob 2>&1)"
    echo "$fingers" | grep -q right-index-finger && echo "$fingers" | grep -q left-index-finger ||
        why "bob's prints went with the purge: $fingers" || return 1
    echo "purge left nothing; fprintd-list bob: $fingers" >&2
}


# The login keyring (docs/KEYRING.md), with the real gnome-keyring-daemon on
# alice's session bus and the real pam_gnome_keyring: alice turns it on in
# her display session (localauthctl keyring enable, her login password once),
# locks the keyring; gdm's worker then logs her in with her finger, and the
# keyring opens with no prompt (secret-tool returns the item stored before);
# locked again, a password login opens it too; a wrong finger does not, and
# counts toward the lockout; disable gives the keyring its password back.
keyring_in_alice_scope() { in_user_scope alice app-gnome-systest sh -c "$1"; }
# Runs COMMAND as USER in a user scope with polkit's own text agent
# (pkttyagent) registered for it on a pseudo-terminal, typing PASSWORD at
# every password prompt (localauthctl's, then the agent's): turning the
# login secret on or off is auth_self (org.example.LocalAuth.keyring), so
# polkit asks the person, as GNOME's agent would.
with_polkit_agent() {  # USER PASSWORD COMMAND...
    local user="$1" password="$2"; shift 2
    in_user_scope "$user" app-gnome-systest python3 -c '
import os, pty, select, signal, subprocess, sys, termios, time
password, command = sys.argv[1].encode(), sys.argv[2:]
pid, fd = pty.fork()
if pid == 0:
    # The agent for this very process; exec keeps the pid polkit knows it by.
    r, w = os.pipe()
    subprocess.Popen(["pkttyagent", "--process", str(os.getpid()), "--notify-fd", str(w)], pass_fds=[w])
    os.close(w); os.read(r, 1); os.close(r)
    os.execvp(command[0], command)
seen, answered, status, end = b"", 0, None, time.monotonic() + 120
while status is None and time.monotonic() < end:
    if select.select([fd], [], [], 0.1)[0]:
        try:
            data = os.read(fd, 4096)
        except OSError:
            data = b""
        sys.stdout.buffer.write(data); sys.stdout.flush(); seen += data
    while seen.count(b"assword:") > answered:
        # Both prompts turn echo off with TCSAFLUSH, which drops what was typed before.
        deadline = time.monotonic() + 10
        while termios.tcgetattr(fd)[3] & termios.ECHO and time.monotonic() < deadline:
            time.sleep(0.01)
        os.write(fd, password + b"\n"); answered += 1
    done, code = os.waitpid(pid, os.WNOHANG)
    if done:
        status = os.waitstatus_to_exitcode(code)
try:
    os.killpg(pid, signal.SIGTERM)   # the agent outlives the command (and dumps core on EOF before polkit 125)
except ProcessLookupError:
    pass
sys.exit(124 if status is None else status if status >= 0 else 128 - status)
' "$password" "$@"
}
keyring_item() { keyring_in_alice_scope 'timeout 5 secret-tool lookup systest item' 2>/dev/null; }
# Locks the login keyring through the Secret Service (secret-tool lock crashes in bookworm's libsecret-tools).
keyring_lock() {
    keyring_in_alice_scope "gdbus call --session --dest org.freedesktop.secrets --object-path /org/freedesktop/secrets \
        --method org.freedesktop.Secret.Service.Lock \"['/org/freedesktop/secrets/collection/login']\"" >/dev/null
}
# gdm's login worker (gdm_worker: in gdm.service, in no session) runs
# pamtester for alice through SERVICE, with her runtime directory
# (pam_gnome_keyring's control socket) and STDIN; prints the watcher's pid.
keyring_worker() {  # OUT SERVICE [STDIN]
    printf '#!/bin/sh\nprintf "%%s\\n" "%s" | XDG_RUNTIME_DIR=/run/user/%s exec pamtester -v %s alice authenticate\n' \
        "${3:-}" "$(uid_of alice)" "$2" > /run/systest-keyring-login
    chmod 0700 /run/systest-keyring-login
    gdm_worker "$1" /run/systest-keyring-login
}
scenario_login_keyring_opens_with_the_finger_and_the_password() {
    local display greeter pid rc before package
    # After fprintd-swap-and-purge: our packages back, as apt installs them.
    for package in localauthd localauth-tools libpam-localauth; do
        [ "$(status_of $package)" = installed ] || apt_quiet install "$(ls $DEBS/${package}_*.deb)" || return 1
    done
    ensure_enrolled alice alice-right-index || return 1
    reset_lockout alice
    display="$(open_seat_session systest-display-alice alice user)" || return 1
    wait_for 20 "user@$(uid_of alice).service" is_active "user@$(uid_of alice).service" || return 1
    keyring_in_alice_scope 'rm -rf ~/.local/share/keyrings
        printf %s alice-password | gnome-keyring-daemon --replace --unlock --components=secrets >/dev/null
        printf stored-before | secret-tool store --label=systest systest item' || why "no login keyring for alice" || return 1
    [ "$(keyring_item)" = stored-before ] || why "the item is not there before enabling" || return 1
    with_polkit_agent alice alice-password localauthctl keyring enable >&2 || why "localauthctl keyring enable failed" || return 1
    keyring_in_alice_scope 'localauthctl keyring status' >&2
    keyring_lock || why "could not lock the keyring" || return 1
    [ -z "$(keyring_item)" ] || why "the locked keyring still gave the item" || return 1

    cat > /etc/pam.d/systest-gdm-keyring <<'CONF'
auth     [success=1 default=ignore] pam_localauth.so timeout=10 debug
auth     requisite pam_deny.so
auth     optional pam_localauth.so keyring-authtok debug
auth     optional pam_gnome_keyring.so
auth     optional pam_localauth.so keyring-restore
account  required pam_permit.so
CONF
    local out="$LOGS/keyring-worker.log"
    greeter="$(start_gdm_with_greeter)" || return 1
    loginctl activate "$greeter"
    wait_for 5 "the greeter to be active" test "$(active_session_of_seat)" = "$greeter" || return 1
    local mark; mark=$(status_mark)
    pid=$(keyring_worker "$out" systest-gdm-keyring)
    feed "$pid" "$mark" alice-right-index 1
    rc=$(gdm_worker_status "$out" "$pid")
    cat "$out" >&2
    [ "$rc" = 0 ] || why "gdm's worker could not log alice in with her finger" || return 1
    [ "$(keyring_item)" = stored-before ] || why "the fingerprint login did not open the keyring" || return 1

    # Locked again: a wrong finger neither logs in nor opens it, and counts.
    keyring_lock || return 1
    before=$(lockout_count alice)
    mark=$(status_mark)
    pid=$(keyring_worker "$out" systest-gdm-keyring)
    feed "$pid" "$mark" someone-else 3
    rc=$(gdm_worker_status "$out" "$pid")
    [ "$rc" != 0 ] || why "a wrong finger logged alice in" || return 1
    [ -z "$(keyring_item)" ] || why "a wrong finger opened the keyring" || return 1
    [ "$(lockout_count alice)" -gt "$before" ] || why "the wrong finger did not count ($before → $(lockout_count alice))" || return 1
    reset_lockout alice

    # A password login (pam_unix) opens it too.
    cat > /etc/pam.d/systest-gdm-keyring-password <<'CONF'
auth     requisite pam_unix.so
auth     optional pam_localauth.so keyring-authtok debug
auth     optional pam_gnome_keyring.so
auth     optional pam_localauth.so keyring-restore
account  required pam_permit.so
CONF
    pid=$(keyring_worker "$out" systest-gdm-keyring-password alice-password)
    rc=$(gdm_worker_status "$out" "$pid")
    cat "$out" >&2
    [ "$rc" = 0 ] || why "alice's password login failed" || return 1
    [ "$(keyring_item)" = stored-before ] || why "the password login did not open the keyring" || return 1

    loginctl activate "$display"
    with_polkit_agent alice alice-password localauthctl keyring disable >&2 || why "localauthctl keyring disable failed" || return 1
    keyring_lock
    keyring_in_alice_scope 'printf %s alice-password | gnome-keyring-daemon --replace --unlock --components=secrets >/dev/null'
    [ "$(keyring_item)" = stored-before ] || why "after disable the login password does not open the keyring" || return 1
}

# Argon2id cannot be held hostage (issue 37; docs/KEYRING.md, "Where
# Argon2id runs"): alice, bob and carol have their login secret on; alice
# and bob each stop their own passwd (kill -STOP: passwd keeps its invoker's
# real uid) while pam_localauth derives their password's key: as many
# stopped holders as may run at once. carol's password login opens her
# keyring and her passwd re-wraps, each at once (before: both waited 10 s on
# one machine-wide lock, the login left the keyring locked and passwd
# skipped the re-wrap with no log line). alice's second passwd cannot
# re-wrap while her first holds her lock: the journal says so and her wrap
# is marked stale.
keyring_setup() {  # USER: a display session in front, a login keyring with an item, the login secret on
    local user="$1" display
    display="$(open_seat_session "systest-display-$user" "$user" user)" || return 1
    loginctl activate "$display"
    wait_for 20 "user@$(uid_of "$user").service" is_active "user@$(uid_of "$user").service" || return 1
    in_user_scope "$user" app-gnome-systest sh -c "rm -rf ~/.local/share/keyrings
        printf %s $user-password | gnome-keyring-daemon --replace --unlock --components=secrets >/dev/null
        printf stored-before | secret-tool store --label=systest systest item" || why "no login keyring for $user" || return 1
    with_polkit_agent "$user" "$user-password" localauthctl keyring enable >&2 || why "$user: keyring enable failed" || return 1
}
# passwd as USER runs it: setuid root, USER's real uid, the old password asked (stdin: OLD NEW NEW).
passwd_as() {  # USER OLD NEW
    printf '%s\n%s\n%s\n' "$2" "$3" "$3" | setpriv --reuid="$(uid_of "$1")" --regid="$(id -g "$1")" --init-groups passwd
}
# Stops (SIGSTOP) the process named COMM of real uid UID while it holds a
# flock (/proc/locks: pam_localauth's Argon2id locks); prints its pid.
stop_while_holding_a_flock() {  # UID COMM SECONDS
    python3 - "$1" "$2" "$3" <<'PY'
import os, signal, sys, time
uid, comm, end = int(sys.argv[1]), sys.argv[2], time.monotonic() + float(sys.argv[3])
def holders():
    for line in open("/proc/locks"):
        f = line.split()
        if len(f) > 4 and f[1] == "FLOCK" and f[4].isdigit():
            try:
                if open("/proc/%s/comm" % f[4]).read().strip() != comm:
                    continue
                status = open("/proc/%s/status" % f[4]).read().splitlines()
            except OSError:
                continue
            if int([l for l in status if l.startswith("Uid:")][0].split()[1]) == uid:
                yield int(f[4])
def state(pid):
    s = open("/proc/%d/stat" % pid).read()
    return s[s.rindex(")") + 2]
while time.monotonic() < end:
    for pid in list(holders()):
        os.kill(pid, signal.SIGSTOP)
        for _ in range(200):
            if state(pid) == "T":
                break
            time.sleep(0.005)
        if pid in holders():
            print(pid)
            sys.exit(0)
        os.kill(pid, signal.SIGCONT)   # it let go just before: again
    time.sleep(0.001)
sys.exit("no %s of uid %d held a flock" % (comm, uid))
PY
}
scenario_stopped_passwd_holds_no_other_login() {
    local since hostage other first second start seconds out="$LOGS/hostage-login.log" rc=0
    id carol >/dev/null 2>&1 || { useradd --create-home --shell /bin/bash carol && echo carol:carol-password | chpasswd; } ||
        why "no account carol" || return 1
    pam-auth-update --package --enable localauth-keyring || why "pam-auth-update --enable localauth-keyring failed" || return 1
    grep -q "pam_localauth.so keyring" /etc/pam.d/common-password || why "common-password has no keyring line" || return 1
    keyring_setup alice && keyring_setup bob && keyring_setup carol || return 1
    cat > /etc/pam.d/systest-keyring-password <<'CONF'
auth     requisite pam_unix.so
auth     optional pam_localauth.so keyring-authtok debug
auth     optional pam_gnome_keyring.so
auth     optional pam_localauth.so keyring-restore
account  required pam_permit.so
CONF
    since=$EPOCHREALTIME
    passwd_as alice alice-password 'Quartz-Lantern-41' >"$LOGS/hostage-passwd-alice.log" 2>&1 &
    first=$!
    hostage=$(stop_while_holding_a_flock "$(uid_of alice)" passwd 30) || { cat "$LOGS/hostage-passwd-alice.log" >&2; return 1; }
    passwd_as bob bob-password 'Saffron-Kettle-58' >"$LOGS/hostage-passwd-bob.log" 2>&1 &
    second=$!
    other=$(stop_while_holding_a_flock "$(uid_of bob)" passwd 30) || { cat "$LOGS/hostage-passwd-bob.log" >&2; rc=1; }
    echo "alice's passwd $hostage and bob's stopped while they derive" >&2

    # carol's password login: her keyring opens, at once.
    in_user_scope carol app-gnome-systest gdbus call --session --dest org.freedesktop.secrets --object-path /org/freedesktop/secrets \
        --method org.freedesktop.Secret.Service.Lock "['/org/freedesktop/secrets/collection/login']" >/dev/null
    start=$EPOCHREALTIME
    printf 'carol-password\n' | XDG_RUNTIME_DIR="/run/user/$(uid_of carol)" pamtester -v systest-keyring-password carol authenticate >"$out" 2>&1 ||
        why "carol's password login failed" || rc=1
    seconds=$(since "$start"); figure "carol's login ${seconds} s"
    cat "$out" >&2
    [ "$(in_user_scope carol app-gnome-systest sh -c 'timeout 5 secret-tool lookup systest item' 2>/dev/null)" = stored-before ] ||
        why "carol's keyring did not open while the passwds were stopped" || rc=1
    awk -v s="$seconds" 'BEGIN { exit !(s < 5) }' || why "carol's login took $seconds s" || rc=1

    # carol's passwd re-wraps at once.
    start=$EPOCHREALTIME
    passwd_as carol carol-password 'Walnut-Harbor-72' >&2 || why "carol's passwd failed" || rc=1
    seconds=$(since "$start"); figure "carol's passwd ${seconds} s"
    awk -v s="$seconds" 'BEGIN { exit !(s < 5) }' || why "carol's passwd took $seconds s" || rc=1
    journalctl -q -u localauthd --since "@$since" -o cat | grep -q "login secret of uid $(uid_of carol): the password wrap follows the new password" ||
        why "carol's password wrap did not follow her new password" || rc=1

    # alice's second passwd: it cannot re-wrap; the journal says so, the wrap is stale.
    passwd_as alice 'Quartz-Lantern-41' 'Copper-Meadow-93' >&2 || why "alice's second passwd failed" || rc=1
    journalctl -q --since "@$since" -o cat | grep "pam_localauth" | grep -E "stopped process|marking it stale" >&2
    journalctl -q --since "@$since" -o cat | grep -q "the password wrap of alice cannot follow the new password now; marking it stale" ||
        why "no journal line for alice's missed re-wrap" || rc=1
    in_user_scope alice app-gnome-systest localauthctl keyring status 2>&1 | grep -q "still uses a previous password" ||
        why "keyring status does not say alice's password copy is stale" || rc=1

    kill -KILL "$hostage" ${other:+"$other"} 2>/dev/null
    wait "$first" "$second" 2>/dev/null
    for person in alice bob carol; do
        echo "$person:$person-password" | chpasswd
        rm -f "/var/lib/localauth/login/$(uid_of $person)"
    done
    close_seat_session systest-display-carol
    pam-auth-update --package --disable localauth-keyring
    return "$rc"
}

cleanup_between_scenarios() {
    close_seat_session systest-display-alice; close_seat_session systest-display-bob; close_seat_session systest-greeter
    systemctl stop gdm systest-other xvfb-alice xvfb-bob 2>/dev/null
    # The greeter's session (its scope outlives gdm.service): after logind's
    # restart, Debian 13's logind counts session names from c1 again and
    # would collide with a scope left over.
    loginctl terminate-user Debian-gdm 2>/dev/null
    systemctl reset-failed gdm systest-other xvfb-alice xvfb-bob 2>/dev/null; rm -f /run/systest-gdm.cmd; true
}

ALL=(apt_installs_the_packages bus_activation_and_idle_exit app_scope_in_active_display_session
     greeter_worker_fingerprint_login sshd_own_pam_never_scans sudo_in_ssh_session_falls_to_password
     terminal_scope_sudo_gets_fingerprint ssh_user_scope_sudo_is_judged_by_the_display_session su_switched_away_gets_no_touch
     prompt_agent_follows_the_active_display_session journal_priorities logind_away_fails_closed greeter_worker_fingerprint_login_through_pam_fprintd
     fprintd_statuses_are_debians fprintd_swap_and_purge login_keyring_opens_with_the_finger_and_the_password stopped_passwd_holds_no_other_login)

# ----------------------------------------- password managers through polkit
# Issue 40, item 1. Bitwarden, 1Password and KeePassXC each ask polkit for an
# auth_self action of their own; the desktop's agent runs
# polkit-agent-helper-1 (setuid root, a child of the agent, so in the app's
# scope), which runs PAM's polkit-1 stack (/usr/lib/pam.d/polkit-1:
# @include common-auth), where `pam-auth-update --enable localauth` puts
# pam_localauth. Here the app is pkcheck --allow-user-interaction for its
# own process, with polkit's own text agent (pkttyagent) registered for that
# process, both on a pseudo terminal (the text agent needs one), in an app
# scope of alice's user manager, her display session in front.

# The apps' action files, as each app's package installs them (but for their
# DOCTYPE line, which names the DTD by a web address: polkitd does not read it).
PASSWORD_MANAGER_ACTIONS="com.bitwarden.Bitwarden.unlock com.1password.1Password.unlock org.keepassxc.KeePassXC.unlockDatabase"
install_password_manager_actions() {
    local dir=/usr/share/polkit-1/actions
    cat > "$dir/com.bitwarden.Bitwarden.policy" <<'XML'
<?xml version="1.0" encoding="UTF-8"?>
<policyconfig>
    <action id="com.bitwarden.Bitwarden.unlock">
      <description>Unlock Bitwarden</description>
      <message>Authenticate to unlock Bitwarden</message>
      <defaults>
        <allow_any>no</allow_any>
        <allow_inactive>no</allow_inactive>
        <allow_active>auth_self</allow_active>
      </defaults>
    </action>
</policyconfig>
XML
    # 1Password's installer fills the owners in with the machine's people
    # (uids of four digits).
    cat > "$dir/com.1password.1Password.policy" <<'XML'
<?xml version="1.0" encoding="UTF-8"?>
<policyconfig>
  <action id="com.1password.1Password.unlock">
    <description>Unlock 1Password</description>
    <message>1Password is trying to unlock.</message>
    <defaults>
      <allow_any>no</allow_any>
      <allow_inactive>no</allow_inactive>
      <allow_active>auth_self</allow_active>
    </defaults>
    <annotate key="org.freedesktop.policykit.owner">unix-user:alice unix-user:bob</annotate>
  </action>
</policyconfig>
XML
    cat > "$dir/org.keepassxc.KeePassXC.policy" <<'XML'
<?xml version="1.0" encoding="UTF-8"?>
<policyconfig>
  <vendor>KeePassXC Developers</vendor>
  <icon_name>keepassxc</icon_name>
  <action id="org.keepassxc.KeePassXC.unlockDatabase">
    <description>Quick Unlock for a KeePassXC Database</description>
    <message>Authentication is required to unlock a KeePassXC Database</message>
    <defaults>
      <allow_inactive>no</allow_inactive>
      <allow_active>auth_self</allow_active>
    </defaults>
  </action>
</policyconfig>
XML
}

# The app: pty.fork(); in the child, pkttyagent --process <child> (its
# --notify-fd says when it is registered), then exec pkcheck for that same
# pid (exec keeps the pid and start time polkit knows it by). The parent
# shows the terminal on stdout and answers each "Password: " with the next
# ANSWER once the agent has turned echo off (it does so with TCSAFLUSH,
# which would drop an answer typed before); a prompt with no answer left
# stops the app. Never EOF: pkttyagent dumps core on it before polkit 125
# (upstream's fix; Debian 12 has 122). Exits with pkcheck's status: 0
# authorized, 1 not authorized (124: still running after a minute).
POLKIT_APP=/run/systest-polkit-app.py
write_polkit_app() {
    cat > "$POLKIT_APP" <<'PY'
import os, pty, select, signal, sys, termios, time

action, answers = sys.argv[1], sys.argv[2:]
pid, master = pty.fork()
if pid == 0:
    me = os.getpid()
    ready_r, ready_w = os.pipe()
    agent = os.fork()
    if agent == 0:
        os.close(ready_r)
        os.set_inheritable(ready_w, True)
        os.execvp("pkttyagent", ["pkttyagent", "--process", str(me), "--notify-fd", str(ready_w)])
    os.close(ready_w)
    os.read(ready_r, 1)  # EOF: the agent registered, or died
    if os.waitpid(agent, os.WNOHANG) != (0, 0):
        print("app: pkttyagent did not register", flush=True)
        os._exit(125)
    print("app: agent %d registered for pid %d" % (agent, me), flush=True)
    os.execvp("pkcheck", ["pkcheck", "--action-id", action, "--process", str(me), "--allow-user-interaction"])

out = os.fdopen(os.dup(1), "wb", buffering=0)
seen = b""


def show_terminal(timeout):
    global seen
    if not select.select([master], [], [], timeout)[0]:
        return False
    try:
        data = os.read(master, 4096)
    except OSError:  # EIO: nobody holds the terminal any more
        return False
    out.write(data)
    seen += data
    while b"Password: " in seen:
        seen = seen.split(b"Password: ", 1)[1]
        if not answers:
            out.write(b"\n[app: a password prompt it has no answer for: stopped]\n")
            os.killpg(pid, signal.SIGTERM)
            continue
        deadline = time.monotonic() + 10
        while termios.tcgetattr(master)[3] & termios.ECHO and time.monotonic() < deadline:
            time.sleep(0.01)
        os.write(master, answers.pop(0).encode() + b"\n")
        out.write(b"\n[app: answered the password prompt]\n")
    return bool(data)


status = None
while status is None:
    show_terminal(0.2)
    done, code = os.waitpid(pid, os.WNOHANG)
    if done:
        status = os.waitstatus_to_exitcode(code)
while show_terminal(0.2):  # what pkcheck said last
    pass
try:
    os.killpg(pid, signal.SIGTERM)  # the agent: pkcheck leaves it running
except ProcessLookupError:
    pass
out.write(b"[app: pkcheck exited %d]\n" % status)
sys.exit(status if status >= 0 else 128 - status)
PY
    chmod 0755 "$POLKIT_APP"
}

# USER's app (in an app scope named after it) asks polkit for ACTION, in the
# background: its terminal to OUT, its pid in APP_PID.
app_asks_polkit() {  # USER APP ACTION OUT [ANSWER...]
    local user="$1" app="$2" action="$3" out="$4"; shift 4
    in_user_scope "$user" "app-gnome-$app" timeout 60 python3 "$POLKIT_APP" "$action" "$@" >"$out" 2>&1 &
    APP_PID=$!
}
# The journal since a cursor, one program's lines (its syslog identifier).
# Filtered here, not by journalctl: systemd 252's journalctl
# --after-cursor=C -t NAME now and then prints nothing (2 runs in 6 here).
journal_cursor() { journalctl -n0 --show-cursor -q | sed -n 's/^-- cursor: //p'; }
journal_of() { journalctl -q -o short-unix --after-cursor="$1" | grep -F " $2[" | sed 's/^[^ ]* [^ ]* //'; }  # CURSOR NAME
# CURSOR TEXT: a line of polkitd, of the service, of pam_localauth inside
# polkit-agent-helper-1 since CURSOR. journald files them a moment after the
# fact: wait for them (logged), never for time.
polkitd_said() { journal_of "$1" polkitd | grep -q -F -- "$2"; }
service_said() { journal_of "$1" localauthd | grep -q -F -- "$2"; }
helper_said() { journal_of "$1" polkit-agent-helper-1 | grep -q -F -- "pam_localauth(polkit-1:auth): $2"; }
logged() { wait_for 5 "the journal to say '$3'" "$@"; }  # SAID-FUNCTION CURSOR TEXT
in_transcript() { grep -q -F "$2" "$1"; }  # OUT TEXT

# What the scenario changed, undone when its subshell exits: common-auth as
# pam-auth-update wrote it (byte for byte, or it would refuse to update a
# locally modified file), then the profile off again; /etc/pam.d/sudo; the
# action files.
POLKIT_SCENARIO_SAVED=/run/systest-polkit-saved
undo_password_manager_setup() {
    [ -f "$POLKIT_SCENARIO_SAVED/common-auth" ] && cp "$POLKIT_SCENARIO_SAVED/common-auth" /etc/pam.d/common-auth
    [ -f "$POLKIT_SCENARIO_SAVED/enabled-here" ] && pam-auth-update --disable localauth
    [ -f "$POLKIT_SCENARIO_SAVED/sudo" ] && cp "$POLKIT_SCENARIO_SAVED/sudo" /etc/pam.d/sudo
    rm -f /usr/share/polkit-1/actions/com.bitwarden.Bitwarden.policy /usr/share/polkit-1/actions/com.1password.1Password.policy \
        /usr/share/polkit-1/actions/org.keepassxc.KeePassXC.policy "$POLKIT_APP"
    rm -rf "$POLKIT_SCENARIO_SAVED"
    reset_lockout alice 2>/dev/null
    true
}

# The whole path, each outcome from what the real components say: pkcheck's
# status and the agent's terminal, pam_localauth's lines as
# polkit-agent-helper-1 logs them (`debug` added to the profile's line for
# the run: logging only), the service's journal, polkitd's journal, the
# lockout file. 1: each app's unlock takes alice's finger. 2: another finger
# is refused (then the password prompt; a wrong password: not authorized)
# and counts exactly as a wrong finger at sudo does. 3: sudo's failures and
# polkit's add up to the one lockout, after which polkit asks for no finger
# and her password still unlocks. 4: her session switched away while the
# helper waits for her finger: the verify ends (NotAtTheReader), no scan
# follows, the password prompt does. 5: switched away before the app asks:
# polkit refuses at once (allow_inactive=no), no helper, no VerifyUser.
scenario_password_managers_through_polkit_agent_helper() {
    local alice bob out="$LOGS/polkit-app.log" cursor mark pid rc t0 app action polkit_count sudo_count calls package
    for package in localauthd localauth-tools libpam-localauth; do
        [ "$(status_of $package)" = installed ] || apt_quiet install "$(ls $DEBS/${package}_*.deb)" || return 1
    done
    ensure_enrolled alice alice-right-index || return 1
    reset_lockout alice
    rm -rf "$POLKIT_SCENARIO_SAVED"; mkdir -p "$POLKIT_SCENARIO_SAVED"
    trap undo_password_manager_setup EXIT

    # As a person sets it up: the apps' action files, the PAM profile.
    install_password_manager_actions
    for action in $PASSWORD_MANAGER_ACTIONS; do
        wait_for 10 "polkitd to know $action" pkaction --action-id "$action" || return 1
    done
    write_polkit_app
    if ! grep -q pam_localauth /etc/pam.d/common-auth; then
        pam-auth-update --enable localauth || why "pam-auth-update --enable localauth failed" || return 1
        touch "$POLKIT_SCENARIO_SAVED/enabled-here"
    fi
    grep -q '^auth.*pam_localauth.so timeout=15$' /etc/pam.d/common-auth || why "the profile's line is not in common-auth" || return 1
    cp /etc/pam.d/common-auth "$POLKIT_SCENARIO_SAVED/common-auth"
    sed -i 's/pam_localauth.so timeout=15$/& debug/' /etc/pam.d/common-auth
    echo "polkit-1's stack: $(ls /etc/pam.d/polkit-1 /usr/lib/pam.d/polkit-1 2>/dev/null | head -n1);" \
        "common-auth: $(grep -v '^#' /etc/pam.d/common-auth | grep . | paste -sd'|')" >&2
    # sudo as Debian ships it (common-auth only): earlier scenarios put a line of their own in.
    cp /etc/pam.d/sudo "$POLKIT_SCENARIO_SAVED/sudo"
    sed -i '/pam_localauth/d' /etc/pam.d/sudo

    alice="$(open_seat_session systest-display-alice alice user)" || return 1
    wait_for 20 "user@$(uid_of alice).service" is_active "user@$(uid_of alice).service" || return 1
    wait_for 5 "alice's display session $alice in front" is_seat_active "$alice" || return 1

    # 1. Each app's unlock: her finger answers inside polkit-agent-helper-1.
    for app in bitwarden:com.bitwarden.Bitwarden.unlock 1password:com.1password.1Password.unlock \
               keepassxc:org.keepassxc.KeePassXC.unlockDatabase; do
        action=${app#*:}; app=${app%%:*}
        cursor="$(journal_cursor)"; mark=$(status_mark); t0=$EPOCHREALTIME
        app_asks_polkit alice "$app" "$action" "$out"
        feed "$APP_PID" "$mark" alice-right-index 1
        wait "$APP_PID"; rc=$?
        echo "----- $app, her finger: rc=$rc in $(since "$t0") s" >&2; cat "$out" >&2
        journal_of "$cursor" polkit-agent-helper-1 >&2
        [ "$rc" = 0 ] || why "$app's unlock ($action) was not authorized with her finger (pkcheck $rc)" || return 1
        in_transcript "$out" "AUTHENTICATING FOR $action" && in_transcript "$out" "Place your finger on the fingerprint reader" &&
            in_transcript "$out" "AUTHENTICATION COMPLETE" || why "the agent did not show $action's finger prompt and its success" || return 1
        ! in_transcript "$out" "Password: " || why "$app: the password was asked for with her finger enrolled" || return 1
        logged helper_said "$cursor" "authenticate alice: Success" ||
            why "$app: no success of pam_localauth inside polkit-agent-helper-1's polkit-1 stack" || return 1
        logged service_said "$cursor" "fingerprint of uid $(uid_of alice) verified for a PAM module" || why "$app: the service verified no finger" || return 1
        # The history of approvals (docs/HISTORY.md): an administrator dialog, by its PAM service.
        wait_for 5 "$app's history entry in the polkit context" has_history "$(( ${t0%.*} - 1 ))" $HISTORY_GRANTED \
            LOCALAUTH_CONTEXT=polkit LOCALAUTH_PAM_SERVICE=polkit-1 LOCALAUTH_USER_UID="$(uid_of alice)" || return 1
        logged polkitd_said "$cursor" "successfully authenticated as unix-user:alice to gain ONE-SHOT authorization for action $action" ||
            why "$app: polkitd did not log the authorization" || return 1
        [ "$app" = bitwarden ] && figure "Bitwarden's unlock with her finger in $(since "$t0") s"
    done

    # 2. Another finger: refused, then the password prompt (a wrong one:
    # not authorized); counted as a wrong finger at sudo is.
    reset_lockout alice
    cursor="$(journal_cursor)"; mark=$(status_mark)
    app_asks_polkit alice 1password com.1password.1Password.unlock "$out" not-her-password
    feed "$APP_PID" "$mark" someone-else 3
    wait "$APP_PID"; rc=$?
    polkit_count=$(lockout_count alice)
    echo "----- 1password, another finger: rc=$rc, lockout 0 → $polkit_count" >&2; cat "$out" >&2
    journal_of "$cursor" polkit-agent-helper-1 >&2
    [ "$rc" = 1 ] && in_transcript "$out" "Not authorized." || why "another finger: pkcheck $rc, not 'Not authorized.'" || return 1
    in_transcript "$out" "Fingerprint not recognized" && in_transcript "$out" "[app: answered the password prompt]" ||
        why "another finger: the agent did not say 'not recognized' and ask for the password" || return 1
    logged helper_said "$cursor" "fingerprint of alice: org.example.LocalAuth.Error.AuthenticationFailed" ||
        why "another finger: pam_localauth in polkit-agent-helper-1 did not log AuthenticationFailed" || return 1
    logged polkitd_said "$cursor" "FAILED to authenticate to gain authorization for action com.1password.1Password.unlock" ||
        why "another finger: polkitd did not log the failure" || return 1
    ! service_said "$cursor" "verified for a PAM module" || why "another finger was verified" || return 1
    reset_lockout alice
    t0=$EPOCHSECONDS; mark=$(status_mark)
    in_user_scope alice vte-spawn sudo -S -k -p "" -v </dev/null >"$LOGS/polkit-sudo.log" 2>&1 &
    pid=$!
    feed "$pid" "$mark" someone-else 3
    wait "$pid"; rc=$?
    sudo_count=$(lockout_count alice)
    echo "----- sudo, another finger: rc=$rc, lockout 0 → $sudo_count" >&2; cat "$LOGS/polkit-sudo.log" >&2; module_log_since "$t0" sudo >&2
    [ "$rc" != 0 ] || why "sudo passed with another finger" || return 1
    [ "$polkit_count" = 3 ] && [ "$sudo_count" = "$polkit_count" ] ||
        why "a wrong finger counts $polkit_count through polkit, $sudo_count through sudo (3 scans each)" || return 1
    figure "a wrong finger counts $polkit_count through polkit, $sudo_count through sudo"

    # 3. One lockout: sudo's 3, then polkit's next two failures reach 5; then
    # polkit asks for no finger, and her password still unlocks.
    cursor="$(journal_cursor)"; mark=$(status_mark)
    app_asks_polkit alice keepassxc org.keepassxc.KeePassXC.unlockDatabase "$out" not-her-password
    feed "$APP_PID" "$mark" someone-else 3
    wait "$APP_PID"; rc=$?
    echo "----- keepassxc, another finger after sudo's: rc=$rc, lockout $sudo_count → $(lockout_count alice)" >&2; cat "$out" >&2
    [ "$rc" = 1 ] || why "locking out: pkcheck $rc" || return 1
    [ "$(lockout_count alice)" = 5 ] && logged service_said "$cursor" "biometry locked out for uid $(uid_of alice)" ||
        why "sudo's and polkit's failures did not make one lockout (count $(lockout_count alice))" || return 1
    cursor="$(journal_cursor)"; mark=$(status_mark)
    app_asks_polkit alice bitwarden com.bitwarden.Bitwarden.unlock "$out" alice-password
    wait "$APP_PID"; rc=$?
    echo "----- bitwarden, locked out, her password: rc=$rc" >&2; cat "$out" >&2
    journal_of "$cursor" polkit-agent-helper-1 >&2
    [ "$rc" = 0 ] || why "locked out: her password did not unlock Bitwarden (pkcheck $rc)" || return 1
    [ "$(status_mark)" = "$mark" ] || why "locked out: the service asked for a finger" || return 1
    logged helper_said "$cursor" "fingerprint of alice: org.example.LocalAuth.Error.BiometryLockout" ||
        why "locked out: pam_localauth did not log BiometryLockout" || return 1
    reset_lockout alice

    # 4. Switched away while the helper waits for her finger: no scan.
    bob="$(open_seat_session systest-display-bob bob user)" || return 1
    loginctl activate "$alice"
    wait_for 5 "alice's session in front" is_seat_active "$alice" || return 1
    cursor="$(journal_cursor)"; mark=$(status_mark)
    app_asks_polkit alice keepassxc org.keepassxc.KeePassXC.unlockDatabase "$out" not-her-password
    wait_for 10 "the helper's VerifyUser to ask for her finger" asked_since "$mark" || { cat "$out" >&2; return 1; }
    loginctl activate "$bob"
    wait_for 5 "bob's session in front" is_seat_active "$bob" || return 1
    mark=$(status_mark)
    wait "$APP_PID"; rc=$?
    echo "----- keepassxc, switched to bob while waiting: rc=$rc" >&2; cat "$out" >&2
    journal_of "$cursor" polkit-agent-helper-1 >&2
    journal_of "$cursor" localauthd | grep -E "at the reader|thrown away|verified" >&2
    [ "$rc" = 1 ] || why "switched away: pkcheck $rc" || return 1
    [ "$(status_mark)" = "$mark" ] || why "switched away: the service asked for a finger again" || return 1
    logged helper_said "$cursor" "fingerprint of alice: org.example.LocalAuth.Error.NotAtTheReader" ||
        why "switched away: pam_localauth did not get NotAtTheReader" || return 1
    logged service_said "$cursor" "is no longer at the reader" || why "switched away: the service logged no refusal" || return 1
    ! service_said "$cursor" "verified for a PAM module" || why "switched away: a finger was verified" || return 1
    in_transcript "$out" "[app: answered the password prompt]" || why "switched away: polkit did not fall to the password" || return 1

    # 5. Switched away before the app asks: polkit refuses at once.
    mark=$(status_mark)
    watch_verify_user "$LOGS/polkit-verify.log"
    app_asks_polkit alice bitwarden com.bitwarden.Bitwarden.unlock "$out"
    wait "$APP_PID"; rc=$?
    calls=$(verify_user_calls "$LOGS/polkit-verify.log")
    echo "----- bitwarden, bob in front: rc=$rc, $calls VerifyUser" >&2; cat "$out" >&2
    [ "$rc" = 1 ] && in_transcript "$out" "Not authorized." || why "bob in front: pkcheck $rc" || return 1
    ! in_transcript "$out" "AUTHENTICATING FOR" || why "bob in front: the agent was asked" || return 1
    [ "$calls" = 0 ] && [ "$(status_mark)" = "$mark" ] || why "bob in front: $calls VerifyUser, a finger asked for" || return 1
}
ALL+=(password_managers_through_polkit_agent_helper)

# ------------------------------------------------------- history of approvals
# Issue 40, item 3 (docs/HISTORY.md). Each decision about a finger is one
# entry in the real journal, sent natively by localauthd (its fields are
# journal fields: journalctl matches on them), with the MESSAGE_ID of its
# outcome: alice's app granted and refused, alice's sudo (PAM, with its PAM
# service), bob's app granted. Then `localauthctl history`: alice, outside
# journald's groups, is told she cannot read the system journal; in
# systemd-journal she sees hers and none of bob's; root sees both.
HISTORY_GRANTED=067d335c13d54715817c74400fabbd95
HISTORY_REFUSED=36956ae329cc4697bda8bd2997be5f28
history_entries() {  # SINCE MESSAGE_ID [MATCH...]: journalctl's JSON lines of localauthd's entries
    local since="$1" id="$2"; shift 2
    journalctl -q --no-pager --system -o json --since "@$since" MESSAGE_ID="$id" _SYSTEMD_UNIT=localauthd.service "$@"
}
has_history() { [ -n "$(history_entries "$@")" ]; }
as_member() {  # USER COMMAND...: a login shell's groups (setpriv --init-groups), no session
    local user="$1"; shift
    setpriv --reuid="$(uid_of "$user")" --regid="$(id -g "$user")" --init-groups --reset-env \
        env HOME="/home/$user" USER="$user" PATH=/usr/bin:/bin LANG=C.UTF-8 "$@"
}
scenario_history_in_the_journal() {
    local since alice_uid bob_uid alice bob out rc
    since=$((EPOCHSECONDS - 1)); alice_uid=$(uid_of alice); bob_uid=$(uid_of bob)
    ensure_enrolled alice alice-right-index || return 1
    ensure_enrolled bob bob-right-index || return 1
    reset_lockout alice; reset_lockout bob
    gpasswd -d alice systemd-journal >/dev/null 2>&1; gpasswd -d bob systemd-journal >/dev/null 2>&1
    alice="$(open_seat_session systest-display-alice alice user)" || return 1
    wait_for 20 "user@$alice_uid.service" is_active "user@$alice_uid.service" || return 1
    evaluate_in_app_scope alice alice-right-index
    [ "$EVAL_RC" = 0 ] || why "alice's app with her finger was refused" || return 1
    local mark pid; mark=$(status_mark)
    in_user_scope alice app-gnome-systest localauthctl evaluate --reason "history" >"$LOGS/history-refused.log" 2>&1 &
    pid=$!; feed "$pid" "$mark" someone-else 3; wait "$pid"; rc=$?
    [ "$rc" = 1 ] || { cat "$LOGS/history-refused.log" >&2; why "another finger on alice's app: rc $rc, not 1"; return 1; }
    reset_lockout alice
    enable_module_in sudo || return 1
    mark=$(status_mark)
    in_user_scope alice vte-spawn sudo -S -k -p "" -v </dev/null >"$LOGS/history-sudo.log" 2>&1 &
    pid=$!; feed "$pid" "$mark" alice-right-index 1; wait "$pid" || why "alice's sudo did not take her finger" || return 1
    bob="$(open_seat_session systest-display-bob bob user)" || return 1
    loginctl activate "$bob"
    wait_for 5 "bob's session to be active" is_seat_active "$bob" || return 1
    wait_for 20 "user@$bob_uid.service" is_active "user@$bob_uid.service" || return 1
    evaluate_in_app_scope bob bob-right-index
    [ "$EVAL_RC" = 0 ] || why "bob's app with his finger was refused" || return 1

    # The entries, in the real journal, matched by journald on their fields.
    wait_for 10 "alice's granted entry" has_history "$since" $HISTORY_GRANTED LOCALAUTH_USER_UID="$alice_uid" \
        LOCALAUTH_CONTEXT=app LOCALAUTH_PROGRAM=/usr/bin/localauthctl LOCALAUTH_CALLER_UID="$alice_uid" || return 1
    wait_for 10 "alice's refused entry" has_history "$since" $HISTORY_REFUSED LOCALAUTH_USER_UID="$alice_uid" \
        LOCALAUTH_OUTCOME=refused LOCALAUTH_ERROR=org.example.LocalAuth.Error.AuthenticationFailed || return 1
    wait_for 10 "alice's sudo entry" has_history "$since" $HISTORY_GRANTED LOCALAUTH_USER_UID="$alice_uid" \
        LOCALAUTH_CONTEXT=pam LOCALAUTH_PAM_SERVICE=sudo LOCALAUTH_PROGRAM=/usr/bin/sudo LOCALAUTH_CALLER_UID=0 || return 1
    wait_for 10 "bob's granted entry" has_history "$since" $HISTORY_GRANTED LOCALAUTH_USER_UID="$bob_uid" || return 1
    history_entries "$since" $HISTORY_GRANTED | head -n 1 >&2
    history_entries "$since" $HISTORY_GRANTED LOCALAUTH_USER_UID="$alice_uid" | python3 -c '
import json, sys
entry = json.loads(sys.stdin.readline())
reader = entry.get("LOCALAUTH_READER", "")
assert reader.startswith("virtual_device/"), "reader %r" % reader
assert entry["SYSLOG_IDENTIFIER"] == "localauthd" and entry["_UID"] == "0", entry
' || why "alice's entry lacks its reader or its sender" || return 1

    # localauthctl history as alice: outside journald's groups, told so.
    out="$(as_member alice localauthctl history 2>&1)"; rc=$?
    echo "alice outside the groups: rc=$rc $out" >&2
    [ "$rc" = 3 ] && echo "$out" | grep -q systemd-journal || why "alice outside systemd-journal: rc $rc: $out" || return 1
    usermod -aG systemd-journal alice
    out="$(as_member alice localauthctl history --since "@$since")"; rc=$?
    echo "$out" >&2
    [ "$rc" = 0 ] && echo "$out" | grep -q "granted .*app .*alice .*/usr/bin/localauthctl" ||
        why "alice's history has not her granted evaluation: rc $rc" || return 1
    echo "$out" | grep -q "pam:sudo" || why "alice's history has not her sudo" || return 1
    figure "alice's newest: $(echo "$out" | sed -n 2p | tr -s ' ')"
    as_member alice localauthctl history --json --since "@$since" >"$LOGS/history-alice.json" || why "--json as alice" || return 1
    localauthctl history --json --since "@$since" >"$LOGS/history-root.json" || why "--json as root" || return 1
    python3 - "$LOGS/history-alice.json" "$LOGS/history-root.json" "$alice_uid" "$bob_uid" <<'PY' || why "localauthctl history's views are wrong" || return 1
import json, sys
alice_view, root_view = (json.load(open(p)) for p in sys.argv[1:3])
alice, bob = int(sys.argv[3]), int(sys.argv[4])
def users(view): return {e.get("user-uid") for e in view}
print("FIGURE: alice sees %d entries (uids %s), root %d (uids %s)" % (len(alice_view), sorted(users(alice_view)), len(root_view),
      sorted(users(root_view))), file=sys.stderr)
assert len(alice_view) >= 3, alice_view
assert users(alice_view) == {alice}, "alice sees another user's entries: %s" % users(alice_view)
assert {alice, bob} <= users(root_view), "root does not see both"
outcomes = [e["outcome"] for e in alice_view]
assert "granted" in outcomes and "refused" in outcomes, outcomes
times = [e["time"] for e in root_view]
assert times == sorted(times, reverse=True), "not newest first: %s" % times
assert all(e["program"] for e in root_view), root_view
PY
    gpasswd -d alice systemd-journal >/dev/null
}
ALL+=(history_in_the_journal)

# ------------------------------------------ issue 40, item 2: quick unlock
# A password manager's quick-unlock key (LaQuickUnlock, docs/APPS.md) kept
# by alice's app, here KeePassXC's app id, through the installed library and
# typelib (Examples/QuickUnlock/quick-unlock.py in an app scope of her user
# manager, her display session in front). After the app restarts, after
# `systemctl restart localauthd`, and after the container reboots (the
# runner, scripts/system-test/run, reboots it when a scenario writes the
# name of its second half to $AFTER_REBOOT, and runs that half on the new
# boot), getKey answers only after her finger, only to that app.
QUICK_APP=org.keepassxc.KeePassXC
QUICK_DB=3f1c9a7e-5b2d-4c1e-9f0a-kdbx
QUICK_STATE=/var/lib/systest/quick-unlock
AFTER_REBOOT=/var/lib/systest/after-reboot

# The example as USER's app APP-ID in an app scope, its output to OUT (sets APP_PID).
quick_unlock_app() {  # USER APP-ID OUT ARGS...
    local user="$1" app="$2" out="$3"; shift 3
    in_user_scope "$user" app-gnome-quick env LOCALAUTH_APP_ID="$app" python3 /opt/systest/quick-unlock.py "$@" >"$out" 2>&1 &
    APP_PID=$!
}
quick_unlock_once() {  # USER APP-ID ARGS...: a call that asks for no finger; prints its line
    local out="$LOGS/quick-unlock-once.out"
    quick_unlock_app "$1" "$2" "$out" "${@:3}"; wait "$APP_PID"; cat "$out"
}
# getKey in a new process of USER's APP-ID, FINGER presented COUNT times
# when asked (- for none). Sets QU_RC, QU_OUT and QU_ASKED (the service's
# requests for a finger meanwhile).
quick_unlock_get() {  # USER APP-ID FINGER COUNT
    local out="$LOGS/quick-unlock-get.out" mark
    mark=$(status_mark)
    quick_unlock_app "$1" "$2" "$out" get "$QUICK_DB"
    [ "$3" = - ] || feed "$APP_PID" "$mark" "$3" "$4"
    wait "$APP_PID"; QU_RC=$?
    QU_OUT="$(cat "$out")"; QU_ASKED=$(( $(status_mark) - mark ))
    echo "getKey as $1's $2 (finger $3): rc=$QU_RC, $QU_ASKED request(s) for a finger: $(echo "$QU_OUT" | paste -sd'|')" >&2
}
# bob, another uid, naming the app's id (a process of his, no scope of his needed).
as_bob_quick_unlock() {  # ARGS...
    setpriv --reuid="$(uid_of bob)" --regid="$(id -g bob)" --init-groups --reset-env \
        env HOME=/home/bob PATH=/usr/bin:/bin LANG=C.UTF-8 LOCALAUTH_APP_ID="$QUICK_APP" python3 /opt/systest/quick-unlock.py "$@" 2>&1
}

# What must hold at every stage: a new process of alice's app gets the key
# with her finger (SHA: the digest `set` printed), not with another finger;
# another program of hers and bob get nothing, and no scan is asked for.
quick_unlock_holds() {  # SHA STAGE
    local sha="$1" stage="$2" out
    quick_unlock_get alice "$QUICK_APP" alice-right-index 1
    [ "$QU_RC" = 0 ] && [ "$(echo "$QU_OUT" | tail -n1)" = "get: ok sha256=$sha" ] ||
        why "$stage: her app's new process did not get its key with her finger: $QU_OUT" || return 1
    [ "$(echo "$QU_OUT" | head -n1)" = "status: place-finger" ] || why "$stage: the key came without a request for her finger" || return 1
    figure "$stage: her finger releases the key"
    quick_unlock_get alice "$QUICK_APP" someone-else 3
    [ "$QU_RC" != 0 ] && ! grep -q "get: ok" <<<"$QU_OUT" && grep -q "get: error -1 org.example.LocalAuth.Error.AuthenticationFailed" <<<"$QU_OUT" ||
        why "$stage: another finger was not refused with AuthenticationFailed: $QU_OUT" || return 1
    reset_lockout alice
    quick_unlock_get alice org.example.SomeOtherProgram - 0
    [ "$QU_RC" != 0 ] && [ "$QU_ASKED" = 0 ] && grep -q "get: error -10 org.example.LocalAuth.Error.RightNotFound" <<<"$QU_OUT" ||
        why "$stage: another program of alice's was not refused before any scan: $QU_OUT" || return 1
    out="$(as_bob_quick_unlock has "$QUICK_DB")"
    [ "$out" = "has: no" ] || why "$stage: bob, naming her app's id, sees a key: $out" || return 1
    local mark; mark=$(status_mark)
    out="$(as_bob_quick_unlock get "$QUICK_DB")"
    echo "getKey as bob naming $QUICK_APP: $out" >&2
    ! grep -q "get: ok" <<<"$out" && [ "$(status_mark)" = "$mark" ] || why "$stage: bob got a key or a scan: $out" || return 1
}

scenario_quick_unlock_key_survives_restarts() {
    local alice out sha before after package
    # fprintd-swap-and-purge, before, leaves only some of our packages: the
    # app needs the library and its typelib too.
    for package in localauthd localauth-tools liblocalauth-1-0 gir1.2-localauth-1.0; do
        [ "$(status_of $package)" = installed ] || apt_quiet install "$(ls $DEBS/${package}_*.deb)" || return 1
    done
    ensure_enrolled alice alice-right-index || return 1
    reset_lockout alice
    rm -rf "$QUICK_STATE" "$AFTER_REBOOT"
    alice="$(open_seat_session systest-display-alice alice user)" || return 1
    wait_for 20 "user@$(uid_of alice).service" is_active "user@$(uid_of alice).service" || return 1
    wait_for 5 "alice's display session $alice in front" is_seat_active "$alice" || return 1

    # setKey: a random key, shown only as its digest.
    out="$(quick_unlock_once alice "$QUICK_APP" set "$QUICK_DB")"
    sha="${out#set: ok sha256=}"
    [ -n "$sha" ] && [ "$out" = "set: ok sha256=$sha" ] || why "setKey failed: $out" || return 1
    [ "$(quick_unlock_once alice "$QUICK_APP" has "$QUICK_DB")" = "has: yes" ] || why "hasKey does not see the key just set" || return 1
    # A bad database id: a named error, nothing kept.
    out="$(quick_unlock_once alice "$QUICK_APP" set "../$QUICK_DB")"
    [ "$out" = "set: error -10 org.freedesktop.DBus.Error.InvalidArgs" ] || why "a bad database id: $out" || return 1
    [ "$(quick_unlock_once alice "$QUICK_APP" has "../$QUICK_DB")" = "has: error -10 org.freedesktop.DBus.Error.InvalidArgs" ] ||
        why "hasKey of a bad database id is not InvalidArgs" || return 1

    # 1. The app restarts: every getKey above is a new process.
    quick_unlock_holds "$sha" "app restarted" || return 1

    # 2. The service restarts.
    before="$(systemctl show -P MainPID localauthd)"
    systemctl restart localauthd || why "systemctl restart localauthd failed" || return 1
    wait_for 10 "localauthd to run again" is_active localauthd || return 1
    after="$(systemctl show -P MainPID localauthd)"
    [ "$before" != "$after" ] || why "localauthd kept its pid $before across the restart" || return 1
    quick_unlock_holds "$sha" "service restarted" || return 1

    # 3. The container reboots: the runner does it, then runs the second half.
    mkdir -p "$QUICK_STATE"; echo "$sha" > "$QUICK_STATE/sha"; touch /run/systest-quick-unlock-before-reboot
    echo quick_unlock_key_survives_restarts_after_reboot > "$AFTER_REBOOT"
}
scenario_quick_unlock_key_survives_restarts_after_reboot() {
    local alice sha
    sha="$(cat "$QUICK_STATE/sha" 2>/dev/null)" || why "no key was set before the reboot" || return 1
    rm -f "$AFTER_REBOOT"
    [ ! -e /run/systest-quick-unlock-before-reboot ] || why "the container did not reboot (/run kept its marker)" || return 1
    echo "boot: systemd since $(systemctl show -P UserspaceTimestamp), localauthd $(unit_state localauthd)" >&2
    alice="$(open_seat_session systest-display-alice alice user)" || return 1
    wait_for 20 "user@$(uid_of alice).service" is_active "user@$(uid_of alice).service" || return 1
    wait_for 5 "alice's display session $alice in front" is_seat_active "$alice" || return 1
    [ "$(quick_unlock_once alice "$QUICK_APP" has "$QUICK_DB")" = "has: yes" ] || why "hasKey lost the key across the reboot" || return 1
    quick_unlock_holds "$sha" "container rebooted" || return 1

    # reset: forgotten; getKey then fails at once, without a scan.
    [ "$(quick_unlock_once alice "$QUICK_APP" reset)" = "reset: ok" ] || why "reset failed" || return 1
    [ "$(quick_unlock_once alice "$QUICK_APP" has "$QUICK_DB")" = "has: no" ] || why "hasKey still sees the key after reset" || return 1
    quick_unlock_get alice "$QUICK_APP" - 0
    [ "$QU_RC" != 0 ] && [ "$QU_ASKED" = 0 ] && grep -q "get: error -10 org.example.LocalAuth.Error.RightNotFound" <<<"$QU_OUT" ||
        why "after reset, getKey did not fail at once with RightNotFound: $QU_OUT" || return 1
    rm -rf "$QUICK_STATE"
}
ALL+=(quick_unlock_key_survives_restarts)

# ------------------------------------------- where the finger is enough
# Issue 40, item 4 (docs/POLICY.md). The administrator's
# /etc/localauth/policy.conf turns the terminal context off: alice's sudo in
# her terminal scope gets no scan, the module answers PAM_AUTHINFO_UNAVAIL
# at once and her password (on sudo's stdin) is next. Her own choice
# (`localauthctl policy set admin off`, set here by root for her) turns the
# administrator dialogs off: Bitwarden's unlock through polkit's text agent
# goes straight to the password prompt inside polkit-agent-helper-1. Then
# the file is changed and `systemctl reload localauthd` (SIGHUP) makes the
# running service (the same pid) read it: her finger answers sudo again.
POLICY_CONF=/etc/localauth/policy.conf
undo_context_policy() {
    rm -f "$POLICY_CONF"; rmdir /etc/localauth 2>/dev/null
    rm -rf /var/lib/localauth/context-policy
    systemctl reload localauthd 2>/dev/null
    undo_password_manager_setup
}
scenario_context_policy_terminal_and_polkit() {
    local alice cursor mark pid rc t0 out="$LOGS/policy-app.log" uid before after elapsed package shown
    for package in localauthd localauth-tools libpam-localauth; do
        [ "$(status_of $package)" = installed ] || apt_quiet install "$(ls $DEBS/${package}_*.deb)" || return 1
    done
    uid=$(uid_of alice)
    ensure_enrolled alice alice-right-index || return 1
    reset_lockout alice
    rm -rf "$POLKIT_SCENARIO_SAVED"; mkdir -p "$POLKIT_SCENARIO_SAVED"
    trap undo_context_policy EXIT
    enable_module_in sudo || return 1
    install_password_manager_actions
    wait_for 10 "polkitd to know com.bitwarden.Bitwarden.unlock" pkaction --action-id com.bitwarden.Bitwarden.unlock || return 1
    write_polkit_app
    if ! grep -q pam_localauth /etc/pam.d/common-auth; then
        pam-auth-update --enable localauth || why "pam-auth-update --enable localauth failed" || return 1
        touch "$POLKIT_SCENARIO_SAVED/enabled-here"
    fi
    cp /etc/pam.d/common-auth "$POLKIT_SCENARIO_SAVED/common-auth"
    sed -i 's/pam_localauth.so timeout=15$/& debug/' /etc/pam.d/common-auth
    alice="$(open_seat_session systest-display-alice alice user)" || return 1
    wait_for 20 "user@$uid.service" is_active "user@$uid.service" || return 1
    wait_for 5 "alice's display session $alice in front" is_seat_active "$alice" || return 1

    # 1. The machine's policy: the terminal is off.
    mkdir -p /etc/localauth
    printf '# where the finger is enough (docs/POLICY.md)\nterminal = off\n' >"$POLICY_CONF"
    systemctl restart localauthd || why "localauthd did not start" || return 1
    cursor="$(journal_cursor)"; mark=$(status_mark); t0=$EPOCHREALTIME
    echo alice-password | in_user_scope alice vte-spawn sudo -S -k -p "" -v >"$LOGS/policy-sudo.log" 2>&1
    rc=$?; elapsed=$(since "$t0")
    echo "----- sudo, terminal off: rc=$rc in $elapsed s" >&2; cat "$LOGS/policy-sudo.log" >&2
    journal_of "$cursor" sudo >&2
    [ "$rc" = 0 ] || why "terminal off: sudo with her password failed" || return 1
    [ "$(status_mark)" = "$mark" ] || why "terminal off: the service asked for a finger" || return 1
    logged service_said "$cursor" "fingerprint refused by policy: terminal is off for uid $uid (the machine's policy $POLICY_CONF)" ||
        why "terminal off: the service logged no refusal" || return 1
    journal_of "$cursor" sudo | grep -q "pam_localauth(sudo:auth): fingerprint of alice: org.example.LocalAuth.Error.BiometryNotAvailable" ||
        why "terminal off: pam_localauth in sudo did not get BiometryNotAvailable" || return 1
    journal_of "$cursor" sudo | grep -q "authenticate alice: Authentication service cannot retrieve authentication info" ||
        why "terminal off: the module did not answer PAM_AUTHINFO_UNAVAIL" || return 1
    figure "sudo with terminal off: the password at once, $elapsed s in all"

    # 2. Her own choice: the administrator dialogs off (the machine allows them).
    localauthctl policy set admin off --user alice || why "localauthctl policy set admin off --user alice failed" || return 1
    shown="$(localauthctl policy show --user alice)" || why "localauthctl policy show --user alice failed" || return 1
    echo "$shown" >&2
    grep -q '^admin        on       off    not asked' <<<"$shown" || why "policy show does not show her choice" || return 1
    cursor="$(journal_cursor)"; mark=$(status_mark)
    app_asks_polkit alice bitwarden com.bitwarden.Bitwarden.unlock "$out" alice-password
    wait "$APP_PID"; rc=$?
    echo "----- bitwarden, admin off by her choice: rc=$rc" >&2; cat "$out" >&2
    journal_of "$cursor" polkit-agent-helper-1 >&2
    [ "$rc" = 0 ] || why "admin off: her password did not unlock Bitwarden (pkcheck $rc)" || return 1
    in_transcript "$out" "[app: answered the password prompt]" || why "admin off: polkit did not ask for the password" || return 1
    ! in_transcript "$out" "Place your finger" || why "admin off: the agent asked for a finger" || return 1
    [ "$(status_mark)" = "$mark" ] || why "admin off: the service asked for a finger" || return 1
    logged helper_said "$cursor" "fingerprint of alice: org.example.LocalAuth.Error.BiometryNotAvailable" ||
        why "admin off: pam_localauth in polkit-agent-helper-1 did not get BiometryNotAvailable" || return 1
    logged service_said "$cursor" "admin is off for uid $uid (the user's own choice); VerifyUser from /usr/lib/polkit-1/polkit-agent-helper-1" ||
        why "admin off: the service did not log the refusal with the helper as the program" || return 1

    # 3. SIGHUP: the file changed, the running service reads it again.
    localauthctl policy set admin on --user alice || return 1
    before=$(systemctl show -P MainPID localauthd)
    [ "$before" != 0 ] || why "localauthd is not running before the reload" || return 1
    printf 'terminal = on\napps = off\n' >"$POLICY_CONF"
    cursor="$(journal_cursor)"
    systemctl reload localauthd || why "systemctl reload localauthd failed" || return 1
    logged service_said "$cursor" "policy $POLICY_CONF read: the finger is off for apps" || why "the reload did not read the file again" || return 1
    after=$(systemctl show -P MainPID localauthd)
    [ "$before" = "$after" ] || why "the reload restarted the service ($before → $after)" || return 1
    mark=$(status_mark)
    in_user_scope alice vte-spawn sudo -S -k -p "" -v </dev/null >"$LOGS/policy-sudo-on.log" 2>&1 &
    pid=$!
    feed "$pid" "$mark" alice-right-index 1
    wait "$pid"; rc=$?
    cat "$LOGS/policy-sudo-on.log" >&2
    [ "$rc" = 0 ] || why "terminal on again: sudo did not take her finger" || return 1
    figure "SIGHUP reloaded the policy in pid $after"
}
ALL+=(context_policy_terminal_and_polkit)

# ------------------------------------------------------------------ runner
passed=0; failed=0
# The service's EvaluationStatus signals, for feed (the real bus's monitor).
dbus-monitor --system "type='signal',interface='$IFACE',member='EvaluationStatus'" >>"$STATUS_LOG" 2>&1 &
MONITOR=$!
trap 'kill $MONITOR 2>/dev/null' EXIT
sleep 0.3
if [ "${1:-}" = --after-reboot ]; then
    # The second halves of scenarios that asked the runner for a reboot
    # ($AFTER_REBOOT): our packages are installed already.
    shift; ALL=("$@")
elif [ $# -gt 0 ]; then
    ALL=("$@")
    # Every scenario needs our packages: a subset starts by installing them.
    [ "${1//-/_}" = apt_installs_the_packages ] || ALL=(apt_installs_the_packages "${ALL[@]}")
fi
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
    cleanup_between_scenarios >/dev/null 2>&1
    seconds=$(since "$t0")
    figures="$(sed -n 's/^FIGURE: //p' "$log" | paste -sd';' | sed 's/;/; /g')"
    if [ $rc = 0 ]; then
        echo "PASS ${name//_/-} (${seconds} s)${figures:+: $figures}"
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
