#!/usr/bin/env bash
# Helpers shared by dev/demo.sh and tests/e2e/run.sh: the local cluster's
# kubeconfig and tools, polling with a timeout, the operator's installation,
# reading a KraftQuorum's status and describing its quorum from the host, and
# dumping everything needed to debug a failure from a CI log alone.
# Sourced, not run. Expects `set -euo pipefail` in the caller.

e2e_lib_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$e2e_lib_dir/../.." && pwd)"
cache="${KRAFTWERK_CACHE:-$HOME/.cache/kraftwerk}"
export KRAFTWERK_CACHE="$cache"
export KUBECONFIG="${KUBECONFIG:-$cache/cluster/admin.kubeconfig}"
export PATH="$cache/bin:$PATH"
# The kraft-controller binary the host runs (`quorum describe`).
kraft_controller="${KRAFTWERK_TARGET_DIR:-${CARGO_TARGET_DIR:-$repo/target}/debug}/kraft-controller"
operator_ns="${HELM_NAMESPACE:-kraft-system}"
operator_release="${HELM_RELEASE:-kraft-operator}"
# The controllers' listener port (operator/src/crd.rs DEFAULT_LISTENER_PORT).
controller_port=9093

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }

# shellcheck source=../../dev/poll.sh
source "$repo/dev/poll.sh"

# install_operator: helm upgrade --install the chart (its CRD included) and
# wait for the operator's Deployment to be available. A namespace it creates
# enforces the restricted Pod Security Standard, as every test namespace does;
# one that exists already is left as it is.
install_operator() {
  if ! kubectl get namespace "$operator_ns" >/dev/null 2>&1; then
    kubectl create namespace "$operator_ns" >/dev/null
    kubectl label namespace "$operator_ns" >/dev/null \
      pod-security.kubernetes.io/enforce=restricted pod-security.kubernetes.io/enforce-version=latest
  fi
  helm upgrade --install "$operator_release" "$repo/charts/kraft-operator" \
    --namespace "$operator_ns" --wait --timeout 3m >/dev/null
  kubectl -n "$operator_ns" rollout status deployment/"$operator_release" --timeout 2m >/dev/null
}

# kq NS NAME JSONPATH: one field of a KraftQuorum.
kq() { kubectl -n "$1" get kraftquorum "$2" -o jsonpath="$3"; }

# condition NS NAME TYPE: the status of one condition (True/False/"").
condition() { kq "$1" "$2" "{.status.conditions[?(@.type==\"$3\")].status}"; }

# is_ready NS NAME [REPLICAS]: Ready=True, and (when given) REPLICAS voters in status.
is_ready() {
  [[ "$(condition "$1" "$2" Ready)" == True ]] || return 1
  if (($# > 2)); then
    local n
    n="$(kq "$1" "$2" '{.status.voters[*].nodeId}' | wc -w)"
    [[ "$n" == "$3" && "$(kq "$1" "$2" '{.status.readyReplicas}')" == "$3" ]] || return 1
    [[ -z "$(kq "$1" "$2" '{.status.pendingChange}')" ]] || return 1
  fi
}

# pod_ip NS POD
pod_ip() { kubectl -n "$1" get pod "$2" -o jsonpath='{.status.podIP}'; }

# client_config NS NAME: prints the path of a `--command-config` file for
# the quorum: mTLS with its client Secret (`NAME-client-tls`, spec.tls, the
# default) copied to a directory under $cache, or an empty (PLAINTEXT) file
# when the quorum has no such Secret. The host dials pod IPs, which the
# certificate does not name, so the host name check is off (the chain is
# still verified against the quorum's CA).
client_config() {
  local ns="$1" name="$2" dir k
  dir="$cache/e2e-tls/$ns-$name"
  mkdir -p "$dir"
  # The operator's identity: a super user (the brokers' client Secret is not).
  if kubectl -n "$ns" get secret "$name-operator-tls" >/dev/null 2>&1; then
    for k in ca.crt keystore.pem; do
      kubectl -n "$ns" get secret "$name-operator-tls" -o jsonpath="{.data.${k//./\\.}}" | base64 -d >"$dir/$k"
    done
    printf 'security.protocol=SSL\nssl.keystore.type=PEM\nssl.keystore.location=%s/keystore.pem\nssl.truststore.type=PEM\nssl.truststore.location=%s/ca.crt\nssl.endpoint.identification.algorithm=\n' \
      "$dir" "$dir" >"$dir/client.properties"
  else
    : >"$dir/client.properties"
  fi
  echo "$dir/client.properties"
}

# describe_quorum NS NAME: `kraft-controller quorum describe --status` against
# the first pod of the quorum that answers (pod IPs are reachable from the
# host), over mTLS with the quorum's client Secret when it has one.
describe_quorum() {
  local ns="$1" name="$2" pod ip config
  config="$(client_config "$ns" "$name")"
  for pod in $(kubectl -n "$ns" get pods -l "app.kubernetes.io/instance=$name" -o name 2>/dev/null | sed 's|pod/||'); do
    ip="$(pod_ip "$ns" "$pod")"
    [[ -n "$ip" ]] || continue
    if "$kraft_controller" quorum --bootstrap-controller "$ip:$controller_port" --command-config "$config" describe --status 2>/dev/null; then
      return 0
    fi
  done
  return 1
}

# dump NS: everything needed to debug a failure in NS: the KraftQuorums, pods,
# PVCs, events, the operator's log and every container log of NS.
# The logs come first and the objects and events last: a CI log that keeps
# only the end of the output still shows which pod is not Running and why.
dump() {
  local ns="$1" f
  {
    echo "==== dump of namespace $ns: logs"
    for f in "$cache/cluster/logs/$operator_ns"/*/*.log; do
      [[ -f "$f" ]] && { echo "---- $f (last 200 lines)"; tail -n 200 "$f"; }
    done
    for f in "$cache/cluster/logs/$ns"/*/*.log; do
      [[ -f "$f" ]] && { echo "---- $f (last 100 lines)"; tail -n 100 "$f"; }
    done
    echo "==== dump of namespace $ns: objects and events"
    kubectl -n "$ns" get kraftquorums -o yaml || true
    echo "---- the operator's pods ($operator_ns)"
    kubectl -n "$operator_ns" get pods -o wide || true
    echo "---- events, pods, PVCs, StatefulSets and Services of $ns"
    kubectl -n "$ns" get events --sort-by=.lastTimestamp || true
    kubectl -n "$ns" get pods,pvc,statefulsets,services -o wide || true
  } >&2
}

# --- Kafka brokers on a quorum (examples/kafka-brokers.yaml) -----------------

# Kafka's own tools, from the jars of `make kafka-jars`, at the brokers' version.
# Names resolve from the local cluster's hosts file (the pods' cluster DNS
# names, which the controllers advertise and Kafka's admin client follows).
kafka_tool() {
  KAFKA_VERSION="${KAFKA_VERSION:-4.4.0}" KAFKA_HOSTS_FILE="$cache/cluster/hosts" \
    "$repo/tests/kafka/kafka-run-class" "$@"
}

# brokers_ready NS N: N pods of the StatefulSet kafka are Ready.
brokers_ready() {
  local n
  n="$(kubectl -n "$1" get statefulset kafka -o jsonpath='{.status.readyReplicas}' 2>/dev/null)"
  [[ "${n:-0}" == "$2" ]]
}

# broker_bootstrap NS: the brokers' client listeners (pod IP:9092), comma-separated.
broker_bootstrap() {
  kubectl -n "$1" get pods -l app.kubernetes.io/name=kafka -o jsonpath='{range .items[*]}{.status.podIP}:9092,{end}' | sed 's/,$//'
}

# allow_anonymous_topics NS NAME: the ACL that lets the clients of the
# brokers' PLAINTEXT listener (User:ANONYMOUS) create and describe topics,
# written with the operator's identity (a super user) directly on a
# controller of quorum NAME: the controllers authorize what brokers forward
# with the client's own principal (docs/brokers.md).
allow_anonymous_topics() {
  local ns="$1" name="$2" config ip
  config="$(client_config "$ns" "$name")"
  ip="$(pod_ip "$ns" "$name-0")"
  kafka_tool org.apache.kafka.tools.AclCommand --bootstrap-controller "$ip:$controller_port" \
    --command-config "$config" --add --allow-principal User:ANONYMOUS \
    --operation Create --operation Describe --operation DescribeConfigs --topic '*' >/dev/null
}

# create_topic BOOTSTRAP TOPIC: 3 partitions, 3 replicas, min.insync.replicas=2
# (succeeds when it exists already).
create_topic() {
  kafka_tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$1" --create --if-not-exists \
    --topic "$2" --partitions 3 --replication-factor 3 --config min.insync.replicas=2 >/dev/null
}

# pod_replaced NS POD UID: POD exists with a uid other than UID and is Ready.
pod_replaced() {
  local uid ready
  uid="$(kubectl -n "$1" get pod "$2" -o jsonpath='{.metadata.uid}' 2>/dev/null)" || return 1
  ready="$(kubectl -n "$1" get pod "$2" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" || return 1
  [[ -n "$uid" && "$uid" != "$3" && "$ready" == True ]]
}

# ready_after_election NS NAME REPLICAS EPOCH: is_ready, under a leader epoch
# past EPOCH (after the leader went, the status may say Ready from before).
ready_after_election() {
  local epoch
  is_ready "$1" "$2" "$3" || return 1
  epoch="$(kq "$1" "$2" '{.status.leaderEpoch}')"
  ((${epoch:-0} > $4))
}

# topic_has_records BOOTSTRAP TOPIC: the topic's partitions end past offset 0
# (Kafka's GetOffsetShell: `topic:partition:offset` lines).
topic_has_records() {
  kafka_tool org.apache.kafka.tools.GetOffsetShell --bootstrap-server "$1" --topic "$2" 2>/dev/null |
    awk -F: '{ n += $NF } END { exit !(n > 0) }'
}
