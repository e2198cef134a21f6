# strata — top-level build. `make deps` installs, `make` builds C and BPF,
# `make test` runs the whole suite, `make demo` runs the demo, `make bench`
# runs the benchmarks, `make install` / `make uninstall` install under PREFIX.
# Each folder contributes its rules in a fragment (*.mk).

.DEFAULT_GOAL := all
SHELL := /bin/bash
MAKEFLAGS += --no-print-directory

BUILD   := build
BIN     := $(BUILD)/bin
BPFOUT  := $(BUILD)/bpf
OBJ     := $(BUILD)/obj
VENV    := .venv
PY      := $(VENV)/bin/python
STRATA  := $(VENV)/bin/strata

CC      ?= gcc
CLANG   ?= clang
BPFTOOL ?= bpftool
CFLAGS  ?= -O2 -g
CFLAGS  += -Wall -Wextra -Wno-unused-parameter -std=gnu11 -D_GNU_SOURCE -pthread -Ibpf -Icatalogue -Ilib -Iengine -I$(BPFOUT)
LDFLAGS += -pthread
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined

ALL_TARGETS :=
TEST_BINS   :=

$(BIN) $(BPFOUT) $(OBJ):
	mkdir -p $@

include bpf/bpf.mk
-include engine/engine.mk
-include engine/tiers.mk
-include engine/fuzz/fuzz.mk
-include collectors/collectors.mk
include collectors/features.mk
include catalogue/catalogue.mk
-include workloads/workloads.mk
include prometheus/prometheus.mk
include web/web.mk
include bench/bench.mk
include tests/tests.mk
include contrib/install.mk

.PHONY: all deps test-deps venv test test-c test-py demo bench clean
all: $(ALL_TARGETS)

# deps: what building, running and `make demo` need; test-deps: also what only the tests,
# benchmarks and the ganesha and nfsd demos need (their services masked: scripts/deps.sh).
deps:
	bash scripts/deps.sh
	$(MAKE) --no-print-directory venv

test-deps:
	bash scripts/deps.sh --tests
	$(MAKE) --no-print-directory venv

venv: $(VENV)/.installed
$(VENV)/.installed: pyproject.toml
	bash scripts/venv.sh
	touch $@

# The whole suite: deps, build, C unit tests, the engine under ASan/UBSan, a
# short fuzz run of every target from its corpus, then pytest (its summary
# line ends the run). Everything the steps run is built first, TEST_JOBS at once
# (default: one per CPU); the C unit tests (mostly waiting on modelled devices), then
# the engine under ASan, run beside the fuzzers (one CPU each), each step's output
# printed when it ends.
TEST_JOBS ?= $(shell nproc)
TEST_BUILD = $(ALL_TARGETS) $(TEST_BINS) $(BUILD)/san/strata-engine $(foreach t,$(FUZZ_TARGETS),$(FUZZ)/san/fuzz_$(t))
test: test-deps
	$(MAKE) -j$(TEST_JOBS) $(TEST_BUILD)
	$(MAKE) -j2 --output-sync=target test-c fuzz-smoke test-san
	$(MAKE) test-py

test-c: $(TEST_BINS)
	@set -e; for t in $(TEST_BINS); do echo "== $$t"; $$t; done

test-py: venv
	$(PY) -m pytest $(PYTEST_ARGS)

# The demo: engine, collector, 10 clients; pictures in demo/ (strata demo --help).
demo: deps
	$(MAKE) all
	$(STRATA) demo -o demo

bench: test-deps
	$(MAKE) all
	bash bench/run.sh

clean:
	rm -rf $(BUILD) prometheus/metrics_pb2.py web/static/plotly-cartesian.min.js
