#!/bin/bash
# Builds out/localauth_VERSION_ARCH.deb with dpkg-deb (`make deb`).
#
#   BINARIES=DIR VERSION=X.Y.Z scripts/make-deb.sh
#
# BINARIES must hold release binaries built with --static-swift-stdlib
# (`make release`): the Swift toolchain's libraries are not in Debian, so the
# package must not need them. The layout is `make install PREFIX=/usr`
# (scripts/install.sh) without its manifest (dpkg keeps the file list), then
# what Debian asks of a binary package: stripped binaries, gzipped man pages,
# /usr/share/doc/localauth/{copyright,changelog.gz}, Depends from
# dpkg-shlibdeps, md5sums, maintainer scripts and lintian overrides from
# packaging/deb/ (the overrides are explained in docs/PACKAGING.md).
# DEB_MAINTAINER overrides the Maintainer field.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BINARIES="${BINARIES:-$REPO/.build/release}"
VERSION="${VERSION:-$(cat "$REPO/VERSION")}"
MAINTAINER="${DEB_MAINTAINER:-LocalAuth for Linux maintainers <maintainers@localauth.example.org>}"
ARCH="$(dpkg --print-architecture)"
OUT="$REPO/out"
NAME="localauth_${VERSION}_${ARCH}"
STAGE="$OUT/$NAME"
PKG="$REPO/packaging/deb"

die() { echo "make-deb.sh: $*" >&2; exit 1; }

for binary in localauthd localauthctl localauth-prompt; do
    [ -x "$BINARIES/$binary" ] || die "$BINARIES/$binary not built (make release)"
    if readelf -d "$BINARIES/$binary" | grep -q 'NEEDED.*libswiftCore'; then
        die "$BINARIES/$binary needs the Swift runtime; build with --static-swift-stdlib (make release)"
    fi
done

# Reproducible: file dates and the changelog date from the last commit.
SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git -C "$REPO" log -1 --format=%ct 2>/dev/null || date +%s)}"
export SOURCE_DATE_EPOCH

rm -rf "$STAGE"
mkdir -p "$STAGE"
chmod 0755 "$STAGE"
DESTDIR="$STAGE" PREFIX=/usr MANIFEST= BINARIES="$BINARIES" "$REPO/scripts/install.sh" install >/dev/null

strip --strip-unneeded --remove-section=.comment --remove-section=.note \
    "$STAGE/usr/libexec/localauthd" "$STAGE/usr/bin/localauthctl" "$STAGE/usr/libexec/localauth-prompt" \
    "$STAGE"/usr/lib/*/security/pam_localauth.so
find "$STAGE/usr/share/man" -type f -exec gzip -9n {} +

DOC="$STAGE/usr/share/doc/localauth"
mkdir -p "$DOC"
install -m 0644 "$PKG/copyright" "$DOC/copyright"
install -D -m 0644 "$PKG/lintian-overrides" "$STAGE/usr/share/lintian/overrides/localauth"
{
    echo "localauth ($VERSION) unstable; urgency=medium"
    echo
    echo "  * Package of LocalAuth $VERSION: localauthd, localauthctl, the D-Bus"
    echo "    policy and activation file, polkit actions, the systemd unit."
    echo
    echo " -- $MAINTAINER  $(date -R -u -d "@$SOURCE_DATE_EPOCH")"
} | gzip -9n >"$DOC/changelog.gz"
chmod 0644 "$DOC/changelog.gz"

# Depends: what the binaries link, as dpkg-shlibdeps names it (it wants a
# debian/control beside it).
SHLIBS="$(mktemp -d)"
trap 'rm -rf "$SHLIBS"' EXIT
mkdir -p "$SHLIBS/debian"
printf 'Source: localauth\n\nPackage: localauth\nArchitecture: any\n' >"$SHLIBS/debian/control"
mkdir -p "$STAGE/DEBIAN"
depends="$(cd "$SHLIBS" && dpkg-shlibdeps -O -e"$STAGE/usr/libexec/localauthd" -e"$STAGE/usr/bin/localauthctl" \
    -e"$STAGE/usr/libexec/localauth-prompt" -e"$(echo "$STAGE"/usr/lib/*/security/pam_localauth.so)" 2>/dev/null |
    sed -n 's/^shlibs:Depends=//p')"
[ -n "$depends" ] || die "dpkg-shlibdeps found no dependencies"
rmdir "$STAGE/DEBIAN" 2>/dev/null || true

find "$STAGE" -depth -newermt "@$SOURCE_DATE_EPOCH" -exec touch --no-dereference --date="@$SOURCE_DATE_EPOCH" {} +
SIZE="$(du -k -s --apparent-size "$STAGE" | cut -f1)"

mkdir -p "$STAGE/DEBIAN"
sed -e "s|@VERSION@|$VERSION|" -e "s|@ARCH@|$ARCH|" -e "s|@MAINTAINER@|$MAINTAINER|" \
    -e "s|@SIZE@|$SIZE|" -e "s|@SHLIBS_DEPENDS@|$depends|" "$PKG/control.in" >"$STAGE/DEBIAN/control"
for script in postinst prerm postrm; do
    install -m 0755 "$PKG/$script" "$STAGE/DEBIAN/$script"
done
(cd "$STAGE" && find usr lib -type f -print0 | LC_ALL=C sort -z | xargs -0 md5sum) >"$STAGE/DEBIAN/md5sums"
chmod 0644 "$STAGE/DEBIAN/control" "$STAGE/DEBIAN/md5sums"

dpkg-deb --root-owner-group -Zxz --build "$STAGE" "$OUT/$NAME.deb" >/dev/null
rm -rf "$STAGE"
echo "$OUT/$NAME.deb"
