# Fuzzing: every parser of untrusted bytes (fuzz/, its own cargo workspace)
# and the long soak run (fuzzers and simulation sweeps, outside `make test`).
#
# cargo-fuzz is installed from crates.io into the tool cache, once. It needs
# a nightly compiler for -Zsanitizer; where no nightly toolchain is installed,
# the stable one is used with RUSTC_BOOTSTRAP=1 (its std ships the ASan
# runtime). The deterministic garbage test in controller/tests/wire_codec.rs
# runs in test-rust regardless.
#
# Seeds in fuzz/seeds/<target>/ come from real encoded objects:
# `cargo run -p kraft-controller --example fuzz_seeds -- fuzz/seeds`
# regenerates them (decode_request's are captured requests). What a run
# finds beyond them goes to fuzz/corpus/<target>/ (not checked in).

CARGO_FUZZ_VERSION ?= 0.13.2
CARGO_FUZZ_ROOT := $(KRAFTWERK_CACHE)/cargo-fuzz-$(CARGO_FUZZ_VERSION)
CARGO_FUZZ := $(CARGO_FUZZ_ROOT)/bin/cargo-fuzz
# The fuzz build (every dependency with ASan) is cached outside the clone, so
# only a fresh machine pays for it.
FUZZ_TARGET_DIR ?= $(KRAFTWERK_CACHE)/fuzz-target
# The fuzz targets, one file each in fuzz/fuzz_targets/.
FUZZ_TARGETS := $(sort $(basename $(notdir $(wildcard fuzz/fuzz_targets/*.rs))))
# Targets with a known, unfixed finding (docs/fuzzing.md, "Known findings"):
# `make test-fuzz` runs every other target; `make fuzz-known` runs these
# (and fails until they are fixed); `make soak` runs all of them. Empty: the
# two out-of-memory findings of control_record and decode_response are fixed
# (wire/schema_guard.rs).
FUZZ_KNOWN_FAILING :=
FUZZ_TEST_TARGETS := $(filter-out $(FUZZ_KNOWN_FAILING),$(FUZZ_TARGETS))
# How long each target runs in `make test-fuzz`, seconds.
FUZZ_SECONDS ?= 10
# How long each target runs in `make soak`, seconds.
FUZZ_SOAK_SECONDS ?= 300
# Seeds of each simulation sweep in `make soak`.
SOAK_SIM_SEEDS ?= 10000

.PHONY: fuzz-tools fuzz-build test-fuzz fuzz-known soak sim-disk-faults

sim-disk-faults: ## run the disk-fault simulation sweep (FileLog on MemoryFs) over SIM_SEEDS seeds (SIM_SEED=n replays one)
	SIM_SEEDS=$(SIM_SEEDS) $(CARGO) test -p kraft-controller --test simulation_disk_faults -- --nocapture random_disk_faults

$(CARGO_FUZZ):
	$(CARGO) install cargo-fuzz --locked --version $(CARGO_FUZZ_VERSION) --root $(CARGO_FUZZ_ROOT)

fuzz-tools: $(CARGO_FUZZ) ## install cargo-fuzz into the tool cache (idempotent)

fuzz-build: $(CARGO_FUZZ) ## build every fuzz target with ASan (cached in FUZZ_TARGET_DIR)
	@FUZZ_TARGET_DIR="$(FUZZ_TARGET_DIR)" CARGO_FUZZ_ROOT="$(CARGO_FUZZ_ROOT)" dev/fuzz.sh build

# The ASan build (about 6 min cold, all CPU) runs beside the tests before
# test-fuzz (Makefile, TEST_PREPARE); test-fuzz's own build waits for it.
# Only when test-fuzz is among the targets (`make test TEST_TARGETS=…`).
TEST_PREPARE += $(if $(filter test-fuzz,$(TEST_TARGETS)),fuzz-build)

test-fuzz: $(CARGO_FUZZ) ## run each fuzz target but the known-failing ones for FUZZ_SECONDS (default 10); fails on a crash
	@test -z "$(strip $(FUZZ_KNOWN_FAILING))" || echo "test-fuzz: not run here, known findings, docs/fuzzing.md: $(FUZZ_KNOWN_FAILING)"
	@FUZZ_TARGET_DIR="$(FUZZ_TARGET_DIR)" CARGO_FUZZ_ROOT="$(CARGO_FUZZ_ROOT)" \
		dev/fuzz.sh run $(FUZZ_SECONDS) $(FUZZ_TEST_TARGETS)

fuzz-known: $(CARGO_FUZZ) ## run the targets with known, unfixed findings (fails until they are fixed)
	@FUZZ_TARGET_DIR="$(FUZZ_TARGET_DIR)" CARGO_FUZZ_ROOT="$(CARGO_FUZZ_ROOT)" \
		dev/fuzz.sh run $(FUZZ_SECONDS) $(FUZZ_KNOWN_FAILING)

soak: $(CARGO_FUZZ) ## fuzz each target FUZZ_SOAK_SECONDS, then SOAK_SIM_SEEDS of `make sim`, `make sim-membership` and `make sim-disk-faults`
	@mkdir -p target
	@FUZZ_TARGET_DIR="$(FUZZ_TARGET_DIR)" CARGO_FUZZ_ROOT="$(CARGO_FUZZ_ROOT)" \
		dev/fuzz.sh run $(FUZZ_SOAK_SECONDS) $(FUZZ_TARGETS) | tee target/soak-fuzz.log
	$(MAKE) --no-print-directory sim SIM_SEEDS=$(SOAK_SIM_SEEDS) 2>&1 | tee target/soak-sim.log
	$(MAKE) --no-print-directory sim-membership SIM_SEEDS=$(SOAK_SIM_SEEDS) 2>&1 | tee target/soak-sim-membership.log
	$(MAKE) --no-print-directory sim-disk-faults SIM_SEEDS=$(SOAK_SIM_SEEDS) 2>&1 | tee target/soak-sim-disk-faults.log
	@echo "soak passed: $(words $(FUZZ_TARGETS)) fuzz targets x $(FUZZ_SOAK_SECONDS) s, $(SOAK_SIM_SEEDS) seeds of each simulation sweep"

TEST_TARGETS += test-fuzz
