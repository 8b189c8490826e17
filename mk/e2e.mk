# The main job end to end (issue 9): `make demo` on the local Kubernetes
# cluster, and the cluster test suite (tests/e2e/run.sh).

.PHONY: demo-k8s test-e2e

DEMO_TARGET := demo-k8s
TEST_TARGETS += test-e2e

# kraft-e2e: its kraft-e2e-load binary drives Kafka's producer and consumer.
E2E_BINS := -p kraft-controller -p kraft-operator -p kraft-e2e

demo-k8s: kafka-jars cluster-images ## local cluster, the operator, 3 voters, 3 Kafka brokers; scale 3 -> 5 -> 3 and delete the leader under acks=all traffic (cluster left up)
	$(CARGO) build $(E2E_BINS)
	./dev/demo.sh

test-e2e: kafka-jars cluster-images ## the cluster tests: cluster up, tests/e2e/run.sh, cluster down
	$(CARGO) build $(E2E_BINS)
	./tests/e2e/run.sh
