#!/usr/bin/env bash
# The Helm chart on the real node (issue 24), as a user's cluster runs it: on
# the control plane of dev/cluster.sh with NODE=kubelet (reused when up, else
# started and stopped again), with the images of `make images`:
#
#   1. `helm upgrade --install` of charts/kraft-operator (the operator's image
#      ghcr.io/kraftwerk/kraft-operator:<appVersion>, pullPolicy IfNotPresent),
#      its Deployment available on kraft-kubelet, in a namespace that enforces
#      the restricted Pod Security Standard
#   2. `kubectl apply -f examples/kraftquorum-minimal.yaml` in such a namespace:
#      the KraftQuorum Ready with 3 voters, its pods on kraft-kubelet, its PVCs
#      bound by local-path-provisioner, `crictl ps` listing the controllers
#   3. the controllers' root filesystem is read-only (the container's OCI spec,
#      `crictl inspect`), and `quorum describe --status` answers from the host
#
# then deletes the quorum's namespace and the release. Run it under the
# cluster lock: `flock /tmp/kraftwerk-cluster.lock dev/real-node/chart-test.sh`
# (`make test-realnode-chart` does). Prints the namespace's state on failure.
set -euo pipefail

# shellcheck source=dev/real-node/common.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"
# shellcheck source=tests/e2e/lib.sh
source "$repo/tests/e2e/lib.sh"

NS=realnode-chart
name=quorum
node="$REAL_NODE_NAME"

started_cluster=0
failed=0
cleanup() {
  local rc=$?
  if ((rc != 0 || failed)); then
    rlog "FAILED; state of the quorum, the operator and the node:"
    dump "$NS" >&2 2>/dev/null || true
    kubectl -n "$operator_ns" get pods -o wide >&2 || true
    kubectl -n "$operator_ns" logs deployment/"$operator_release" --tail 40 >&2 2>/dev/null || true
    tail -n 40 "$logs/kubelet.log" >&2 2>/dev/null || true
  fi
  kubectl delete namespace "$NS" --ignore-not-found --wait=true --timeout=180s >/dev/null 2>&1 || true
  helm uninstall "$operator_release" -n "$operator_ns" --wait --timeout 2m >/dev/null 2>&1 || true
  if ((started_cluster)); then "$dev_dir/cluster.sh" down || rc=1; fi
  exit "$rc"
}

"$dev_dir/cluster.sh" running || started_cluster=1
trap cleanup EXIT
NODE=kubelet "$dev_dir/cluster.sh" up >/dev/null

start=$SECONDS
install_operator
rlog "operator installed by helm in $((SECONDS - start)) s"
kubectl -n "$operator_ns" get pods -o wide
on_node() { [[ "$(kubectl -n "$1" get pods -l "$2" -o jsonpath='{.items[*].spec.nodeName}' | tr ' ' '\n' | sort -u)" == "$node" ]]; }
check "the operator runs on $node" on_node "$operator_ns" app.kubernetes.io/name=kraft-operator

kubectl create namespace "$NS" >/dev/null
kubectl label namespace "$NS" >/dev/null \
  pod-security.kubernetes.io/enforce=restricted pod-security.kubernetes.io/enforce-version=latest
start=$SECONDS
kubectl -n "$NS" apply -f "$repo/examples/kraftquorum-minimal.yaml"
check "KraftQuorum $NS/$name Ready with 3 voters" poll "KraftQuorum $NS/$name Ready with 3 voters" 300 is_ready "$NS" "$name" 3
rlog "Ready after $((SECONDS - start)) s"
kubectl -n "$NS" get kq "$name"
kubectl -n "$NS" get pods,pvc -o wide
check "its pods run on $node" on_node "$NS" "app.kubernetes.io/instance=$name"
bound_by_local_path() {
  local pv n=0
  for pv in $(kubectl -n "$NS" get pvc -o jsonpath='{.items[*].spec.volumeName}'); do
    [[ "$(kubectl get pv "$pv" -o jsonpath='{.spec.storageClassName}')" == local-path ]] || return 1
    n=$((n + 1))
  done
  ((n == 3))
}
check "its 3 PVCs are bound to local-path volumes" bound_by_local_path

crictl_ ps --label "io.kubernetes.pod.namespace=$NS"
controllers="$(crictl_ ps -q --label "io.kubernetes.pod.namespace=$NS" --label io.kubernetes.container.name=controller || true)"
check "crictl ps lists 3 controller containers" [ "$(wc -w <<<"$controllers")" -ge 3 ]
read_only_root() {
  local id
  for id in $controllers; do
    crictl_ inspect "$id" | grep -q '"readonly": true' || return 1
  done
}
check "their root filesystems are read-only (crictl inspect: \"readonly\": true)" read_only_root
running_as() {
  local id
  for id in $controllers; do
    crictl_ inspect "$id" | tr -d ' \n' | grep -q '"uid":65532' || return 1
  done
}
check "they run as uid 65532" running_as
echo "\$ kraft-controller quorum describe --status (from the host, to a pod IP)"
check "quorum describe --status answers" poll "DescribeQuorum answered" 60 describe_quorum "$NS" "$name"
describe_quorum "$NS" "$name" || true

((failed == 0)) || exit 1
rlog "the chart on the real node: passed"
