# offer-signer: two commands do all the set-up on a fresh Debian machine.
#   make run    installs what is missing, builds in release mode, serves the demo config
#   make test   installs what is missing, runs a short smoke of each fuzz target, starts a throwaway PostgreSQL
#               cluster, runs the Swift tests, type-checks the StoreKit layer, builds the OfferKit example package and
#               runs the interop suite (which runs the example and schemathesis), then stops the cluster, whether the
#               steps passed or not
#   make fuzz   fuzzes each of the service's parsers for FUZZ_SECONDS (CONTRIBUTING.md, "Fuzzing")
SHELL := /bin/bash
.DEFAULT_GOAL := help

# `make bench` installs these as well (callgrind counts instructions per request); `make test` does not need them.
BENCH_APT_PACKAGES := valgrind linux-perf strace
APT_PACKAGES := libssl-dev libmicrohttpd-dev libsqlite3-dev libpq-dev libcurl4-openssl-dev libcbor-dev libp11-kit-dev softhsm2 opensc postgresql nginx pkg-config openssl curl wrk chromium chromium-driver
VENV := .venv
PYTHON ?= python3
HOST ?= 127.0.0.1
PORT ?= 8080
CONFIG ?= Deploy/demo/offer-signer.json
BIN := .build/release/offer-signer
# The test kit's executable (test CA, Apple-like signed data, fake App Store Server API): `swift build` builds it beside
# offer-signer; the tests and the benchmarks sign their data with it. Never shipped.
TESTKIT_BIN := .build/release/offer-signer-testkit

.PHONY: help deps build release run test test-steps test-swift test-interop lint format bench clean fuzz fuzz-build \
	fuzz-smoke

help:
	@echo "make run     build (release) and serve $(CONFIG) on $(HOST):$(PORT)"
	@echo "make test    run every test (Swift Testing, then the pytest interop suite)"
	@echo "make bench   run the benchmarks"
	@echo "make fuzz    fuzz each parser for FUZZ_SECONDS (default $(FUZZ_SECONDS)) into $(FUZZ_DIR)/"
	@echo "make lint    swift format lint --strict"

# The tests start their own throwaway clusters: installing Debian's postgresql must not create (and start) a
# system-wide one.
NO_MAIN_CLUSTER := /etc/postgresql-common/createcluster.d/offer-signer-no-main-cluster.conf
# Runs a command with a throwaway PostgreSQL cluster and OFFER_SIGNER_TEST_POSTGRES set to its DSN; stops the
# cluster when the command ends, however it ends.
WITH_POSTGRES := bash Scripts/postgres-test-cluster.sh run

# Installs Debian packages only when one is missing; runs apt-get update first when needed. The tests run their
# own nginx too, as the current user on loopback: installing Debian's nginx must not start (or enable) a system-wide
# one serving port 80. Under systemd its unit is masked before the install (the package's scripts then neither
# start nor unmask it; `systemctl unmask nginx` undoes this); without systemd it is stopped and disabled after.
deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  if [[ " $$missing " == *" postgresql "* ]] && [ ! -e $(NO_MAIN_CLUSTER) ]; then \
	    $$SUDO mkdir -p $(dir $(NO_MAIN_CLUSTER)) && echo "create_main_cluster = false" | $$SUDO tee $(NO_MAIN_CLUSTER) >/dev/null; \
	  fi; \
	  if [[ " $$missing " == *" nginx "* ]] && [ -d /run/systemd/system ]; then \
	    $$SUDO systemctl mask --quiet nginx.service || exit 1; \
	  fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null \
	    || exit 1; \
	  if [[ " $$missing " == *" nginx "* ]] && [ ! -d /run/systemd/system ]; then \
	    $$SUDO invoke-rc.d nginx stop >/dev/null 2>&1 || true; \
	    $$SUDO update-rc.d nginx disable >/dev/null 2>&1 || true; \
	  fi; \
	fi
	@# git does not keep file modes: the demo key must be private before the service accepts it.
	@chmod 600 Keys/demo/*.p8

$(VENV)/.installed: Tests/Interop/requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -r Tests/Interop/requirements.txt
	touch $@

build: deps
	swift build

release: deps
	swift build -c release

run: release
	@echo "offer-signer demo on http://$(HOST):$(PORT)  (Ctrl-C stops it)"
	@echo "try it:"
	@echo "  curl -s -X POST http://$(HOST):$(PORT)/v1/signatures/promotional-offer -H 'Content-Type: application/json' -d '{\"bundleId\":\"com.example.app\",\"productId\":\"com.example.pro.monthly\",\"offerId\":\"launch_week_demo\"}'"
	@echo "the web console for marketing ops: http://127.0.0.1:8081/admin/ ; sign in with a token made by"
	@echo "  $(BIN) admin token create --config $(CONFIG) --name me --role publisher"
	exec $(BIN) serve --config $(CONFIG) --host $(HOST) --port $(PORT)

EXAMPLE := Examples/OfferKitDemo
# The example builds as an app would, with pkg-config blind: OfferKit needs none of the service's C libraries.
BUILD_EXAMPLE := PKG_CONFIG_LIBDIR=/nonexistent PKG_CONFIG_PATH= swift build --package-path $(EXAMPLE)
LINT_PATHS := Sources Tests Examples/OfferKitDemo/Sources Examples/OfferKitDemo/Package.swift Package.swift \
	Fuzz/Sources Fuzz/Package.swift

INTEROP := OFFER_SIGNER_BIN=$(CURDIR)/.build/debug/offer-signer \
	OFFER_SIGNER_TESTKIT_BIN=$(CURDIR)/.build/debug/offer-signer-testkit \
	OFFERKIT_DEMO_BIN=$(CURDIR)/$(EXAMPLE)/.build/debug/offerkit-demo $(VENV)/bin/python -m pytest -q Tests/Interop

test: deps $(VENV)/.installed
	swift format lint --strict --recursive $(LINT_PATHS)
	swift build
	$(MAKE) --no-print-directory fuzz-smoke
	$(WITH_POSTGRES) $(MAKE) --no-print-directory test-steps

# The steps of `make test` that run with its PostgreSQL cluster.
test-steps:
	swift test
	bash Scripts/check-storekit.sh
	$(BUILD_EXAMPLE)
	$(INTEROP)

test-swift: deps
	$(WITH_POSTGRES) swift test

test-interop: deps $(VENV)/.installed
	swift build
	$(BUILD_EXAMPLE)
	$(WITH_POSTGRES) $(INTEROP)

lint:
	swift format lint --strict --recursive $(LINT_PATHS)

format:
	swift format --in-place --recursive $(LINT_PATHS)

$(VENV)/.bench-installed: Benchmarks/requirements.txt $(VENV)/.installed
	$(VENV)/bin/pip install -q --disable-pip-version-check -r Benchmarks/requirements.txt
	touch $@

# The release build, the benchmark's Debian packages and Python packages, then the run (Benchmarks/README.md); prints
# the time of it all.
bench:
	@start=$$(date +%s); \
	$(MAKE) --no-print-directory release APT_PACKAGES="$(APT_PACKAGES) $(BENCH_APT_PACKAGES)" \
	  && $(MAKE) --no-print-directory $(VENV)/.bench-installed \
	  && $(WITH_POSTGRES) $(VENV)/bin/python Benchmarks/run.py --bin $(BIN) --testkit-bin $(TESTKIT_BIN); \
	status=$$?; echo "make bench: $$(( $$(date +%s) - start )) s in all, build and installs included"; exit $$status

# The fuzz targets (Fuzz/): a package of their own, built with libFuzzer and AddressSanitizer, so that `swift build`
# never links them. `make fuzz` builds them in release mode (about 3x the executions per second) and runs each for
# FUZZ_SECONDS into $(FUZZ_DIR)/TARGET/corpus (kept between runs, outside git; crashes in $(FUZZ_DIR)/TARGET/crashes).
# `make test` builds them in debug mode (a fraction of the build time, and Swift's `assert`s stay on) and runs each
# for FUZZ_SMOKE_SECONDS from the committed seeds (Fuzz/Corpus), failing on any crash.
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 3
FUZZ_DIR ?= .fuzz
FUZZ_TARGETS ?=
FUZZ_ENV := FUZZ_DIR=$(abspath $(FUZZ_DIR))
# ld.gold's warnings "Cannot export local symbol '__asan_...'" are harmless: left out of the output.
FUZZ_BUILD = set -o pipefail; swift build --package-path Fuzz -Xswiftc -sanitize=fuzzer,address -c $(1) 2>&1 \
	| { grep -v "Cannot export local symbol" || true; }

fuzz-build: deps
	$(call FUZZ_BUILD,release)

fuzz: fuzz-build
	$(FUZZ_ENV) bash Scripts/fuzz.sh run $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-smoke: deps
	$(call FUZZ_BUILD,debug)
	$(FUZZ_ENV) FUZZ_CONFIGURATION=debug bash Scripts/fuzz.sh smoke $(FUZZ_SMOKE_SECONDS) $(FUZZ_TARGETS)

clean:
	rm -rf .build $(EXAMPLE)/.build Fuzz/.build $(VENV)
