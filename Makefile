# Kraftwerk build entry points. `make demo` and `make test` are the two
# commands of the README's quick start; both work on a fresh machine.
#
# Each area adds its own targets in mk/<area>.mk (included below) and appends
# its test target to TEST_TARGETS, so that areas do not edit one another's rules.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

# Where installed tools and downloaded artifacts are cached, outside the repo.
KRAFTWERK_CACHE ?= $(HOME)/.cache/kraftwerk
export KRAFTWERK_CACHE

CARGO ?= cargo
TEST_TARGETS := test-rust
# Builds the tests need that can run while other tests run (mk/*.mk add
# theirs). `make test` starts them after lint in a session of their own at
# the lowest priority (nice 19, and its scheduler autogroup's nice 19: a new
# session is a new autogroup, whose share nice alone does not lower), so
# that they take mostly the CPU the tests leave idle (in a cold run
# test-rust's test phase, test-cluster and test-e2e left 35 to 80% of the two
# cores idle), and stops them when it ends. A test target that needs one
# waits for it (test-fuzz: the ASan build's lock) and redoes it if it failed.
TEST_PREPARE =
DEMO_TARGET ?= demo-format

include $(sort $(wildcard mk/*.mk))

.PHONY: help build test test-rust fmt-check lint demo demo-format clean

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | sort

build: ## build every binary of the workspace (debug)
	$(CARGO) build --workspace --all-targets

fmt-check: ## fail when the code is not rustfmt-formatted
	$(CARGO) fmt --all -- --check

lint: ## clippy with warnings as errors
	$(CARGO) clippy --workspace --all-targets -- -D warnings

test-rust: ## unit, simulation and process tests of the workspace
	$(CARGO) test --workspace --no-fail-fast

test: fmt-check lint ## install what the tests need, then run every test (fmt and clippy first)
	@set -e; \
	if [ -n "$(strip $(TEST_PREPARE))" ]; then \
	  mkdir -p target; log=target/test-prepare.log; \
	  echo "==> make $(strip $(TEST_PREPARE)) (niced, in the background: $$log)"; \
	  setsid sh -c 'echo 19 >/proc/self/autogroup 2>/dev/null || true; exec nice -n 19 "$$@"' sh \
	    $(MAKE) --no-print-directory $(TEST_PREPARE) >"$$log" 2>&1 & prepare=$$!; \
	  trap 'kill -TERM -- -'"$$prepare"' 2>/dev/null || true' EXIT; \
	fi; \
	for t in $(TEST_TARGETS); do echo "==> make $$t"; $(MAKE) --no-print-directory $$t; done

demo: ## the main job: see the README
	@$(MAKE) --no-print-directory $(DEMO_TARGET)

demo-format: build ## format three controller volumes in a temp dir and show what was written
	./dev/demo-format.sh

clean: ## remove build outputs (not the tool cache)
	$(CARGO) clean
