# The real node's tools and its test without an API server (issue 24). The
# node itself is the local cluster's (mk/cluster.mk, dev/real-node/node.sh):
# containerd + runc and the kubelet built from Go modules, with
# kube-scheduler, kube-proxy, CoreDNS and local-path-provisioner. See
# docs/local-cluster.md, "The node".

.PHONY: realnode-tools test-realnode-standalone

realnode-tools: ## install containerd, runc, buildah (apt) and build kubelet, kube-scheduler, kube-proxy, CNI plugins, crictl, CoreDNS, local-path-provisioner (Go modules)
	./dev/real-node/install.sh

test-realnode-standalone: cluster-images ## the node without an API server (static pods, crictl): touches no cluster (none may run)
	./dev/real-node/standalone-test.sh
