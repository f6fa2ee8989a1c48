# LocalAuth for Linux
#   make deps        install the Debian packages (scripts/install-deps.sh)
#   make build       swift build, and the tests
#   make check       the unit tests: no root, no rig, seconds on a built tree
#   make e2e         deps, the PAM module, the examples, then the end-to-end tests (needs root:
#                    they start the rig themselves, one at a time under RIG_LOCK)
#   make test        deps, then check, distro-build (trixie), e2e and system-test for bookworm and
#                    trixie: the whole suite (what CI runs)
#   make distro-build SUITE=trixie  (root) the package and its tests built with the Swift a Debian suite
#                    ships (trixie: swiftlang 6.0.3; sid: 6.2.3) in a cached buildd root of that suite
#                    (scripts/distro-build.sh: mmdebstrap, no network during the build); DISTRO_ARGS=--test
#                    runs the unit tests there too. `make test` runs it for trixie (docs/PACKAGING.md)
#   make lint        swift format lint (.swift-format) on the Swift files added since LINT_BASE,
#                    failing on any finding; files changed there are reported, not failed (the
#                    tree predates the config). LINT_BASE: on a branch, where it left main; on
#                    main itself (or no main), the commit in .lint-baseline, so main's new files
#                    are checked too. .ci/run runs it
#   make pam         .build/pam/pam_localauth.so, the PAM module (C; docs/PAM.md)
#   make clientlib   .build/clientlib: liblocalauth-1 (C, GObject Introspection, Vala), meson + ninja
#                    (docs/CLIENTS.md); the test suite runs its examples against it
#   make demo        deps, build, then scripts/demo.sh (needs root: private bus + polkitd)
#   make release     swift build -c release --static-swift-stdlib --disable-local-rpath
#                    (binaries that need no Swift runtime and search no private library path)
#   make install     release, then install (PREFIX=/usr/local, DESTDIR=; see scripts/install.sh)
#   make uninstall   remove exactly what `make install` installed (its manifest)
#   SUITE=bookworm (Debian 12, the default) or trixie (Debian 13): what deb and system-test are for
#   make deb         (root) out/debian/SUITE/*.deb: the source package built as a Debian builder
#                    builds it, in a clean buildd root of SUITE (scripts/distro-build.sh --deb: only
#                    Build-Depends, no network, an unprivileged user; trixie with its swiftlang,
#                    bookworm with swift.org's toolchain from /opt/swift), then that suite's lintian
#                    (docs/PACKAGING.md)
#   make system-test (root) make deb, then scripts/system-test/run: our .debs installed with apt into a
#                    Debian root of SUITE (mmdebstrap, cached under /var/cache/localauth-system-test),
#                    booted with systemd-nspawn (real systemd, logind, polkitd, dbus-daemon, sshd);
#                    one line per scenario, "N passed, N failed" (README, "The system test")
#   make run-system-test  the same on the packages already in out/debian/SUITE (no package build);
#                    SYSTEST_ARGS="scenario ..." runs some scenarios, "--hold 600" keeps it up to look inside
#   make deb-test    (opt-in, root, ~1 min) install out/debian/<this machine's suite>/*.deb here and run a preflight
#                    from each example language against the installed packages; swap fprintd for
#                    localauth-fprintd and back; purge them all again (scripts/test-packages.sh)
#   make example     build Examples/UnlockApp, which uses the package by path
#   make examples    build the Examples package (the sample programs the e2e tests run)
#   make bench       deps, release build (static Swift runtime, as shipped), then
#                    localauth-bench (the package Tools/Bench) beside fprintd, then its
#                    curves (localauthd alone) and their SVG plot (needs root; a few minutes;
#                    BENCH_ARGS="--quick", "--no-curves" or "--json FILE" are passed on; see BENCHMARKS.md)
#   make reliability deps, build, then scripts/reliability/run (needs root; a few minutes;
#                    it waits for RIG_LOCK itself, as make e2e does):
#                    attacks the real service on the rig, prints a table and JSON, exits
#                    non-zero if a row falls short; a full run updates RELIABILITY.md's table.
#                    ROWS=soak,faults runs some rows; REL_ARGS="--short" etc. are passed on
#   make bench-clients  (root) build, clientlib, then scripts/bench-clients.sh: one preflight's cost
#                    through each client (liblocalauth-1 from Python, GDBus, python3-dbus; docs/CLIENTS.md)
#   make pam-cost    (root) build and pam, then scripts/pam-cost.sh: the memory and time pam_localauth
#                    adds to a PAM stack (pamtester on the rig; docs/PAM.md); RUNS=30
#   make profile     (root) deps, the bench's release build, then Tools/Bench/profile/run.sh: one
#                    evaluation's profile beside fprintd (BENCHMARKS.md, "Evaluation"); CYCLES=300
#   make ties        scripts/folder-ties.py: which folder of the service names which folder's types,
#                    and the mutual ties (docs/DESIGN.md, "Layers"; LayeringTests holds the rule)
#   make callgrind-paths TREES="before=DIR after=DIR"  (root) Tools/Bench/profile/callgrind-paths.sh:
#                    instructions per call and the files a call passes through, per checkout
#                    (BENCHMARKS.md, "Callgrind"); CALLGRIND_ARGS="--build ..." are passed on
#   make clean       remove build output
#
# Install variables: PREFIX DESTDIR BINDIR LIBEXECDIR DATADIR MANDIR UNITDIR USERUNITDIR AUTOSTARTDIR
# DBUS_POLICYDIR DBUS_SERVICEDIR DBUS_IFACEDIR POLKIT_ACTIONDIR MANIFEST.
# BUILD=release (default) or debug picks the binaries; NO_BUILD=1 installs
# what is already built (BINARIES=DIR: binaries from elsewhere, no build).
# dbus-daemon reads bus policies only from /usr/share/dbus-1/system.d and
# /etc/dbus-1/system.d, polkitd actions only from /usr/share/polkit-1/actions:
# with PREFIX=/usr/local add DBUS_POLICYDIR=/etc/dbus-1/system.d
# POLKIT_ACTIONDIR=/usr/share/polkit-1/actions, or use PREFIX=/usr (the .deb does).

SWIFT ?= swift
export PATH := /opt/swift/usr/bin:$(PATH)
SHELL := /bin/bash

PREFIX ?= /usr/local
DESTDIR ?=
BUILD ?= release
# Linked by the toolchain's lld with packed relative relocations (DT_RELR,
# glibc 2.36): the static Swift runtime's 27,000 relative relocations take
# 5 KB instead of 640 KB, read at every start (BENCHMARKS.md, issue 25).
# swiftc links with gold here, which cannot pack them: swiftc's -use-ld=lld
# picks the toolchain's own ld.lld, for every link of the build, the
# package's build tools (embed-interface-xml) included, which a toolset's
# linker (SwiftPM 6.1's --toolset) is not used for (and Debian 13's SwiftPM
# 6.0 has no --toolset). Not unsafeFlags in Package.swift, which a package
# used as a dependency may not have.
# A build ID as every Debian program has (swift.org's 6.3 asks for one, Debian
# 13's 6.0.3 does not).
LINK_FLAGS = -Xswiftc -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs -Xlinker --build-id=sha1
RELEASE_FLAGS = -c release --static-swift-stdlib --disable-local-rpath -Xlinker -z -Xlinker relro -Xlinker -z -Xlinker now \
	$(LINK_FLAGS)
ifeq ($(BUILD),release)
SWIFT_BUILD_FLAGS = $(RELEASE_FLAGS)
else ifeq ($(BUILD),debug)
SWIFT_BUILD_FLAGS :=
else
$(error BUILD must be release or debug)
endif
ifdef BINARIES
NO_BUILD := 1
else
BINARIES := $(CURDIR)/.build/$(BUILD)
endif
# The one place the version is written: VERSION (meson and debian/changelog read it too).
VERSION ?= $(shell cat $(CURDIR)/VERSION)

# Passed to scripts/install.sh only when set (it has the defaults).
INSTALL_VARS := DESTDIR PREFIX BINDIR LIBEXECDIR DATADIR MANDIR UNITDIR USERUNITDIR AUTOSTARTDIR PAMDIR PAMCONFIGDIR PAM_MODULE \
	DBUS_POLICYDIR DBUS_SERVICEDIR DBUS_IFACEDIR POLKIT_ACTIONDIR MANIFEST FPRINTD
INSTALL_ENV = $(foreach v,$(INSTALL_VARS),$(if $(filter undefined,$(origin $(v))),,$(v)='$($(v))')) BINARIES='$(BINARIES)'

.PHONY: all deps build pam clientlib test check e2e run-check run-e2e distro-build lint ties demo bench reliability release binaries install \
	uninstall install-list deb deb-test system-test run-system-test example examples clean

all: build

deps:
	scripts/install-deps.sh

build: pam
	$(SWIFT) build
	$(SWIFT) build --build-tests

# The PAM module is C, built here and not by SwiftPM (which would link the
# Swift runtime into it and so into sudo): see pam/pam_localauth.h.
PAM_MODULE := .build/pam/pam_localauth.so
PAM_CFLAGS := -O2 -g -fPIC -Wall -Wextra -Werror -D_FORTIFY_SOURCE=2 -fstack-protector-strong -fvisibility=hidden
pam: $(PAM_MODULE)
PAM_SOURCES := pam/pam_localauth.c pam/login_secret.c pam/login_secret_bus.c pam/login_secret_passwd.c pam/login_secret_argon2.c \
	pam/login_secret_crypto.c
$(PAM_MODULE): $(PAM_SOURCES) pam/pam_localauth.h pam/login_secret.h
	mkdir -p $(dir $@)
	$(CC) $(PAM_CFLAGS) -shared -o $@ $(PAM_SOURCES) $$(pkg-config --cflags --libs dbus-1 libcrypto libargon2) -lpam \
		-Wl,-z,relro,-z,now -Wl,--as-needed

# The C client library (clients/liblocalauth). meson is set up once; ninja
# rebuilds what changed. -Werror is in its meson.build.
CLIENTLIB_BUILD := .build/clientlib
clientlib:
	test -f $(CLIENTLIB_BUILD)/build.ninja || meson setup $(CLIENTLIB_BUILD) clients/liblocalauth
	ninja -C $(CLIENTLIB_BUILD)


# The unit tests are every test target but EndToEndTests; the end-to-end
# tests start a private bus and polkitd, which install polkit actions
# system-wide for the run, so two runs on one machine take turns (RIG_LOCK).
RIG_LOCK ?= /tmp/localauth-rig.lock
XCTEST := --skip-build --disable-swift-testing

check:
	$(SWIFT) build --build-tests
	$(MAKE) --no-print-directory run-check

e2e: deps pam clientlib examples
	$(SWIFT) build --build-tests
	$(MAKE) --no-print-directory run-e2e

test: deps pam clientlib examples
	$(SWIFT) build --build-tests
	$(MAKE) --no-print-directory run-check
	$(MAKE) --no-print-directory distro-build SUITE=trixie DISTRO_ARGS=--test
	$(MAKE) --no-print-directory run-e2e
	$(MAKE) --no-print-directory system-test SUITE=bookworm
	$(MAKE) --no-print-directory system-test SUITE=trixie

run-check:
	$(SWIFT) test $(XCTEST) --skip '^EndToEndTests\.' 2>&1
	$(SWIFT) test --package-path Tools/RigSupport --disable-swift-testing 2>&1

# -o: the lock stays with flock itself, not in the test process, so that no
# child of a test (a daemon that outlives it) can hold it (RigSupport's
# Spawn passes children 0, 1 and 2 only, for runs that take the lock without -o).
run-e2e:
	flock -o $(RIG_LOCK) $(SWIFT) test $(XCTEST) --filter '^EndToEndTests\.' 2>&1

# The oldest Swift a distribution ships that we build with: Debian 13's
# swiftlang 6.0.3 (no #embed, no 6.2 concurrency spellings, rethrows
# standard library). The Swift on PATH is not used: the suite's own is.
# Its suite is trixie unless SUITE is given (SUITE's own default, bookworm,
# has no swiftlang).
DISTRO_SUITE = $(if $(filter command line environment,$(origin SUITE)),$(SUITE),trixie)
DISTRO_ARGS ?=
distro-build:
	scripts/distro-build.sh $(DISTRO_SUITE) $(DISTRO_ARGS)

LINT_BASE ?= $(shell base=$$(git merge-base HEAD main 2>/dev/null); \
	if [ -n "$$base" ] && [ "$$base" != "$$(git rev-parse HEAD)" ]; then echo $$base; else cat $(CURDIR)/.lint-baseline; fi)
lint:
	@git cat-file -e '$(LINT_BASE)^{commit}' || { echo "make lint: no commit $(LINT_BASE) (LINT_BASE) in this clone" >&2; exit 1; }; \
	echo "make lint: the Swift files added and changed since $$(git log -1 --format='%h %s' $(LINT_BASE) | cut -c1-70)"; \
	added="$$(git diff --name-only --diff-filter=A $(LINT_BASE) -- '*.swift')"; \
	changed="$$(git diff --name-only --diff-filter=M $(LINT_BASE) -- '*.swift')"; \
	if [ -n "$$changed" ]; then $(SWIFT) format lint --configuration .swift-format $$changed || true; fi; \
	if [ -n "$$added" ]; then $(SWIFT) format lint --strict --configuration .swift-format $$added; fi

demo: deps build
	scripts/demo.sh

# SWIFT_JOBS=N: SwiftPM's parallel jobs (debian/rules passes DEB_BUILD_OPTIONS=parallel=N);
# SWIFTPM_FLAGS: more options (debian/rules: SwiftPM's cache and configuration in the build tree).
SWIFT_JOBS ?=
SWIFTPM_FLAGS ?=
release:
	$(SWIFT) build $(RELEASE_FLAGS) $(if $(SWIFT_JOBS),-j $(SWIFT_JOBS)) $(SWIFTPM_FLAGS)

binaries:
ifndef NO_BUILD
	$(SWIFT) build $(SWIFT_BUILD_FLAGS)
	$(MAKE) pam
endif

install: binaries
	$(INSTALL_ENV) scripts/install.sh install

uninstall:
	$(INSTALL_ENV) scripts/install.sh uninstall

install-list:
	@$(INSTALL_ENV) scripts/install.sh list

# The Debian source package in debian/ builds the split binary packages, for
# one suite: in a clean root of it (scripts/distro-build.sh --deb), into
# out/debian/SUITE, then that suite's lintian. The suites we build for and
# test on: bookworm (Debian 12) and trixie (Debian 13).
SUITE ?= bookworm
DEB_OUT = $(CURDIR)/out/debian/$(SUITE)
deb:
	@test "$$(dpkg-parsechangelog -SVersion)" = "$(VERSION)" || \
		{ echo "debian/changelog is at $$(dpkg-parsechangelog -SVersion), VERSION at $(VERSION): add a changelog entry (dch -v $(VERSION))"; exit 1; }
	scripts/distro-build.sh $(SUITE) --deb --out $(DEB_OUT)

deb-test:
	scripts/test-packages.sh

# The system test: a real Debian system of SUITE in a container (scripts/system-test/run).
system-test: deb
	$(MAKE) --no-print-directory run-system-test

run-system-test:
	scripts/system-test/run --suite $(SUITE) $(SYSTEST_ARGS)

example:
	cd Examples/UnlockApp && $(SWIFT) build

examples:
	$(SWIFT) build --package-path Examples

# The daemon is measured as it is shipped: release, Swift runtime linked in.
BENCH_BUILD_FLAGS ?= -c release --static-swift-stdlib $(LINK_FLAGS)

# clientlib: the "app preflight (C library)" rows build Tools/Bench/c/app-preflight.c against it.
bench: deps clientlib
	$(SWIFT) build $(BENCH_BUILD_FLAGS)
	$(SWIFT) build --package-path Tools/Bench $(BENCH_BUILD_FLAGS)
	"$$($(SWIFT) build --package-path Tools/Bench $(BENCH_BUILD_FLAGS) --show-bin-path)/localauth-bench" \
		--localauthd "$$($(SWIFT) build $(BENCH_BUILD_FLAGS) --show-bin-path)/localauthd" $(BENCH_ARGS)

ROWS ?=
reliability: deps
	$(SWIFT) build
	RIG_LOCK=$(RIG_LOCK) scripts/reliability/run --localauthd "$$($(SWIFT) build --show-bin-path)/localauthd" \
		$(if $(ROWS),--rows $(ROWS),--update RELIABILITY.md) --json .build/reliability.json $(REL_ARGS)

# Measurements run by hand (root, the rig lock): each writes nothing in the tree.
.PHONY: bench-clients pam-cost profile callgrind-paths
bench-clients: build clientlib
	scripts/bench-clients.sh

pam-cost: build
	scripts/pam-cost.sh

CYCLES ?= 300
profile: deps
	$(SWIFT) build $(BENCH_BUILD_FLAGS)
	LOCALAUTHD="$$($(SWIFT) build $(BENCH_BUILD_FLAGS) --show-bin-path)/localauthd" Tools/Bench/profile/run.sh $(CYCLES)

ties:
	scripts/folder-ties.py Sources/LocalAuthService

TREES ?=
CALLGRIND_ARGS ?=
callgrind-paths:
	@[ -n "$(TREES)" ] || { echo 'make callgrind-paths: TREES="LABEL=CHECKOUT ..." (or REV with CALLGRIND_ARGS=--build)' >&2; exit 2; }
	Tools/Bench/profile/callgrind-paths.sh $(CALLGRIND_ARGS) $(TREES)

clean:
	$(SWIFT) package clean || true
	rm -rf .build out Examples/.build Examples/UnlockApp/.build Tools/Bench/.build Tools/RigSupport/.build
