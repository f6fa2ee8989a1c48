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
    libssl-dev               # libcrypto (OpenSSL 3): LocalAuthCrypto's EVP primitives for rights and keys
    libtss2-dev              # tpm2-tss: ESAPI, MU, RC, the TCTI loader (CTSS2, LocalAuthTPM: rights sealed to the TPM; docs/TPM.md)
    make
    # test rig (scripts/rig.sh): private bus, real polkitd, baseline fprintd
    dbus-daemon              # /usr/bin/dbus-daemon
    dbus-bin                 # dbus-send (rig readiness checks)
    polkitd                  # /usr/lib/polkit-1/polkitd, pkcheck, pkaction
    fprintd                  # /usr/libexec/fprintd, fprintd-enroll/-verify/-list/-delete, its bus policy and polkit actions
    libpam-fprintd           # pam_fprintd.so: FprintdContractTests run it (pamtester) against localauthd --fprintd
    libglib2.0-bin           # gdbus (tests read D-Bus error names from it)
    systemd                  # busctl (tests and README drive the service with it)
    util-linux               # setpriv, setsid, unshare
    passwd                   # useradd, chpasswd: the password tests' account
    python3                  # virtual sensor commands (scripts/rig.sh vfp)
    python3-dbus             # tests and benchmarks driving fprintd from one connection
    python3-gi               # the security tests' hostile polkit agent and callers (GLib main loop)
    python3-numpy            # Tests/Helpers/synthetic-fingerprint.py: fingerprint images for virtual_image
    openssl                  # the crypto unit tests check signatures, ECDH and ECIES against the openssl tool
    # the TPM tests (Tests/LocalAuthTPMTests): a real software TPM 2.0, started and killed by each test
    swtpm                    # /usr/bin/swtpm socket: the TPM, on two free ports of 127.0.0.1
    swtpm-tools              # swtpm_setup: to provision a software TPM by hand (docs/TPM.md); the tests do not need it
    libtss2-tcti-swtpm0      # the "swtpm:host=…,port=…" TCTI the tests (and --tpm swtpm:…) load at run time
    # the system sheet (localauth-prompt) and its tests (Tests/EndToEndTests/PromptTests.swift)
    libgtk-4-dev             # gtk4: the agent's window (CGtk, CGtkShims)
    adwaita-icon-theme       # auth-fingerprint-symbolic, and the theme's other icons
    librsvg2-common          # gdk-pixbuf's SVG loader, for scalable symbolic icons
    fonts-dejavu-core        # a font for GTK under Xvfb
    xvfb                     # Xvfb: the X server the tests draw on
    xdotool                  # find the sheet, click its buttons, type Escape / Enter
    imagemagick              # import: screenshots; convert: the dark-theme pixel check
    python3-dbusmock         # EnvironmentTests: logind and UPower stand-ins on the rig's bus
    # the PAM module (pam/, built by `make pam` with the C compiler) and its tests
    gcc                      # cc for pam_localauth.so
    libpam0g-dev             # <security/pam_modules.h>, libpam
    libargon2-dev            # Argon2id of the login password in the PAM host (docs/KEYRING.md); libcrypto from libssl-dev
    libsecret-1-dev          # localauthctl keyring: gnome-keyring's password change through libsecret's encrypted session
    gnome-keyring            # LoginKeyringTests: the real login keyring daemon
    libsecret-tools          # secret-tool: LoginKeyringTests store and look up an item
    pamtester                # the tests drive the module through the real libpam
    strace                   # the reliability suite slows the service's fsync/rename to kill inside a write
    # the C client library (clients/liblocalauth, `make clientlib`) and its examples (docs/CLIENTS.md)
    meson                    # its build system
    ninja-build              # meson's backend
    libgirepository1.0-dev   # the GObject Introspection scanner's headers and .pc (g-ir-scanner, g-ir-compiler)
    gobject-introspection    # g-ir-scanner, g-ir-compiler
    gir1.2-glib-2.0          # GLib-2.0 / GObject-2.0 / Gio-2.0 typelibs the LocalAuth typelib depends on
    valac                    # the Vala example and vapigen (the library's .vapi)
    gjs                      # the JavaScript example
    # the Debian source package (debian/, `make deb`) and its checks
    debhelper                # dh, compat 13
    dpkg-dev                 # dpkg-buildpackage
    fakeroot                 # dpkg-buildpackage -rfakeroot as a normal user
    lintian                  # the packages' policy check
    # the system test (scripts/system-test, `make system-test`): a Debian root booted in a container
    mmdebstrap               # builds the root from Debian's mirror (cached under /var/cache/localauth-system-test)
    systemd-container        # systemd-nspawn: boots it with systemd as PID 1
    debian-archive-keyring   # mmdebstrap checks the mirror's signatures
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
