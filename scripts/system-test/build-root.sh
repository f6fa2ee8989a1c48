#!/bin/bash
# Prints the path of the system test's root filesystem, building it first
# when the cache has none for this package list:
#   mmdebstrap --variant=minbase --include=<packages> bookworm ROOT <sources>
# then setup-root.sh inside it. The key is a SHA-256 of `packages`,
# `setup-root.sh`, the suite, the apt sources and this machine's versions of
# the libraries our packages link (their shlibs); roots of other keys are
# removed (one root is kept, about 400 MB). apt's lists and downloaded
# .debs stay in the root so the booted container (no network) can install
# Debian's fprintd again. Needs root, mmdebstrap and a Debian mirror.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${SYSTEST_CACHE:-/var/cache/localauth-system-test}"
SUITE="${SYSTEST_SUITE:-bookworm}"
SOURCES="${SYSTEST_SOURCES:-/etc/apt/sources.list.d/debian.sources}"

die() { echo "system-test: build-root: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "must run as root"
command -v mmdebstrap >/dev/null || die "mmdebstrap is not installed (scripts/install-deps.sh)"
[ -r "$SOURCES" ] || die "no apt sources at $SOURCES (set SYSTEST_SOURCES)"

PACKAGES="$(sed 's/#.*//' "$HERE/packages" | tr -s ' \t\n' '\n' | grep -v '^$' | paste -sd, -)"
# Our .debs are built on this machine: their shlibs dependencies are the
# versions installed here. A root older than them could not install them
# offline, so this machine's versions of those libraries are part of the key.
HOST_LIBS="$(dpkg-query -W -f='${Package}=${Version}\n' libc6 libglib2.0-0 libfprint-2-2 libdbus-1-3 \
    libpolkit-gobject-1-0 libssl3 libpam0g libgtk-4-1 2>/dev/null | sort)"
KEY="$( { echo "$SUITE"; echo "$PACKAGES"; echo "$HOST_LIBS"; cat "$HERE/setup-root.sh" "$SOURCES"; } | sha256sum | cut -c1-16)"
ROOT="$CACHE/root-$KEY"
if [ -f "$ROOT/.systest-complete" ]; then
    echo "$ROOT"; exit 0
fi

mkdir -p "$CACHE"
for old in "$CACHE"/root-*; do
    [ -e "$old" ] && [ "$old" != "$ROOT" ] && { echo "system-test: removing the old root $old" >&2; rm -rf --one-file-system "$old"; }
done
rm -rf --one-file-system "$ROOT" "$ROOT.tmp"
echo "system-test: building the root $ROOT (mmdebstrap $SUITE, $(echo "$PACKAGES" | tr , '\n' | wc -l) packages)" >&2
start=$(date +%s)
mmdebstrap --variant=minbase --include="$PACKAGES" \
    --skip=cleanup/apt/lists --skip=cleanup/apt/cache \
    --customize-hook='cp "'"$HERE"'/setup-root.sh" "$1/tmp/setup-root.sh" && chroot "$1" sh /tmp/setup-root.sh && rm "$1/tmp/setup-root.sh"' \
    "$SUITE" "$ROOT.tmp" "$SOURCES" >&2 || { rm -rf --one-file-system "$ROOT.tmp"; die "mmdebstrap failed"; }
# apt's own clean-up in the container must not delete the .debs we keep.
rm -f "$ROOT.tmp/etc/apt/apt.conf.d/docker-clean"
touch "$ROOT.tmp/.systest-complete"
mv "$ROOT.tmp" "$ROOT"
echo "system-test: root built in $(( $(date +%s) - start )) s: $(du -sh --one-file-system "$ROOT" | cut -f1)" >&2
echo "$ROOT"
