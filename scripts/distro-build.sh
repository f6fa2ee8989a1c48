#!/bin/bash
# Builds the package and its tests with the Swift a Debian suite ships
# (its `swiftlang`), in a buildd root of that suite, so that a change that
# breaks an older Swift fails here and not in a distribution's build:
#   scripts/distro-build.sh SUITE [--test] [--root] [--shell]
#   scripts/distro-build.sh SUITE --deb [--out DIR] [--root] [--shell]
# SUITE: trixie (Debian 13, swiftlang 6.0.3), sid, or any suite that has
# swiftlang; for --deb also bookworm (Debian 12, swift.org's toolchain).
# `make distro-build SUITE=trixie` runs it; `make test` (CI) runs it for
# trixie. `make deb SUITE=...` runs --deb.
#   (default)  swift build, then swift build --build-tests
#   --test     then the unit tests too (every test target but EndToEndTests,
#              and RigSupport's), XCTest only
#   --deb      the Debian packages, as a Debian builder builds them: the
#              source package (dpkg-source -b of the tree), then
#              dpkg-buildpackage -b of it unpacked, as an unprivileged user,
#              in a root with nothing but build-essential and its
#              Build-Depends, no network; the .debs, .buildinfo, .changes,
#              .dsc and .tar.xz go to DIR (out/debian/SUITE), then the
#              suite's own lintian checks them (below)
#   --root     only build the root (if not cached) and print its path
#   --shell    a shell in the root, set up as for the build
# The root: mmdebstrap --variant=buildd SUITE, then `apt-get build-dep` of
# debian/control (Build-Depends with their alternatives, versions and build
# profiles, as a buildd resolves them) and, but for --deb, what the unit
# tests run (swiftlang, openssl, swtpm and its TCTI, dbus-daemon). Cached
# under $DISTRO_ROOTS (/var/cache/localauth-build-roots) as SUITE-KEY (--deb:
# SUITE-deb-KEY), KEY a hash of the suite, Build-Depends, the packages and
# the mirror; roots of the suite and kind with another key are removed.
# --deb on a suite without swiftlang (bookworm) builds with the build profile
# pkg.localauth.upstream-swift: swift.org's toolchain, the one the Makefile
# puts on PATH (/opt/swift), is mounted read-only in the root and put on
# PATH (the only thing from this machine in the build); its run-time
# libraries are the profile's Build-Depends. lintian: the suite's own, whose
# packages the root keeps downloaded (not installed); it is installed into a
# throw-away overlay of the root for the check, which fails on any error or
# warning (the report shows pedantic and info tags too). The root is never
# written to: each build runs in its own
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
KIND=test
OUT=""
ONLY_ROOT=""
while [ $# -gt 0 ]; do
    case "$1" in
        --test) MODE=test ;;
        --deb) KIND=deb; [ "$MODE" != build ] || MODE=deb ;;
        --out) OUT="$2"; shift ;;
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
command -v ip >/dev/null || die "ip is not installed (iproute2): the build's loopback needs it"

# The packages: build-essential (the buildd variant), debian/control's
# Build-Depends resolved by apt-get build-dep (with PROFILES), and for the
# unit tests (not --deb) Debian's Swift and what they run: openssl (the
# crypto tests check against it), swtpm and its TCTI (the TPM tests),
# dbus-daemon (DBusCoreTests' private bus).
BUILD_DEPENDS="$(sed -n '/^Build-Depends:/,/^[^ #]/{/^Build-Depends:/{s/^Build-Depends://;p;d};/^[ \t]/p}' "$REPO/debian/control" |
    sed 's/#.*//' | tr -s ' \t\n' ' ')"
[[ "$BUILD_DEPENDS" == *libdbus-1-dev* ]] || die "could not read Build-Depends from debian/control"
PROFILES=""
UPSTREAM_SWIFT=""
if [ "$KIND" = deb ]; then
    # Debian 12 has no swiftlang: swift.org's toolchain (debian/control).
    case "$SUITE" in bookworm|bullseye) UPSTREAM_SWIFT=1 ;; esac
    [ -z "${DISTRO_UPSTREAM_SWIFT:-}" ] || UPSTREAM_SWIFT=1
    [ -z "$UPSTREAM_SWIFT" ] || PROFILES=pkg.localauth.upstream-swift
    PACKAGES=""
else
    PACKAGES="swiftlang,openssl,swtpm,libtss2-tcti-swtpm0,dbus-daemon"
fi
# sid's Release file is valid for a week only: a mirror that is a snapshot
# (this project's machines) would be refused without this.
APTOPT='Acquire::Check-Valid-Until "false"'
KEY="$(printf '%s\n' "$SUITE" "$KIND" "$BUILD_DEPENDS" "$PROFILES" "$PACKAGES" "$MIRROR" "$APTOPT" | sha256sum | cut -c1-16)"
if [ "$KIND" = deb ]; then ROOT="$ROOTS/$SUITE-deb-$KEY"; else ROOT="$ROOTS/$SUITE-$KEY"; fi
# A root of the same suite and kind with another key.
is_old_root() {
    local name="${1##*/}"
    name="${name%.tmp}"
    if [ "$KIND" = deb ]; then [[ "$name" =~ ^$SUITE-deb-[0-9a-f]{16}$ ]]; else [[ "$name" =~ ^$SUITE-[0-9a-f]{16}$ ]]; fi
}

build_root() {
    command -v mmdebstrap >/dev/null || die "mmdebstrap is not installed (apt-get install mmdebstrap)"
    mkdir -p "$ROOTS"
    # Two builds at once wait for one root.
    exec 9>"$ROOTS/.$SUITE.lock"
    flock 9
    if [ -f "$ROOT/.distro-root-complete" ]; then exec 9>&-; return; fi
    # Only this script's roots of this suite and kind (SUITE-<16 hex digits>,
    # SUITE-deb-<16 hex digits>): the directory may hold others'.
    for old in "$ROOTS/$SUITE"-*; do
        [ -e "$old" ] && [ "$old" != "$ROOT" ] && is_old_root "$old" && { say "removing the old root $old"; rm -rf --one-file-system "$old"; }
    done
    say "building the root $ROOT (mmdebstrap --variant=buildd $SUITE, Build-Depends${PROFILES:+ (profile $PROFILES)}${PACKAGES:+, $PACKAGES})"
    local start=$EPOCHREALTIME
    local control; control="$(mktemp -d)"
    mkdir "$control/debian" && cp "$REPO/debian/control" "$control/debian/control"
    # --deb: lintian's packages are downloaded, not installed (the build sees
    # only Build-Depends); the builder is an unprivileged user, as on a buildd.
    local deb_hooks=()
    [ "$KIND" != deb ] || deb_hooks=(
        --customize-hook='mkdir -p "$1/var/cache/lintian-debs/partial" && chroot "$1" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends --download-only -o Dir::Cache::Archives=/var/cache/lintian-debs lintian && rm -rf "$1/var/cache/lintian-debs/partial" "$1/var/cache/lintian-debs/lock"'
        --customize-hook='chroot "$1" useradd --create-home --uid 2000 --user-group --shell /bin/sh builder && mkdir -p "$1/build" "$1/opt/swift-toolchain"')
    mmdebstrap --variant=buildd ${PACKAGES:+--include="$PACKAGES"} --aptopt="$APTOPT" \
        --customize-hook='mkdir -p "$1/src" "$1/scratch" "$1/tmp/control"' \
        --customize-hook='copy-in '"$control/debian"' /tmp/control' \
        --customize-hook='chroot "$1" env DEBIAN_FRONTEND=noninteractive apt-get build-dep -y -q --no-install-recommends '"${PROFILES:+-P $PROFILES}"' /tmp/control && rm -rf "$1/tmp/control"' \
        "${deb_hooks[@]}" \
        "$SUITE" "$ROOT.tmp" "deb $MIRROR $SUITE main" >&2 || { rm -rf --one-file-system "$ROOT.tmp" "$control"; die "mmdebstrap failed"; }
    rm -rf "$control"
    chroot "$ROOT.tmp" dpkg-query -W -f='${Package} ${Version}\n' swiftlang debhelper dpkg-dev 2>/dev/null | paste -sd, - | sed 's/,/, /g' > "$ROOT.tmp/.distro-root-complete" || true
    mv "$ROOT.tmp" "$ROOT"
    say "root built in $(elapsed "$start") s: $(du -sh --one-file-system "$ROOT" | cut -f1), $(cat "$ROOT/.distro-root-complete")"
    exec 9>&-
}

[ -f "$ROOT/.distro-root-complete" ] || build_root
if [ "$MODE" = root ]; then echo "$ROOT"; exit 0; fi

# --deb: the source package from the tree, built as a buildd builds it.
if [ "$KIND" = deb ]; then
    VERSION="$(cat "$REPO/VERSION")"
    OUT="${OUT:-$REPO/out/debian/$SUITE}"
    WORK="$REPO/.build/distro/$SUITE-deb"
    TOOLCHAIN=""
    if [ -n "$UPSTREAM_SWIFT" ]; then
        swift="$(command -v swift || true)"
        [ -n "$swift" ] || die "$SUITE has no swiftlang: put swift.org's toolchain on PATH (the Makefile adds /opt/swift/usr/bin)"
        TOOLCHAIN="$(cd "$(dirname "$(readlink -f "$swift")")/../.." && pwd)"
        [ -x "$TOOLCHAIN/usr/bin/swift-build" ] || die "no toolchain around $swift ($TOOLCHAIN/usr/bin/swift-build)"
    fi
    # The tree as it is: tracked files and new ones git does not ignore
    # (uncommitted changes too), never build output.
    rm -rf --one-file-system "$WORK"
    mkdir -p "$WORK/localauth-$VERSION"
    (cd "$REPO" && git ls-files -z --cached --others --exclude-standard |
        while IFS= read -r -d '' f; do [ -e "$f" ] || [ -L "$f" ] && printf '%s\0' "$f"; done |
        tar --null --no-recursion -cf - -T -) | tar -xf - -C "$WORK/localauth-$VERSION"
    [ -z "$(cd "$REPO" && git status --porcelain 2>/dev/null)" ] || say "the tree has uncommitted changes: they are built too"
    BUILDER="$(awk -F: '$1 == "builder" { print $3 ":" $4 }' "$ROOT/etc/passwd")"
    [ -n "$BUILDER" ] || die "the root has no builder account"
    chown -R "$BUILDER" "$WORK"
    JOBS="$(nproc)"
    read -r -d '' INSIDE <<'SCRIPT' || true
set -eu
cd /build
t() { local s=$(date +%s) rc=0; "$@" || rc=$?; echo "distro-build: $(( $(date +%s) - s )) s: $*$([ $rc = 0 ] || echo ": FAILED ($rc)")" >&2; return $rc; }
swift --version 2>&1 | head -n 1
t dpkg-source -b "localauth-$VERSION"
rm -rf "localauth-$VERSION"
dpkg-source -x "localauth_$VERSION.dsc" "localauth-$VERSION"
cd "localauth-$VERSION"
t dpkg-buildpackage -us -uc -b ${PROFILES:+-P$PROFILES}
SCRIPT
    [ "$MODE" != shell ] || INSIDE='cd /build; exec bash -i'
    start=$EPOCHREALTIME
    say "$SUITE: $(cat "$ROOT/.distro-root-complete")${TOOLCHAIN:+, the swift.org toolchain in $TOOLCHAIN}${PROFILES:+, profile $PROFILES}; building the packages (no network, as the user builder)"
    rc=0
    unshare --mount --net --pid --fork --kill-child --propagation private \
        env ROOT="$ROOT" WORK="$WORK" TOOLCHAIN="$TOOLCHAIN" BUILDER="$BUILDER" INSIDE="$INSIDE" VERSION="$VERSION" PROFILES="$PROFILES" JOBS="$JOBS" bash -euc '
        mount --bind "$ROOT" "$ROOT"
        mount -o remount,bind,ro "$ROOT"
        mount --bind "$WORK" "$ROOT/build"
        if [ -n "$TOOLCHAIN" ]; then mount --bind "$TOOLCHAIN" "$ROOT/opt/swift-toolchain"; mount -o remount,bind,ro "$ROOT/opt/swift-toolchain"; fi
        mount -t proc proc "$ROOT/proc"
        mount -t tmpfs -o mode=1777 tmpfs "$ROOT/tmp"
        mount -t tmpfs -o mode=1777 tmpfs "$ROOT/dev/shm" 2>/dev/null || true
        # No network, but a loopback, as sbuild gives its builds: without one
        # swift-build (CoreFoundation: "Could not create wakeup socket pair
        # for CFSocket") sometimes hung for ever after running the build-tool
        # plugin.
        ip link set lo up
        path=/usr/bin:/bin:/usr/sbin:/sbin
        [ -z "$TOOLCHAIN" ] || path=/opt/swift-toolchain/usr/bin:$path
        exec chroot --userspec="$BUILDER" "$ROOT" env -i PATH="$path" HOME=/nonexistent LANG=C.UTF-8 LC_ALL=C.UTF-8 \
            DEB_BUILD_OPTIONS="parallel=$JOBS" VERSION="$VERSION" PROFILES="$PROFILES" bash -c "$INSIDE"
    ' || rc=$?
    say "$SUITE: packages built in $(elapsed "$start") s"
    [ $rc = 0 ] || die "the package build failed ($rc)"
    [ "$MODE" != shell ] || exit 0
    rm -rf --one-file-system "$OUT"
    mkdir -p "$OUT"
    cp "$WORK"/*.deb "$WORK"/*.buildinfo "$WORK"/*.changes "$WORK"/*.dsc "$WORK"/*.tar.* "$OUT/"
    ls "$OUT"/*.deb >/dev/null 2>&1 || die "no packages were built"

    # lintian of the suite, in an overlay of the root that goes with the
    # namespace: its packages come from the root's cache (no network).
    start=$EPOCHREALTIME
    rc=0
    unshare --mount --net --pid --fork --kill-child --propagation private \
        env ROOT="$ROOT" OUT="$OUT" BUILDER="$BUILDER" top="$WORK/lintian" bash -euc '
        mkdir -p "$top"
        mount -t tmpfs tmpfs "$top"
        mkdir "$top/upper" "$top/work" "$top/merged"
        mount -t overlay overlay -o "lowerdir=$ROOT,upperdir=$top/upper,workdir=$top/work" "$top/merged"
        mkdir -p "$top/merged/out"
        mount --bind "$OUT" "$top/merged/out"
        mount -t proc proc "$top/merged/proc"
        chroot "$top/merged" sh -c "dpkg -i /var/cache/lintian-debs/*.deb >/tmp/lintian-install.log 2>&1 || { cat /tmp/lintian-install.log; exit 1; }"
        chroot --userspec="$BUILDER" "$top/merged" env -i PATH=/usr/bin:/bin HOME=/tmp LANG=C.UTF-8 sh -c \
            "cd /out && lintian --version && lintian --info --display-info --pedantic --fail-on error,warning *.changes *.dsc"
    ' || rc=$?
    say "$SUITE: lintian in $(elapsed "$start") s$([ $rc = 0 ] || echo ": FAILED ($rc)")"
    [ $rc = 0 ] || die "lintian found errors or warnings"
    say "$SUITE: $(ls "$OUT"/*.deb | wc -l) packages in $OUT"
    exit 0
fi

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
