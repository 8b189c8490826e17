# The real node (issue 24): containerd + runc and the kubelet built from Go
# modules, as the node (kraft-kubelet) of the local cluster in place of the
# node agent, with kube-scheduler, kube-proxy, CoreDNS and
# local-path-provisioner. Not part of `make test` or `make demo` (the node
# agent stays the default); select it with `NODE=kubelet make cluster-up`,
# which dev/cluster.sh passes on to dev/real-node/node.sh. The targets below
# that need images build them first (`images`, mk/images.mk): from release
# binaries, or from the debug ones with IMAGES_PROFILE=debug (tests: no
# release build). See docs/local-cluster.md, "The real node".

.PHONY: realnode-tools realnode-up realnode-down test-realnode test-realnode-standalone test-realnode-chart

CLUSTER_LOCK ?= /tmp/kraftwerk-cluster.lock

realnode-tools: ## install containerd, runc, buildah (apt) and build kubelet, kube-scheduler, kube-proxy, CNI plugins, crictl, CoreDNS, local-path-provisioner (Go modules)
	./dev/real-node/install.sh

realnode-up: images ## start the cluster with NODE=kubelet if needed: containerd, the kubelet (node kraft-kubelet) and its services, under the cluster lock
	NODE=kubelet flock $(CLUSTER_LOCK) ./dev/cluster.sh up

realnode-down: ## stop the real node's pods, kubelet and containerd (the cluster stays), under the cluster lock
	flock $(CLUSTER_LOCK) ./dev/real-node/node.sh down

test-realnode: images ## the real node's smoke test: node Ready on containerd, pods Running, securityContext enforced, scheduler, ClusterIP, DNS, PVC
	flock $(CLUSTER_LOCK) ./dev/real-node/smoke-test.sh

test-realnode-standalone: images ## the real node without an API server (static pods, crictl): touches no cluster, needs no lock
	./dev/real-node/standalone-test.sh

test-realnode-chart: images ## the Helm chart and examples/kraftquorum-minimal.yaml on the real node: 3 voters Ready, crictl ps, read-only roots, under the cluster lock
	flock $(CLUSTER_LOCK) ./dev/real-node/chart-test.sh
