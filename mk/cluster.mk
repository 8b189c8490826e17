# The local Kubernetes cluster (issue 8): real etcd, kube-apiserver and
# kube-controller-manager built from their Go modules, and our node agent
# (dev/node-agent) running pods as processes. See docs/local-cluster.md.

.PHONY: tools cluster-up cluster-down cluster-status cluster-logs test-cluster

TEST_TARGETS += test-cluster

tools: ## install etcd, kube-apiserver, kube-controller-manager, kubectl, helm into $KRAFTWERK_CACHE/bin
	./dev/install-tools.sh

cluster-up: ## start the local Kubernetes cluster (idempotent); prints the KUBECONFIG to export
	./dev/cluster.sh up

cluster-down: ## stop the local cluster; leaves no process, netns, bridge or veth
	./dev/cluster.sh down

cluster-status: ## what of the local cluster runs
	./dev/cluster.sh status

cluster-logs: ## print the cluster's component and container logs
	./dev/cluster.sh logs

test-cluster: ## smoke test of the local cluster: up, pods, StatefulSet, GC, down
	./dev/smoke-test.sh
