# Benchmarks side by side with Apache Kafka's KRaft (issues 11, 23). Never part
# of `make test`: nothing here is timed in the tests.
#
#   make bench                        the full run against Kafka 4.4.0's TestRaftServer: rows of
#                                     256 B and 4 KiB records x append linger 25 (default) and 0 x
#                                     1000, 5000, 20000 records/s, a saturation search per system
#                                     and size, failovers, the disk's fsync floor, the machine's
#                                     replication floor per row (target/release/
#                                     kraft-replication-floor: three bare processes); then the
#                                     pictures (bench/plot.py), the topic churn and the broker
#                                     heartbeats, all against Kafka $(BENCH_KAFKA_VERSION)
#   make bench BENCH_KAFKA_VERSION=4.1.2                                 against Kafka 4.1.2 instead
#   make bench BENCH_ARGS='--duration 5 --rates 1000 --record-sizes 256 --saturation-sizes "" --failovers 1'
#                                     a quick look
#   make bench-topics                 only the topic churn (issue 17): 1000 topics x 3
#                                     partitions created and deleted through one Kafka 4.4.0
#                                     broker, on our controllers and on Kafka 4.4.0's
#   make bench-topics BENCH_TOPICS_ARGS='--topics 100'                  a quick look
#   make bench-brokers                100 simulated Kafka 4.4 brokers (target/release/kraft-broker-load)
#                                     registering and heartbeating every 2000 ms for 60 s against
#                                     three of our controllers and three of Kafka 4.4.0's
#   make bench-brokers BENCH_BROKERS_ARGS='--brokers 10 --duration 10'  a quick look
#   make bench-operator               the operator at scale: 50 KraftQuorums of 3 voters applied
#                                     at once to the local cluster (release images, started with
#                                     room for 180 pods), then one scaled 3 -> 5
#   make bench-operator BENCH_OPERATOR_ARGS='--quorums 5 --steady 10'   a quick look
#
# Output: target/bench/<UTC time>/ (results.json, report.md, latency-cdf.svg,
# saturation.svg; target/bench/latest links to it); bench/publish.py copies
# the pictures and report.md to bench/plots/ and puts the report into
# BENCHMARKS.md between its bench:latest markers.

BENCH_ARGS ?=
BENCH_TOPICS_ARGS ?=
BENCH_BROKERS_ARGS ?=
BENCH_OPERATOR_ARGS ?=
BENCH_OPERATOR_MAX_PODS ?= 180
BENCH_KAFKA_VERSION ?= 4.4.0
ifndef BENCH_OUT
BENCH_OUT := target/bench/$(shell date -u +%Y%m%dT%H%M%SZ)
endif

.PHONY: bench bench-topics bench-brokers bench-operator

bench: $(KRAFTWERK_CACHE)/kafka-$(BENCH_KAFKA_VERSION).classpath ## kraft-controller vs Kafka 4.4.0's TestRaftServer (BENCH_KAFKA_VERSION=4.1.2): commit latency at equal work, linger 25 and 0, saturation, RSS, CPU, failover, plots (see BENCHMARKS.md)
	@command -v python3 >/dev/null || { echo "bench: needs python3 (3.11)"; exit 1; }
	bench/install-plot-deps.sh >/dev/null  # before the long run: a failed install must not cost a run's pictures
	$(CARGO) build --release -p kraft-controller
	python3 bench/bench.py --controller target/release/kraft-controller \
	  --kafka-version $(BENCH_KAFKA_VERSION) \
	  --kafka-classpath-file $(KRAFTWERK_CACHE)/kafka-$(BENCH_KAFKA_VERSION).classpath \
	  --out $(BENCH_OUT) --json target/bench-results.json $(BENCH_ARGS)
	py="$$(bench/install-plot-deps.sh)" && "$$py" bench/plot.py $(BENCH_OUT)/results.json
	python3 bench/publish.py $(BENCH_OUT)
	$(MAKE) --no-print-directory bench-topics bench-brokers

bench-topics: $(KRAFTWERK_CACHE)/kafka-$(BENCH_KAFKA_VERSION).classpath ## topic churn, ours vs Kafka 4.4.0's controllers: 1000 topics x 3 partitions created and deleted through one Kafka 4.4.0 broker, time and controller RSS
	@command -v python3 >/dev/null || { echo "bench-topics: needs python3 (3.11)"; exit 1; }
	$(CARGO) build --release -p kraft-controller
	python3 bench/topics.py --controller target/release/kraft-controller \
	  --kafka-version $(BENCH_KAFKA_VERSION) \
	  --json target/bench-topics-results.json $(BENCH_TOPICS_ARGS)

bench-brokers: $(KRAFTWERK_CACHE)/kafka-$(BENCH_KAFKA_VERSION).classpath ## broker heartbeats, ours vs Kafka 4.4.0's controllers: 100 simulated brokers x 60 s, heartbeat p50/p99/p99.9, registration, time to unfenced, leader CPU and RSS
	@command -v python3 >/dev/null || { echo "bench-brokers: needs python3 (3.11)"; exit 1; }
	$(CARGO) build --release -p kraft-controller --bin kraft-controller --bin kraft-broker-load
	python3 bench/brokers.py --controller target/release/kraft-controller \
	  --load target/release/kraft-broker-load --kafka-version $(BENCH_KAFKA_VERSION) \
	  --json target/bench-brokers-results.json $(BENCH_BROKERS_ARGS)

bench-operator: ## the operator at scale: 50 KraftQuorums x 3 voters applied at once to the local cluster, apply-to-Ready, operator RSS and CPU, reconcile p99, one quorum scaled 3 -> 5 beside the others (leaves the cluster up)
	@command -v python3 >/dev/null || { echo "bench-operator: needs python3 (3.11)"; exit 1; }
	@$(MAKE) --no-print-directory cluster-images CLUSTER_IMAGES_PROFILE=release
	KRAFTWERK_MAX_PODS=$(BENCH_OPERATOR_MAX_PODS) ./dev/cluster.sh up
	python3 bench/operators.py --json target/bench-operator-results.json $(BENCH_OPERATOR_ARGS)

# The benchmark scripts' own tests (report, saturation search, publishing):
# Python's standard library only, no cluster, nothing timed.
TEST_TARGETS += test-bench-tools
.PHONY: test-bench-tools
test-bench-tools: ## unit tests of the benchmark scripts (bench/test_*.py)
	@command -v python3 >/dev/null || { echo "test-bench-tools: needs python3 (3.11)"; exit 1; }
	cd bench && python3 -B -m unittest test_bench test_brokers
