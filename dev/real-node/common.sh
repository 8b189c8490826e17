# shellcheck shell=bash
# Variables here are used by the scripts that source this file.
# shellcheck disable=SC2034
# Paths and helpers shared by dev/real-node/*.sh (sourced, never run).
#
# The real node (issue 24) is containerd + runc from Debian's packages and the
# kubelet built from k8s.io/kubernetes' Go modules (same version as the API
# server), with the reference CNI plugins: the local cluster's one node,
# beside the control plane that dev/cluster.sh starts. See
# docs/local-cluster.md, "The node".

real_here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dev_dir="$(cd "$real_here/.." && pwd)"
repo="$(cd "$dev_dir/.." && pwd)"
cache="${KRAFTWERK_CACHE:-$HOME/.cache/kraftwerk}"
# shellcheck source=dev/versions.sh
source "$dev_dir/versions.sh"
# Cluster DNS and PersistentVolumes of the real node, host processes built
# from Go modules by install.sh: CoreDNS from dev/tools/coredns (its go.mod
# requires this version; CoreDNS 1.15 needs Go 1.26), the provisioner with
# `go install pkg@version` (no replaces in its module).
COREDNS_VERSION=v1.15.0
LOCAL_PATH_PROVISIONER_VERSION=v0.0.30
bin="$cache/bin"
tools="$cache/tools"
cluster_dir="$cache/cluster"
pki="$cluster_dir/pki"
run="$cluster_dir/run"
logs="$cluster_dir/logs"
# What survives a `down`: containerd's content store (imported images).
rn="$cache/real-node"
# What goes with a `down`: sockets, shim state, the kubelet's pods.
rn_state=/run/kraftwerk
CONTAINERD_SOCK="$rn_state/containerd/containerd.sock"
CNI_BIN="$tools/cni-plugins-$CNI_PLUGINS_VERSION/bin"
CNI_CONF="$rn/cni/net.d"
KUBELET_ROOT="$rn/kubelet"
# The kubelet's podLogsDir (its default is /var/log/pods): ours alone, so a
# `down` removes the logs of the pods it removed and nothing else.
POD_LOGS_DIR="$rn/pod-logs"
# The cluster services dev/real-node/addons.sh runs beside the kubelet, host
# processes with pid files in $run, in the order they start.
ADDONS=(kube-scheduler kube-proxy coredns local-path-provisioner pod-hosts pod-logs)
# The version of our images (the chart's appVersion).
APP_VERSION="$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$repo/charts/kraft-operator/Chart.yaml")"
REAL_NODE_NAME="${KRAFTWERK_REAL_NODE_NAME:-kraft-kubelet}"
# The sandbox ("pause") image the CRI plugin runs first in each pod; built
# here by dev/real-node/images.sh (the kubelet 1.33 default tag).
PAUSE_IMAGE=registry.k8s.io/pause:3.10
# Image archives (OCI layout, tar) made by dev/real-node/images.sh.
oci_dir="$cache/images/oci"

# alive, detach, start, stop (messages by rlog)
procs_log=rlog
# shellcheck source=dev/procs.sh
source "$dev_dir/procs.sh"

rlog() { printf '[real-node] %s\n' "$*" >&2; }
rdie() { printf '[real-node] error: %s\n' "$*" >&2; exit 1; }

# check WHAT CMD...: runs CMD; prints "ok: WHAT" or "NOT OK: WHAT" and then
# sets failed=1 (the tests exit non-zero at the end, after every check).
check() {
  local what="$1"
  shift
  if "$@"; then
    rlog "ok: $what"
  else
    rlog "NOT OK: $what"
    failed=1
  fi
}

ctr_() { ctr --address "$CONTAINERD_SOCK" "$@"; }

# crictl on the real node's containerd. Its warning that /etc/crictl.yaml is
# absent (it then reads the crictl.yaml beside its binary) is dropped.
crictl_() { "$bin/crictl" --runtime-endpoint "unix://$CONTAINERD_SOCK" "$@" 2>/dev/null; }
# crictl_logs ID: a container's stdout and stderr (crictl prints the latter on
# its own stderr), without crictl's warnings.
crictl_logs() {
  "$bin/crictl" --runtime-endpoint "unix://$CONTAINERD_SOCK" logs "$1" 2>&1 | grep -v 'level=warning' || true
}
