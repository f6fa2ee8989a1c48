#!/bin/bash
# Builds the package and its tests with the Swift a Debian suite ships
# (its `swiftlang`), in a buildd root of that suite, so that a change that
# breaks an older Swift fails here and not in a distribution's build:
#   scripts/distro-build.sh SUITE [--test] [--root] [--shell]
# SUITE: trixie (Debian 13, swiftlang 6.0.3), sid, or any suite that has
# swiftlang. `make distro-build SUITE=trixie` runs it; `make test` (CI) runs
# it for trixie.
#   (default)  swift build, then swift build --build-tests
#   --test     then the unit tests too (every test target but EndToEndTests,
#              and RigSupport's), XCTest only
#   --root     only build the root (if not cached) and print its path
#   --shell    a shell in the root, set up as for the build
# The root: mmdebstrap --variant=buildd --include=swiftlang,<Build-Depends of
# debian/control but debhelper's>,<what the unit tests run> SUITE, cached
# under $DISTRO_ROOTS (/var/cache/localauth-build-roots) as SUITE-KEY, KEY a
# hash of the suite, the package list and the mirror; roots of the suite with
# another key are removed. It is never written to: each build runs in its own
# mount, network and pid namespace (unshare) where the root is mounted read-only,
# the source tree read-only at /src, /proc, a tmpfs /tmp, and the build's
# scratch directory (.build/distro/SUITE of the tree, kept between builds:
# incremental) at /scratch; no network (only a loopback, for the TPM
# tests' swtpm); everything started inside ends with the build. What is built
# is the working tree as it is (uncommitted changes too). Needs root,
# mmdebstrap, unshare and a Debian mirror for the first root
# (docs/PACKAGING.md, "Other Swift versions").
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
ROOTS="${DISTRO_ROOTS:-/var/cache/localauth-build-roots}"
MIRROR="${DISTRO_MIRROR:-http://deb.debian.org/debian}"

die() { echo "distro-build: $*" >&2; exit 1; }
say() { echo "distro-build: $*" >&2; }
elapsed() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }'; }

SUITE=""
MODE=build
while [ $# -gt 0 ]; do
    case "$1" in
        --test) MODE=test ;;
        --root) MODE=root ;;
        --shell) MODE=shell ;;
        -h|--help) sed -n '2,/^set/{/^set/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        -*) die "unknown option $1 (--help)" ;;
        *) [ -z "$SUITE" ] || die "one suite only"; SUITE="$1" ;;
    esac
    shift
done
[ -n "$SUITE" ] || die "which suite? (scripts/distro-build.sh trixie)"
[[ "$SUITE" =~ ^[a-z0-9-]+$ ]] || die "not a suite name: $SUITE"
[ "$(id -u)" = 0 ] || die "must run as root (mmdebstrap, chroot, mounts)"
command -v unshare >/dev/null || die "unshare is not installed (util-linux)"

# The packages: Debian's Swift, what debian/control says the build needs
# (debhelper's own entries aside: this builds with SwiftPM, not dh), and what
# the unit tests run: openssl (the crypto tests check against it), swtpm and
# its TCTI (the TPM tests), dbus-daemon (DBusCoreTests' private bus).
build_depends() {
    sed -n '/^Build-Depends:/,/^[^ #]/{/^Build-Depends:/{s/^Build-Depends://;p;d};/^[ \t]/p}' "$REPO/debian/control" |
        sed 's/#.*//' | tr ',' '\n' | sed 's/[[(<].*//; s/[ \t]//g' | grep -v '^$' |
        grep -v '^debhelper' | grep -v '^dh-'
}
PACKAGES="$( { echo swiftlang; build_depends; printf '%s\n' openssl swtpm libtss2-tcti-swtpm0 dbus-daemon; } |
    sort -u | paste -sd, -)"
[[ "$PACKAGES" == *libdbus-1-dev* ]] || die "could not read Build-Depends from debian/control"
# sid's Release file is valid for a week only: a mirror that is a snapshot
# (this project's machines) would be refused without this.
APTOPT='Acquire::Check-Valid-Until "false"'
KEY="$(printf '%s\n' "$SUITE" "$PACKAGES" "$MIRROR" "$APTOPT" | sha256sum | cut -c1-16)"
ROOT="$ROOTS/$SUITE-$KEY"

build_root() {
    command -v mmdebstrap >/dev/null || die "mmdebstrap is not installed (apt-get install mmdebstrap)"
    mkdir -p "$ROOTS"
    # Two builds at once wait for one root.
    exec 9>"$ROOTS/.$SUITE.lock"
    flock 9
    if [ -f "$ROOT/.distro-root-complete" ]; then exec 9>&-; return; fi
    for old in "$ROOTS/$SUITE"-*; do
        [ -e "$old" ] && [ "$old" != "$ROOT" ] && { say "removing the old root $old"; rm -rf --one-file-system "$old"; }
    done
    say "building the root $ROOT (mmdebstrap --variant=buildd $SUITE, $(echo "$PACKAGES" | tr , '\n' | wc -l) packages)"
    local start=$EPOCHREALTIME
    mmdebstrap --variant=buildd --include="$PACKAGES" --aptopt="$APTOPT" \
        --customize-hook='mkdir -p "$1/src" "$1/scratch"' \
        "$SUITE" "$ROOT.tmp" "deb $MIRROR $SUITE main" >&2 || { rm -rf --one-file-system "$ROOT.tmp"; die "mmdebstrap failed"; }
    chroot "$ROOT.tmp" dpkg-query -W -f='${Package} ${Version}\n' swiftlang > "$ROOT.tmp/.distro-root-complete"
    mv "$ROOT.tmp" "$ROOT"
    say "root built in $(elapsed "$start") s: $(du -sh --one-file-system "$ROOT" | cut -f1), $(cat "$ROOT/.distro-root-complete")"
    exec 9>&-
}

[ -f "$ROOT/.distro-root-complete" ] || build_root
if [ "$MODE" = root ]; then echo "$ROOT"; exit 0; fi

SCRATCH="$REPO/.build/distro/$SUITE"
mkdir -p "$SCRATCH/home"

# What runs inside the root, from /src. A separate scratch path for
# RigSupport: a package's tests build under its own scratch path.
read -r -d '' INSIDE <<'SCRIPT' || true
set -eu -o pipefail
export HOME=/root PATH=/usr/bin:/bin:/usr/sbin:/sbin LANG=C.UTF-8
cd /src
swift --version 2>&1 | head -n 1
# SwiftPM 6.0 lists the tests (on Linux) in a file it generates and compiles
# in Swift 5 mode, where each async test isolated to ServiceActor warns that
# its XCTestCase class is not Sendable: 700 lines about SwiftPM's code, not
# ours (6.2 and 6.3 give none). They are counted, not shown.
quiet() {
    awk '/^<unknown>:0: warning: passing argument of non-sendable type .[A-Za-z]*Tests. into global actor/ { n++; next }
         { print } END { if (n) print "distro-build: (" n " warnings of SwiftPM'"'"'s generated test list not shown)" }'
}
t() {
    local s rc=0
    s=$(date +%s)
    "$@" 2>&1 | quiet || rc=$?
    echo "distro-build: $(( $(date +%s) - s )) s: $*$([ $rc = 0 ] || echo ": FAILED ($rc)")" >&2
    return $rc
}
# The tests are XCTest's (--disable-swift-testing). Yet SwiftPM 6.2's test
# runner imports Testing whenever the toolchain has it, and with Foundation
# that brings in swift-testing's Foundation overlay, _Testing_Foundation,
# whose library Debian's swiftlang does not ship (sid's 6.2.3: its module
# only): "cannot find -l_Testing_Foundation". Nothing here uses the
# overlay, so it is not imported there (the same flags for every build,
# or each would rebuild everything).
lib=/usr/libexec/swift/lib/swift/linux
FLAGS=""
if [ -e $lib/Testing.swiftcrossimport ] && [ ! -e $lib/lib_Testing_Foundation.so ]; then
    FLAGS="-Xswiftc -Xfrontend -Xswiftc -disable-cross-import-overlays"
fi
t swift build --scratch-path /scratch/build $FLAGS
t swift build --scratch-path /scratch/build --build-tests --disable-swift-testing $FLAGS
if [ "$MODE" = test ]; then
    failed=0
    t swift test --scratch-path /scratch/build --skip-build --disable-swift-testing --skip '^EndToEndTests\.' $FLAGS || failed=1
    t swift test --scratch-path /scratch/rigsupport --package-path Tools/RigSupport --disable-swift-testing $FLAGS || failed=1
    exit $failed
fi
SCRIPT
[ "$MODE" != shell ] || INSIDE='export HOME=/root PATH=/usr/bin:/bin:/usr/sbin:/sbin LANG=C.UTF-8; cd /src; exec bash -i'

# The namespace: mounts that vanish with it, no network, its own pids (the
# build's children cannot outlive it).
start=$EPOCHREALTIME
say "$SUITE: $(cat "$ROOT/.distro-root-complete"), $MODE, $REPO"
unshare --mount --net --pid --fork --kill-child --propagation private \
    env ROOT="$ROOT" REPO="$REPO" SCRATCH="$SCRATCH" MODE="$MODE" INSIDE="$INSIDE" bash -euc '
    mount --bind "$ROOT" "$ROOT"
    mount -o remount,bind,ro "$ROOT"
    mount --bind "$REPO" "$ROOT/src"
    mount -o remount,bind,ro "$ROOT/src"
    mount --bind "$SCRATCH" "$ROOT/scratch"
    mount --bind "$SCRATCH/home" "$ROOT/root"
    mount -t proc proc "$ROOT/proc"
    mount -t tmpfs -o mode=1777 tmpfs "$ROOT/tmp"
    mount -t tmpfs -o mode=1777 tmpfs "$ROOT/dev/shm" 2>/dev/null || true
    ip link set lo up
    exec chroot "$ROOT" env MODE="$MODE" bash -c "$INSIDE"
'
say "$SUITE: done in $(elapsed "$start") s"
