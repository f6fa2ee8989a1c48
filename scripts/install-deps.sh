#!/bin/bash
# Install the Debian packages that building, testing and the demo need.
# Non-interactive, quiet, idempotent: packages already installed are skipped,
# and apt-get update runs only when something has to be installed.
set -euo pipefail

PACKAGES=(
    # build: C libraries imported into Swift through pkg-config
    pkg-config
    libdbus-1-dev            # dbus-1
    libfprint-2-dev          # libfprint-2 (its virtual_device driver is in libfprint-2-2)
    libpolkit-gobject-1-dev  # polkit-gobject-1
    libglib2.0-dev           # glib-2.0 / gio-2.0 (libfprint and polkit headers need it)
    make
    # test rig (scripts/rig.sh): private bus, real polkitd, baseline fprintd
    dbus-daemon              # /usr/bin/dbus-daemon
    dbus-bin                 # dbus-send (rig readiness checks)
    polkitd                  # /usr/lib/polkit-1/polkitd, pkcheck, pkaction
    fprintd                  # /usr/libexec/fprintd, fprintd-enroll/-verify, its bus policy
    libglib2.0-bin           # gdbus (tests read D-Bus error names from it)
    systemd                  # busctl (tests and README drive the service with it)
    util-linux               # setpriv, setsid, unshare
    passwd                   # useradd, chpasswd: the password tests' account
    python3                  # virtual sensor commands (scripts/rig.sh vfp)
    python3-dbus             # tests and benchmarks driving fprintd from one connection
    python3-gi               # the security tests' hostile polkit agent and callers (GLib main loop)
    strace                   # the reliability suite slows the service's fsync/rename to kill inside a write
)

missing=()
for p in "${PACKAGES[@]}"; do
    if [ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)" != installed ]; then
        missing+=("$p")
    fi
done

if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: all ${#PACKAGES[@]} packages present"
    exit 0
fi

SUDO=()
[ "$(id -u)" = 0 ] || SUDO=(sudo)
export DEBIAN_FRONTEND=noninteractive
echo "install-deps: installing ${missing[*]}"
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
    "${missing[@]}" >/dev/null
echo "install-deps: done"
