# Interop with Apache Kafka's own tools and brokers (issues 10 and 16,
# docs/interop.md): the tests of controller/tests/interop_kafka*.rs, built
# with the `interop` feature, run Kafka 4.1's kafka-metadata-quorum,
# kafka-storage and kafka-dump-log classes, and Kafka 4.1.2's and 4.4.0's
# brokers (interop_kafka_brokers, ~3 min; interop_kafka_topics, Kafka's
# clients and admin tools on ours for both versions and on Kafka 4.4's
# controllers, ~7 min), with the jars of `make kafka-jars`, against real
# kraft-controller processes; interop_kafka_mixed (~3 min) puts Kafka 4.4.0's
# controllers and ours in one quorum (times of a quiet 2-core run).
# dev/interop-tests.sh runs the two that start three brokers (topics, then
# brokers) beside all the others; their clusters take turns under a
# machine-wide lock (docs/interop.md).
# Without a JDK they are skipped with a loud message, never silently.
#
# KAFKA_VERSIONS (mk/kafka.mk: 4.1.2 4.4.0) is the matrix: every case runs
# once per version of the list where that version has the feature, e.g.
#   make test-interop KAFKA_VERSIONS=4.4.0
# runs 4.4.0's rows only (the harness reads the variable, tests/interop/mod.rs
# `runs_on`; a `cargo test` without it runs every version of mk/kafka.mk).

TEST_TARGETS += test-interop

.PHONY: test-interop
test-interop: ## Apache Kafka's tools against our controllers and files (needs a JDK 17)
	@if ! command -v java >/dev/null 2>&1; then \
	  printf '\n%s\n!!! SKIPPED test-interop: no java on PATH (install a JDK 17 to run the Kafka interop tests)\n%s\n\n' \
	    "$$(printf '!%.0s' {1..90})" "$$(printf '!%.0s' {1..90})"; \
	  if [ -n "$${CI:-}" ]; then echo "test-interop: CI is set: a skipped interop run fails the build" >&2; exit 1; fi; \
	  exit 0; \
	fi; \
	$(MAKE) --no-print-directory kafka-jars KAFKA_VERSIONS="$(KAFKA_VERSIONS)" && \
	KAFKA_VERSIONS="$(KAFKA_VERSIONS)" CARGO="$(CARGO)" ./dev/interop-tests.sh
