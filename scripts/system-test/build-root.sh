#!/bin/bash
# Prints the path of the system test's root filesystem for a Debian suite,
# building it first when the cache has none for this key:
#   build-root.sh [--suite SUITE] [--debs DIR]
#   mmdebstrap --variant=minbase --include=<packages> SUITE ROOT <sources>
# then, in the root, `apt-get satisfy` of what our packages in DIR depend on
# (their Depends and Pre-Depends as written in the .debs, our own packages
# and the -dev package left out: apt resolves them as it will when the scenarios install the
# .debs offline), then setup-root.sh. SUITE: bookworm (default) or trixie.
# The key is a SHA-256 of `packages`, `setup-root.sh`, the suite, the apt
# sources and those dependencies; a root of the same suite with another key
# is removed (one root is kept per suite, about 900 MB each). apt's lists
# and downloaded .debs stay in the root so the booted container (no network)
# can install Debian's fprintd again. Needs root, mmdebstrap and a Debian
# mirror.
# The sources: this machine's own (/etc/apt/sources.list.d/debian.sources)
# when it runs SUITE, else SUITE, SUITE-updates and SUITE-security of
# Debian's mirror (SYSTEST_MIRROR, SYSTEST_SECURITY_MIRROR); SYSTEST_SOURCES
# names a file to use instead.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
CACHE="${SYSTEST_CACHE:-/var/cache/localauth-system-test}"
SUITE="${SYSTEST_SUITE:-bookworm}"
DEBS=""
while [ $# -gt 0 ]; do
    case "$1" in
        --suite) SUITE="$2"; shift 2 ;;
        --debs) DEBS="$2"; shift 2 ;;
        *) echo "build-root.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
DEBS="${DEBS:-$REPO/out/debian/$SUITE}"

die() { echo "system-test: build-root: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "must run as root"
command -v mmdebstrap >/dev/null || die "mmdebstrap is not installed (scripts/install-deps.sh)"
[[ "$SUITE" =~ ^[a-z]+$ ]] || die "not a suite name: $SUITE"

HOST_SUITE="$(. /etc/os-release && echo "${VERSION_CODENAME:-}")"
MIRROR="${SYSTEST_MIRROR:-http://deb.debian.org/debian}"
SECURITY_MIRROR="${SYSTEST_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"
if [ -n "${SYSTEST_SOURCES:-}" ]; then
    SOURCES_TEXT="$(cat "$SYSTEST_SOURCES")" || die "cannot read $SYSTEST_SOURCES"
elif [ "$SUITE" = "$HOST_SUITE" ] && [ -r /etc/apt/sources.list.d/debian.sources ]; then
    SOURCES_TEXT="$(cat /etc/apt/sources.list.d/debian.sources)"
else
    SOURCES_TEXT="deb $MIRROR $SUITE main
deb $MIRROR $SUITE-updates main
deb $SECURITY_MIRROR $SUITE-security main"
fi

PACKAGES="$(sed 's/#.*//' "$HERE/packages" | tr -s ' \t\n' '\n' | grep -v '^$' | paste -sd, -)"
# What our packages depend on, as the .debs say it (the suite's own library
# package names: the build wrote them). Ours are installed from the .debs, so
# a group naming one of ours is left out.
ls "$DEBS"/*.deb >/dev/null 2>&1 || die "no packages in $DEBS (make deb SUITE=$SUITE)"
OURS="$(for deb in "$DEBS"/*.deb; do dpkg-deb -f "$deb" Package; done | sort -u)"
# The -dev package is not installed by any scenario.
DEPENDS="$(for deb in "$DEBS"/*.deb; do case "$deb" in *-dev_*) continue ;; esac
        dpkg-deb -f "$deb" Pre-Depends Depends | sed 's/^[A-Za-z-]*: //'; done |
    tr ',' '\n' | sed 's/^[ \t]*//; s/[ \t]*$//' | grep -v '^$' |
    awk -v ours="$(echo "$OURS" | paste -sd' ')" '
        BEGIN { n = split(ours, o, " "); for (i = 1; i <= n; i++) mine[o[i]] = 1 }
        { k = split($0, alt, "|"); skip = 0
          for (i = 1; i <= k; i++) { name = alt[i]; sub(/^[ \t]*/, "", name); sub(/[ \t(:].*/, "", name); if (name in mine) skip = 1 }
          if (!skip) print }' | sort -u | paste -sd, - | sed 's/,/, /g')"
[ -n "$DEPENDS" ] || die "could not read the dependencies of the packages in $DEBS"

KEY="$( { echo "$SUITE"; echo "$PACKAGES"; echo "$DEPENDS"; echo "$SOURCES_TEXT"; cat "$HERE/setup-root.sh"; } | sha256sum | cut -c1-16)"
ROOT="$CACHE/$SUITE-$KEY"
if [ -f "$ROOT/.systest-complete" ]; then
    echo "$ROOT"; exit 0
fi

mkdir -p "$CACHE"
# Roots of this suite with another key go (root-KEY: roots of the scripts
# before suites, which another checkout may still use, stay).
for old in "$CACHE/$SUITE"-*; do
    [ -e "$old" ] && [ "$old" != "$ROOT" ] && { echo "system-test: removing the old root $old" >&2; rm -rf --one-file-system "$old"; }
done
rm -rf --one-file-system "$ROOT" "$ROOT.tmp"
echo "system-test: building the root $ROOT (mmdebstrap $SUITE, $(echo "$PACKAGES" | tr , '\n' | wc -l) packages and our packages' dependencies)" >&2
echo "system-test: our packages depend on: $DEPENDS" >&2
start=$(date +%s)
# mmdebstrap reads a file of deb822 stanzas only by its .sources name.
SOURCES_FILE="$CACHE/.sources-$SUITE.list"
if grep -q '^Types:' <<<"$SOURCES_TEXT"; then SOURCES_FILE="$CACHE/.sources-$SUITE.sources"; fi
printf '%s\n' "$SOURCES_TEXT" > "$SOURCES_FILE"
mmdebstrap --variant=minbase --include="$PACKAGES" \
    --skip=cleanup/apt/lists --skip=cleanup/apt/cache \
    --customize-hook='chroot "$1" env DEBIAN_FRONTEND=noninteractive apt-get satisfy -y -q --no-install-recommends "'"$DEPENDS"'"' \
    --customize-hook='cp "'"$HERE"'/setup-root.sh" "$1/tmp/setup-root.sh" && chroot "$1" sh /tmp/setup-root.sh && rm "$1/tmp/setup-root.sh"' \
    "$SUITE" "$ROOT.tmp" "$SOURCES_FILE" >&2 || { rm -rf --one-file-system "$ROOT.tmp" "$SOURCES_FILE"; die "mmdebstrap failed"; }
rm -f "$SOURCES_FILE"
# apt's own clean-up in the container must not delete the .debs we keep.
rm -f "$ROOT.tmp/etc/apt/apt.conf.d/docker-clean"
chroot "$ROOT.tmp" dpkg-query -W -f='${Package} ${Version}\n' systemd polkitd fprintd gnome-keyring libfprint-2-2 > "$ROOT.tmp/.systest-complete" 2>/dev/null || true
mv "$ROOT.tmp" "$ROOT"
echo "system-test: root built in $(( $(date +%s) - start )) s: $(du -sh --one-file-system "$ROOT" | cut -f1)" >&2
echo "$ROOT"
