#!/bin/bash
# Installs / uninstalls LocalAuth for `make install` / `make uninstall`.
#
#   scripts/install.sh install      copy the files, record a manifest
#   scripts/install.sh uninstall    remove what the manifest lists (or, with no
#                                   manifest, the files `install` would write)
#   scripts/install.sh list         print the paths `install` writes
#
# Settings come from the environment (the Makefile passes them):
#   DESTDIR          staging root, prepended to every path (default empty)
#   PREFIX           /usr/local
#   BINDIR           $PREFIX/bin           localauthctl
#   LIBEXECDIR       $PREFIX/libexec       localauthd (started by D-Bus, not by people)
#   DATADIR          $PREFIX/share
#   MANDIR           $DATADIR/man
#   DBUS_POLICYDIR   $DATADIR/dbus-1/system.d
#   DBUS_SERVICEDIR  $DATADIR/dbus-1/system-services
#   DBUS_IFACEDIR    $DATADIR/dbus-1/interfaces
#   POLKIT_ACTIONDIR $DATADIR/polkit-1/actions
#   UNITDIR          /lib/systemd/system for PREFIX=/usr, else $PREFIX/lib/systemd/system
#   USERUNITDIR      /usr/lib/systemd/user for PREFIX=/usr, else $PREFIX/lib/systemd/user
#   AUTOSTARTDIR     /etc/xdg/autostart     localauth-prompt.desktop (the sheet, every session)
#   PAMDIR           /usr/lib/<multiarch>/security  pam_localauth.so (PAM loads modules only
#                    from there by name, whatever PREFIX is)
#   PAMCONFIGDIR     /usr/share/pam-configs  the pam-auth-update profiles "localauth" and
#                    "localauth-reset-lockout" (off until the administrator turns them on:
#                    pam-auth-update --enable localauth localauth-reset-lockout)
#   PAM_MODULE       the built module (default .build/pam/pam_localauth.so: make pam)
#   BINARIES         directory holding the built localauthd and localauthctl
#   FPRINTD          yes: also install what replaces fprintd (docs/FPRINTD.md,
#                    the localauth-fprintd package): the drop-in that runs
#                    localauthd.service with --fprintd, net.reactivated.Fprint's
#                    activation file, bus policy, interfaces and polkit actions.
#                    These take over fprintd's own files: not beside fprintd.
#   MANIFEST         $DATADIR/localauth/install-manifest; empty: write none
#                    (the .deb has dpkg's own file list)
#
# The manifest lists, one per line, `f PATH` for each installed file and
# `d PATH` for each directory this installation created (paths as on the
# target system, without DESTDIR). `uninstall` removes exactly those files,
# then those directories if they are empty, then the manifest.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

DESTDIR="${DESTDIR:-}"
DESTDIR="${DESTDIR%/}"
PREFIX="${PREFIX:-/usr/local}"
BINDIR="${BINDIR:-$PREFIX/bin}"
LIBEXECDIR="${LIBEXECDIR:-$PREFIX/libexec}"
DATADIR="${DATADIR:-$PREFIX/share}"
MANDIR="${MANDIR:-$DATADIR/man}"
DBUS_POLICYDIR="${DBUS_POLICYDIR:-$DATADIR/dbus-1/system.d}"
DBUS_SERVICEDIR="${DBUS_SERVICEDIR:-$DATADIR/dbus-1/system-services}"
DBUS_IFACEDIR="${DBUS_IFACEDIR:-$DATADIR/dbus-1/interfaces}"
POLKIT_ACTIONDIR="${POLKIT_ACTIONDIR:-$DATADIR/polkit-1/actions}"
if [ -z "${UNITDIR:-}" ]; then
    # Debian 12 keeps packaged units in /lib/systemd/system (fprintd.service
    # is there); systemd also reads /usr/local/lib/systemd/system.
    if [ "$PREFIX" = /usr ]; then UNITDIR=/lib/systemd/system; else UNITDIR="$PREFIX/lib/systemd/system"; fi
fi
if [ -z "${USERUNITDIR:-}" ]; then
    if [ "$PREFIX" = /usr ]; then USERUNITDIR=/usr/lib/systemd/user; else USERUNITDIR="$PREFIX/lib/systemd/user"; fi
fi
AUTOSTARTDIR="${AUTOSTARTDIR:-/etc/xdg/autostart}"
MULTIARCH="$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)"
PAMDIR="${PAMDIR:-/usr/lib/$MULTIARCH/security}"
PAMCONFIGDIR="${PAMCONFIGDIR:-/usr/share/pam-configs}"
PAM_MODULE="${PAM_MODULE:-$REPO/.build/pam/pam_localauth.so}"
BINARIES="${BINARIES:-$REPO/.build/release}"
MANIFEST="${MANIFEST-$DATADIR/localauth/install-manifest}"
FPRINTD="${FPRINTD:-no}"

die() { echo "install.sh: $*" >&2; exit 1; }
case "$FPRINTD" in yes|no) ;; *) die "FPRINTD must be yes or no: $FPRINTD" ;; esac

for v in PREFIX BINDIR LIBEXECDIR DATADIR MANDIR DBUS_POLICYDIR DBUS_SERVICEDIR DBUS_IFACEDIR POLKIT_ACTIONDIR UNITDIR USERUNITDIR AUTOSTARTDIR PAMDIR PAMCONFIGDIR; do
    case "${!v}" in /*) ;; *) die "$v must be an absolute path: ${!v}" ;; esac
done

# MODE SOURCE TARGET: what gets installed. Sources ending in .in are
# templates: @LIBEXECDIR@, @DATADIR@, @UNITDIR@ are replaced.
files() {
    cat <<EOF
0755 $BINARIES/localauthctl $BINDIR/localauthctl
0755 $BINARIES/localauthd $LIBEXECDIR/localauthd
0644 $REPO/dbus/org.example.LocalAuth.conf $DBUS_POLICYDIR/org.example.LocalAuth.conf
0644 $REPO/dbus/org.example.LocalAuth.service.in $DBUS_SERVICEDIR/org.example.LocalAuth.service
0644 $REPO/dbus/org.example.LocalAuth.xml $DBUS_IFACEDIR/org.example.LocalAuth.xml
0644 $REPO/dbus/org.example.LocalAuth.PromptAgent.xml $DBUS_IFACEDIR/org.example.LocalAuth.PromptAgent.xml
0755 $BINARIES/localauth-prompt $LIBEXECDIR/localauth-prompt
0644 $REPO/data/localauth-prompt.desktop.in $AUTOSTARTDIR/localauth-prompt.desktop
0644 $REPO/data/localauth-prompt.service.in $USERUNITDIR/localauth-prompt.service
0644 $REPO/polkit/org.example.LocalAuth.policy $POLKIT_ACTIONDIR/org.example.LocalAuth.policy
0644 $REPO/polkit/org.example.LocalAuth.rights.policy $POLKIT_ACTIONDIR/org.example.LocalAuth.rights.policy
0644 $REPO/systemd/localauthd.service.in $UNITDIR/localauthd.service
0644 $REPO/man/localauthd.8.in $MANDIR/man8/localauthd.8
0644 $REPO/man/localauthctl.1 $MANDIR/man1/localauthctl.1
0644 $PAM_MODULE $PAMDIR/pam_localauth.so
0644 $REPO/pam/pam-config $PAMCONFIGDIR/localauth
0644 $REPO/pam/pam-config-reset-lockout $PAMCONFIGDIR/localauth-reset-lockout
0644 $REPO/pam/pam-config-keyring $PAMCONFIGDIR/localauth-keyring
0644 $REPO/pam/pam_localauth.8 $MANDIR/man8/pam_localauth.8
EOF
    [ "$FPRINTD" = yes ] || return 0
    cat <<EOF
0644 $REPO/packaging/fprintd/fprintd.conf.in $UNITDIR/localauthd.service.d/fprintd.conf
0644 $REPO/packaging/fprintd/net.reactivated.Fprint.service.in $DBUS_SERVICEDIR/net.reactivated.Fprint.service
0644 $REPO/dbus/net.reactivated.Fprint.conf $DBUS_POLICYDIR/net.reactivated.Fprint.conf
0644 $REPO/dbus/net.reactivated.Fprint.Manager.xml $DBUS_IFACEDIR/net.reactivated.Fprint.Manager.xml
0644 $REPO/dbus/net.reactivated.Fprint.Device.xml $DBUS_IFACEDIR/net.reactivated.Fprint.Device.xml
0644 $REPO/polkit/net.reactivated.fprint.device.policy $POLKIT_ACTIONDIR/net.reactivated.fprint.device.policy
EOF
}

substitute() {  # SOURCE -> stdout
    sed -e "s|@LIBEXECDIR@|$LIBEXECDIR|g" -e "s|@DATADIR@|$DATADIR|g" -e "s|@UNITDIR@|$UNITDIR|g" "$1"
}

# Creates DIR (a target path) and its missing parents; prints each created one.
make_dirs() {
    local dir="$1" missing=()
    while [ "$dir" != / ] && [ ! -d "$DESTDIR$dir" ]; do
        missing=("$dir" "${missing[@]}")
        dir="$(dirname "$dir")"
    done
    for dir in "${missing[@]}"; do
        mkdir -m 0755 "$DESTDIR$dir"
        echo "d $dir"
    done
}

cmd_install() {
    local mode source target
    for binary in localauthd localauthctl localauth-prompt; do
        [ -x "$BINARIES/$binary" ] || die "$BINARIES/$binary not built (make build-release, or set BINARIES=)"
    done
    [ -f "$PAM_MODULE" ] || die "$PAM_MODULE not built (make pam, or set PAM_MODULE=)"
    [ -z "$DESTDIR" ] || mkdir -p "$DESTDIR"
    record="$(mktemp)"
    tmp="$(mktemp)"
    trap 'rm -f "$record" "$tmp"' EXIT
    # Directories recorded by an earlier installation stay ours.
    if [ -n "$MANIFEST" ] && [ -f "$DESTDIR$MANIFEST" ]; then
        grep '^d ' "$DESTDIR$MANIFEST" >>"$record" || true
    fi
    while read -r mode source target; do
        make_dirs "$(dirname "$target")" >>"$record"
        case "$source" in
            *.in) substitute "$source" >"$tmp"; source="$tmp" ;;
        esac
        install -m "$mode" "$source" "$DESTDIR$target"
        echo "f $target" >>"$record"
    done < <(files)
    if [ -n "$MANIFEST" ]; then
        make_dirs "$(dirname "$MANIFEST")" >>"$record"
        # the manifest lists itself, so `uninstall` removes it like the rest
        echo "f $MANIFEST" >>"$record"
        LC_ALL=C sort -u "$record" >"$DESTDIR$MANIFEST"
        chmod 0644 "$DESTDIR$MANIFEST"
    fi
    echo "installed LocalAuth into ${DESTDIR:-/} (PREFIX=$PREFIX)"
    notes
}

# Where the system's own daemons would not look.
notes() {
    [ -z "$DESTDIR" ] || return 0
    case "$DBUS_POLICYDIR" in
        /usr/share/dbus-1/system.d|/etc/dbus-1/system.d) ;;
        *) echo "note: dbus-daemon reads bus policies only from /usr/share/dbus-1/system.d and /etc/dbus-1/system.d;" \
                "install with DBUS_POLICYDIR=/etc/dbus-1/system.d (or PREFIX=/usr) for the system bus to let localauthd own its name" >&2 ;;
    esac
    case "$POLKIT_ACTIONDIR" in
        /usr/share/polkit-1/actions) ;;
        *) echo "note: polkitd reads actions only from /usr/share/polkit-1/actions;" \
                "install with POLKIT_ACTIONDIR=/usr/share/polkit-1/actions (or PREFIX=/usr)" >&2 ;;
    esac
    case "$DBUS_SERVICEDIR" in
        /usr/share/dbus-1/system-services|/usr/local/share/dbus-1/system-services|/lib/dbus-1/system-services) ;;
        *) echo "note: $DBUS_SERVICEDIR is not one of the system bus's activation directories" >&2 ;;
    esac
    echo "note: reload the system bus (systemctl reload dbus) for the bus policy; polkitd loads new actions by itself" >&2
}

cmd_uninstall() {
    local kind path
    list="$(mktemp)"
    trap 'rm -f "$list"' EXIT
    if [ -n "$MANIFEST" ] && [ -f "$DESTDIR$MANIFEST" ]; then
        cp "$DESTDIR$MANIFEST" "$list"
    else
        echo "install.sh: no manifest ${MANIFEST:+at $DESTDIR$MANIFEST}; removing the files install would write" >&2
        files | while read -r _ _ path; do echo "f $path"; done >"$list"
    fi
    while read -r kind path; do
        [ "$kind" = f ] || continue
        case "$path" in /*) ;; *) die "bad manifest line: $kind $path" ;; esac
        rm -f -- "$DESTDIR$path"
    done <"$list"
    # deepest directories first; only empty ones go
    grep '^d ' "$list" | cut -c3- | awk '{ print length($0) " " $0 }' | sort -rn | cut -d' ' -f2- |
        while read -r path; do
            rmdir --ignore-fail-on-non-empty -- "$DESTDIR$path" 2>/dev/null || true
        done
    echo "uninstalled LocalAuth from ${DESTDIR:-/} (PREFIX=$PREFIX)"
}

case "${1:-}" in
    install) cmd_install ;;
    uninstall) cmd_uninstall ;;
    list) files | while read -r _ _ path; do echo "$path"; done; [ -z "$MANIFEST" ] || echo "$MANIFEST" ;;
    *) sed -n '2,/^$/{s/^# \{0,1\}//;p}' "$0" >&2; exit 2 ;;
esac
