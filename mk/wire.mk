# Wire layer: a short cargo-fuzz run of the request decoder (fuzz/).
#
# cargo-fuzz is installed from crates.io into the tool cache, once. It needs
# a nightly compiler for -Zsanitizer; where no nightly toolchain is installed,
# the stable one is used with RUSTC_BOOTSTRAP=1 (its std ships the ASan
# runtime). The deterministic garbage test in controller/tests/wire_codec.rs
# runs in test-rust regardless.

CARGO_FUZZ_VERSION ?= 0.13.2
CARGO_FUZZ_ROOT := $(KRAFTWERK_CACHE)/cargo-fuzz-$(CARGO_FUZZ_VERSION)
CARGO_FUZZ := $(CARGO_FUZZ_ROOT)/bin/cargo-fuzz
# The fuzz build (every dependency with ASan) is cached outside the clone, so
# only a fresh machine pays for it.
FUZZ_TARGET_DIR ?= $(KRAFTWERK_CACHE)/fuzz-target
# How long the fuzz run of `make test` lasts, seconds.
FUZZ_SECONDS ?= 30

.PHONY: fuzz-tools test-fuzz

$(CARGO_FUZZ):
	$(CARGO) install cargo-fuzz --locked --version $(CARGO_FUZZ_VERSION) --root $(CARGO_FUZZ_ROOT)

fuzz-tools: $(CARGO_FUZZ) ## install cargo-fuzz into the tool cache (idempotent)

test-fuzz: $(CARGO_FUZZ) ## fuzz the request decoder for FUZZ_SECONDS (default 30) with cargo-fuzz
	@set -e; \
	if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then \
		toolchain=+nightly; bootstrap=; \
	else \
		echo "no nightly toolchain: using stable with RUSTC_BOOTSTRAP=1"; \
		toolchain=+stable; bootstrap=RUSTC_BOOTSTRAP=1; \
	fi; \
	cd fuzz && mkdir -p corpus/decode_request && \
	PATH="$(CARGO_FUZZ_ROOT)/bin:$$PATH" CARGO_TARGET_DIR="$(FUZZ_TARGET_DIR)" env $$bootstrap \
		cargo $$toolchain fuzz run decode_request corpus/decode_request seeds/decode_request -- \
		-max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048

TEST_TARGETS += test-fuzz
