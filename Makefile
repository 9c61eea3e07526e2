# offer-signer: two commands do all the set-up on a fresh Debian machine.
#   make run    installs what is missing, builds in release mode, serves the demo config
#   make test   installs what is missing, runs the Swift tests, type-checks the StoreKit layer, builds the
#               OfferKit example package and runs the interop suite (which runs the example)
SHELL := /bin/bash
.DEFAULT_GOAL := help

APT_PACKAGES := libssl-dev libmicrohttpd-dev libsqlite3-dev pkg-config openssl curl wrk
VENV := .venv
PYTHON ?= python3
HOST ?= 127.0.0.1
PORT ?= 8080
CONFIG ?= Deploy/demo/offer-signer.json
BIN := .build/release/offer-signer

.PHONY: help deps build release run test test-swift test-interop lint format bench clean

help:
	@echo "make run     build (release) and serve $(CONFIG) on $(HOST):$(PORT)"
	@echo "make test    run every test (Swift Testing, then the pytest interop suite)"
	@echo "make bench   run the benchmarks"
	@echo "make lint    swift format lint --strict"

# Installs Debian packages only when one is missing; runs apt-get update first when needed.
deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
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
	exec $(BIN) serve --config $(CONFIG) --host $(HOST) --port $(PORT)

EXAMPLE := Examples/OfferKitDemo
# The example builds as an app would, with pkg-config blind: OfferKit needs none of the service's C libraries.
BUILD_EXAMPLE := PKG_CONFIG_LIBDIR=/nonexistent PKG_CONFIG_PATH= swift build --package-path $(EXAMPLE)
LINT_PATHS := Sources Tests Examples/OfferKitDemo/Sources Examples/OfferKitDemo/Package.swift Package.swift

test: deps $(VENV)/.installed
	swift format lint --strict --recursive $(LINT_PATHS)
	swift build
	swift test
	bash Scripts/check-storekit.sh
	$(BUILD_EXAMPLE)
	OFFER_SIGNER_BIN=$(CURDIR)/.build/debug/offer-signer OFFERKIT_DEMO_BIN=$(CURDIR)/$(EXAMPLE)/.build/debug/offerkit-demo \
	  $(VENV)/bin/python -m pytest -q Tests/Interop

test-swift: deps
	swift test

test-interop: deps $(VENV)/.installed
	swift build
	$(BUILD_EXAMPLE)
	OFFER_SIGNER_BIN=$(CURDIR)/.build/debug/offer-signer OFFERKIT_DEMO_BIN=$(CURDIR)/$(EXAMPLE)/.build/debug/offerkit-demo \
	  $(VENV)/bin/python -m pytest -q Tests/Interop

lint:
	swift format lint --strict --recursive $(LINT_PATHS)

format:
	swift format --in-place --recursive $(LINT_PATHS)

bench: release $(VENV)/.installed
	$(VENV)/bin/python Benchmarks/run.py --bin $(BIN)

clean:
	rm -rf .build $(EXAMPLE)/.build $(VENV)
