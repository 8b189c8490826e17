#!/usr/bin/env bash
# `make demo`: the main job on the local Kubernetes cluster, end to end.
#   1. bring up the local cluster (dev/cluster.sh up; idempotent)
#   2. helm install the operator chart (the operator runs as a pod, the chart
#      installs the KraftQuorum CRD)
#   3. kubectl apply examples/kraftquorum-minimal.yaml (3 voters), wait for the
#      Ready condition, print `kubectl get kq` and the quorum's description
#      (`kraft-controller quorum describe --status`, run from the host)
#   4. kubectl scale kq/quorum --replicas=5, wait, print both again
# The cluster is left up at the end; `make cluster-down` stops it. On a
# timeout it prints the pods, events and logs, and fails.
# Run again, it shows the same: the cluster and the operator are reused, and
# the namespace of an earlier demo (its quorum at 3 or 5 voters, its volumes)
# is deleted first, so the quorum starts again from 3 voters.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../tests/e2e/lib.sh
source "$here/../tests/e2e/lib.sh"

ns="${DEMO_NAMESPACE:-demo}"
name=quorum

on_exit() {
  local rc=$?
  if ((rc != 0)); then
    echo "==== the demo FAILED; the quorum's state and logs follow" >&2
    dump "$ns"
  fi
  exit "$rc"
}
trap on_exit EXIT

show() {
  echo
  echo "\$ kubectl -n $ns get kq $name"
  kubectl -n "$ns" get kq "$name"
  echo
  echo "\$ kraft-controller quorum --bootstrap-controller <pod IP>:$controller_port describe --status"
  poll "DescribeQuorum answered by a controller of $ns/$name" 60 describe_quorum "$ns" "$name"
  describe_quorum "$ns" "$name"
  echo
}

log "starting the local Kubernetes cluster (dev/cluster.sh up)"
"$repo/dev/cluster.sh" up >/dev/null

log "installing the operator: helm upgrade --install $operator_release charts/kraft-operator -n $operator_ns"
install_operator
kubectl -n "$operator_ns" get pods

if kubectl get namespace "$ns" >/dev/null 2>&1; then
  log "namespace $ns exists (an earlier demo): deleting it, its quorum and volumes, to start again from 3 voters"
  start=$SECONDS
  kubectl delete namespace "$ns" --wait=true --timeout=180s >/dev/null
  log "namespace $ns deleted after $((SECONDS - start)) s"
fi
kubectl create namespace "$ns" >/dev/null
log "kubectl -n $ns apply -f examples/kraftquorum-minimal.yaml"
start=$SECONDS
kubectl -n "$ns" apply -f "$repo/examples/kraftquorum-minimal.yaml"
poll "KraftQuorum $ns/$name Ready with 3 voters" 240 is_ready "$ns" "$name" 3
log "Ready with 3 voters after $((SECONDS - start)) s"
show

log "kubectl -n $ns scale kq/$name --replicas=5"
start=$SECONDS
kubectl -n "$ns" scale kq/"$name" --replicas=5
poll "KraftQuorum $ns/$name Ready with 5 voters" 300 is_ready "$ns" "$name" 5
log "Ready with 5 voters after $((SECONDS - start)) s"
show

echo "Events of the quorum (one voter added at a time):"
kubectl -n "$ns" get events --field-selector involvedObject.kind=KraftQuorum \
  --sort-by=.metadata.creationTimestamp -o custom-columns=REASON:.reason,MESSAGE:.message 2>/dev/null || true

cat <<EOF

The local cluster is still up. To use it:
  export KUBECONFIG=$KUBECONFIG
  export PATH=$cache/bin:\$PATH
  kubectl -n $ns get kq,pods,pvc
  kubectl -n $ns scale kq/$name --replicas=3      # removes voters, highest first
  kubectl -n $ns get events --field-selector involvedObject.kind=KraftQuorum
  tail -f $cache/cluster/logs/$operator_ns/*/operator.log
Stop it with: make cluster-down
EOF
