# The local Kubernetes cluster (issues 8 and 24): real etcd, kube-apiserver
# and kube-controller-manager built from their Go modules, and one real node:
# containerd + runc from Debian's packages, the kubelet, kube-scheduler,
# kube-proxy, CoreDNS and local-path-provisioner, running the images built
# from our Dockerfile (mk/images.mk). See docs/local-cluster.md.
#
# The cluster's images are built from the debug binaries the tests build
# anyway (CLUSTER_IMAGES_PROFILE=debug, no release build); `make images`
# alone builds the release ones users run.

.PHONY: tools cluster-images cluster-up cluster-down cluster-status cluster-logs test-cluster

TEST_TARGETS += test-cluster

CLUSTER_IMAGES_PROFILE ?= debug

tools: ## install etcd, kube-apiserver, kube-controller-manager, kubectl, helm into $KRAFTWERK_CACHE/bin
	./dev/install-tools.sh

cluster-images: ## the images the local cluster runs: `make images` from the debug binaries (CLUSTER_IMAGES_PROFILE=release: the release ones)
	@$(MAKE) --no-print-directory images IMAGES_PROFILE=$(CLUSTER_IMAGES_PROFILE)

cluster-up: cluster-images ## start the local Kubernetes cluster (idempotent); prints the KUBECONFIG to export
	./dev/cluster.sh up

cluster-down: ## stop the local cluster; leaves no process, network namespace, bridge or containerd shim
	./dev/cluster.sh down

cluster-status: ## what of the local cluster runs
	./dev/cluster.sh status

cluster-logs: ## print the cluster's component and container logs
	./dev/cluster.sh logs

test-cluster: cluster-images ## smoke test of the cluster and its node: containerd, pods, securityContext, scheduler, ClusterIP, DNS, PVC, GC, down
	./dev/real-node/smoke-test.sh
