# LocalAuth for Linux
#   make deps    install the Debian packages (scripts/install-deps.sh)
#   make build   swift build, and the tests
#   make test    deps, then swift test (end-to-end tests start the rig themselves)
#   make demo    deps, build, then scripts/demo.sh (needs root: private bus + polkitd)
#   make bench   deps, release build (static Swift runtime, as shipped), then
#                localauth-bench beside fprintd (needs root; BENCH_ARGS="--quick" or
#                "--json FILE" are passed on; see BENCHMARKS.md)
#   make clean   remove build output

SWIFT ?= swift
export PATH := /opt/swift/usr/bin:$(PATH)
SHELL := /bin/bash

.PHONY: all deps build test demo bench clean

all: build

deps:
	scripts/install-deps.sh

build:
	$(SWIFT) build
	$(SWIFT) build --build-tests

test: deps
	$(SWIFT) test 2>&1

demo: deps build
	scripts/demo.sh

# The daemon is measured as it is shipped: release, Swift runtime linked in.
BENCH_BUILD_FLAGS ?= -c release --static-swift-stdlib

bench: deps
	$(SWIFT) build $(BENCH_BUILD_FLAGS)
	"$$($(SWIFT) build $(BENCH_BUILD_FLAGS) --show-bin-path)/localauth-bench" $(BENCH_ARGS)

clean:
	$(SWIFT) package clean || true
	rm -rf .build
