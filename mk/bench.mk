# Benchmarks side by side with Apache Kafka's KRaft (issue 11). Never part of
# `make test`: nothing here is timed in the tests.
#
#   make bench                        the full run (< 20 min): 1000, 5000, 20000 records/s
#   make bench BENCH_ARGS='--duration 5 --rates 1000 --failovers 1'   a quick look
#   make bench-topics                 only the topic churn (issue 17): 1000 topics x 3
#                                     partitions created and deleted through one broker
#   make bench-topics BENCH_TOPICS_ARGS='--topics 100'                  a quick look

BENCH_ARGS ?=
BENCH_TOPICS_ARGS ?=

.PHONY: bench bench-topics

bench: kafka-jars ## kraft-controller vs Kafka 4.1 TestRaftServer: commit latency, throughput, RSS, CPU, failover (see BENCHMARKS.md)
	@command -v python3 >/dev/null || { echo "bench: needs python3 (3.11)"; exit 1; }
	$(CARGO) build --release -p kraft-controller
	python3 bench/bench.py --controller target/release/kraft-controller \
	  --kafka-classpath-file $(KAFKA_CLASSPATH) --json target/bench-results.json $(BENCH_ARGS)
	python3 bench/topics.py --controller target/release/kraft-controller \
	  --json target/bench-topics-results.json $(BENCH_TOPICS_ARGS)

bench-topics: kafka-jars ## topic churn, ours vs Kafka 4.1.2's controllers: 1000 topics x 3 partitions created and deleted through one broker, time and controller RSS
	@command -v python3 >/dev/null || { echo "bench-topics: needs python3 (3.11)"; exit 1; }
	$(CARGO) build --release -p kraft-controller
	python3 bench/topics.py --controller target/release/kraft-controller \
	  --json target/bench-topics-results.json $(BENCH_TOPICS_ARGS)
