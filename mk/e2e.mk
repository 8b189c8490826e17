# The main job end to end (issue 9): `make demo` on the local Kubernetes
# cluster, and the cluster test suite (tests/e2e/run.sh).

.PHONY: demo-k8s test-e2e

DEMO_TARGET := demo-k8s
TEST_TARGETS += test-e2e

E2E_BINS := -p kraft-controller -p kraft-operator -p kraft-node-agent

demo-k8s: ## local cluster, helm install the operator, apply 3 voters, scale to 5 (cluster left up)
	$(CARGO) build $(E2E_BINS)
	./dev/demo.sh

test-e2e: ## the cluster tests: cluster up, tests/e2e/run.sh, cluster down
	python3 tests/e2e/test_samples.py
	$(CARGO) build $(E2E_BINS)
	./tests/e2e/run.sh
