# The real node (issue 24): containerd + runc and the kubelet built from Go
# modules, as an extra node (kraft-kubelet) of the local cluster. Not part of
# `make test` or `make demo` (the node agent stays the default); select it with
# `NODE=kubelet make cluster-up`, which dev/cluster.sh passes on to
# dev/real-node/node.sh. See docs/local-cluster.md, "The real node".

.PHONY: realnode-tools realnode-up realnode-down test-realnode test-realnode-standalone

CLUSTER_LOCK ?= /tmp/kraftwerk-cluster.lock

realnode-tools: ## install containerd, runc, buildah (apt) and build kubelet, CNI plugins, crictl (Go modules)
	./dev/real-node/install.sh

realnode-up: images ## start the cluster if needed, then containerd and the kubelet (node kraft-kubelet), under the cluster lock
	flock $(CLUSTER_LOCK) ./dev/cluster.sh up
	flock $(CLUSTER_LOCK) ./dev/real-node/node.sh up

realnode-down: ## stop the real node's pods, kubelet and containerd (the cluster stays), under the cluster lock
	flock $(CLUSTER_LOCK) ./dev/real-node/node.sh down

test-realnode: images ## the real node's smoke test: node Ready on containerd, pods Running, securityContext enforced
	flock $(CLUSTER_LOCK) ./dev/real-node/smoke-test.sh

test-realnode-standalone: images ## the real node without an API server (static pods, crictl): touches no cluster, needs no lock
	./dev/real-node/standalone-test.sh
