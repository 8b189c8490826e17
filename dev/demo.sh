#!/usr/bin/env bash
# `make demo`: the main job on the local Kubernetes cluster, end to end, with
# Apache Kafka's own brokers on the quorum and traffic through them.
#   1. bring up the local cluster (dev/cluster.sh up; idempotent)
#   2. helm install the operator chart (the operator runs as a pod, the chart
#      installs the KraftQuorum CRD)
#   3. kubectl apply examples/kraftquorum-minimal.yaml (3 voters), wait for the
#      Ready condition, print `kubectl get kq` and the quorum's description
#      (`kraft-controller quorum describe --status`, run from the host)
#   4. kubectl apply examples/kafka-brokers.yaml (three apache/kafka:4.4.0
#      brokers, configured by the operator's ConfigMap quorum-brokers), wait
#      until they are Ready; an ACL for their clients (written with the
#      operator's identity on a controller), a topic with 3 replicas
#   5. a producer (Kafka's VerifiableProducer, acks=all, idempotent) writes
#      for the rest of the demo while the quorum is scaled 3 -> 5 -> 3 and its
#      leader pod is deleted; then everything is consumed back, and the demo
#      prints produced / acknowledged / consumed / failed (failed must be 0)
# The cluster is left up at the end; `make cluster-down` stops it. On a
# timeout or a lost record it prints the pods, events and logs, and fails.
# Run again, it shows the same: the cluster and the operator are reused, and
# the namespace of an earlier demo (its quorum, brokers, volumes) is deleted
# first, so everything starts again from 3 voters.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../tests/e2e/lib.sh
source "$here/../tests/e2e/lib.sh"

ns="${DEMO_NAMESPACE:-demo}"
name=quorum
topic=demo
rate="${DEMO_RATE:-100}"
load_bin="${KRAFTWERK_TARGET_DIR:-${CARGO_TARGET_DIR:-$repo/target}/debug}/kraft-e2e-load"
load_pid=

on_exit() {
  local rc=$?
  [[ -z "$load_pid" ]] || kill "$load_pid" 2>/dev/null || true
  if ((rc != 0)); then
    echo "==== the demo FAILED; the logs, then the quorum's objects and events follow" >&2
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
# tests/e2e/run.sh deletes namespaces with this label to make room for the
# cluster tests on the node's 2 CPUs.
kubectl label namespace "$ns" kraftwerk.dev/demo=true >/dev/null
log "kubectl -n $ns apply -f examples/kraftquorum-minimal.yaml"
start=$SECONDS
kubectl -n "$ns" apply -f "$repo/examples/kraftquorum-minimal.yaml"
poll "KraftQuorum $ns/$name Ready with 3 voters" 240 is_ready "$ns" "$name" 3
log "Ready with 3 voters after $((SECONDS - start)) s"
show

log "kubectl -n $ns apply -f examples/kafka-brokers.yaml (Apache Kafka's own brokers, env from ConfigMap $name-brokers)"
start=$SECONDS
kubectl -n "$ns" apply -f "$repo/examples/kafka-brokers.yaml"
poll "3 Kafka brokers Ready" 300 brokers_ready "$ns" 3
log "3 brokers Ready after $((SECONDS - start)) s"
kubectl -n "$ns" get pods -l app.kubernetes.io/name=kafka -o wide
bootstrap="$(broker_bootstrap "$ns")"

log "an ACL for the brokers' clients (User:ANONYMOUS on their PLAINTEXT listener), written with the operator's identity on a controller"
allow_anonymous_topics "$ns" "$name"
log "topic $topic: 3 partitions, 3 replicas, min.insync.replicas=2, created through the brokers"
poll "topic $topic created" 120 create_topic "$bootstrap" "$topic"

load_out="$cache/demo-load.txt"
log "producing to $topic (acks=all, idempotent, $rate records/s) for the rest of the demo"
"$load_bin" produce --bootstrap "$bootstrap" --topic "$topic" --rate "$rate" >"$load_out" 2>"$load_out.log" &
load_pid=$!
poll "the first records in $topic" 120 topic_has_records "$bootstrap" "$topic"

log "kubectl -n $ns scale kq/$name --replicas=5"
start=$SECONDS
kubectl -n "$ns" scale kq/"$name" --replicas=5
poll "KraftQuorum $ns/$name Ready with 5 voters" 300 is_ready "$ns" "$name" 5
log "Ready with 5 voters after $((SECONDS - start)) s"
show

log "kubectl -n $ns scale kq/$name --replicas=3"
start=$SECONDS
kubectl -n "$ns" scale kq/"$name" --replicas=3
poll "KraftQuorum $ns/$name Ready with 3 voters" 300 is_ready "$ns" "$name" 3
log "Ready with 3 voters after $((SECONDS - start)) s"

leader="$(kq "$ns" "$name" '{.status.leaderId}')"
epoch="$(kq "$ns" "$name" '{.status.leaderEpoch}')"
uid="$(kubectl -n "$ns" get pod "$name-$leader" -o jsonpath='{.metadata.uid}')"
log "kubectl -n $ns delete pod $name-$leader (the leader)"
start=$SECONDS
kubectl -n "$ns" delete pod "$name-$leader" --wait=false
poll "pod $name-$leader replaced and Ready" 120 pod_replaced "$ns" "$name-$leader" "$uid"
poll "KraftQuorum $ns/$name Ready with 3 voters after an election" 300 \
  ready_after_election "$ns" "$name" 3 "$epoch"
log "Ready again after $((SECONDS - start)) s, leader now $(kq "$ns" "$name" '{.status.leaderId}')"
show

log "stopping the producer, then consuming $topic from the beginning"
kill -TERM "$load_pid"
load_rc=0
wait "$load_pid" || load_rc=$?
load_pid=
echo
cat "$load_out"
((load_rc == 0)) || {
  echo "the producer or the consumer found a problem (exit $load_rc); its log:" >&2
  tail -n 40 "$load_out.log" >&2
  exit 1
}
echo

echo "Events of the quorum (one voter added or removed at a time):"
kubectl -n "$ns" get events --field-selector involvedObject.kind=KraftQuorum \
  --sort-by=.metadata.creationTimestamp -o custom-columns=REASON:.reason,MESSAGE:.message 2>/dev/null || true

cat <<EOF

The local cluster is still up. To use it:
  export KUBECONFIG=$KUBECONFIG
  export PATH=$cache/bin:\$PATH
  kubectl -n $ns get kq,pods,pvc
  kubectl -n $ns scale kq/$name --replicas=5      # adds voters, one at a time
  kubectl -n $ns get events --field-selector involvedObject.kind=KraftQuorum
  tail -f $cache/cluster/logs/$operator_ns/*/operator.log
Stop it with: make cluster-down
EOF
