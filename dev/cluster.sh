#!/usr/bin/env bash
# The local Kubernetes cluster: a real etcd, kube-apiserver and
# kube-controller-manager, plus our node agent (dev/node-agent) that runs pods
# as local processes in network namespaces. See docs/local-cluster.md.
#
#   dev/cluster.sh up       start everything (idempotent); prints `export KUBECONFIG=...`
#   dev/cluster.sh running  exit 0 when every component runs (the tests reuse such
#                           a cluster and leave it up; they stop only one they started)
#   dev/cluster.sh control-plane  exit 0 when etcd, the API server and the controller manager run
#   dev/cluster.sh down     stop everything; fails unless no process, netns, bridge
#                           or veth is left
#   dev/cluster.sh status   what runs
#   dev/cluster.sh logs     print the component logs and every container log
#
# NODE=kubelet runs the real node (issue 24: containerd + kubelet, node
# kraft-kubelet, with kube-scheduler, kube-proxy, CoreDNS and
# local-path-provisioner: dev/real-node/node.sh) in place of the node agent,
# which is then not started (it binds every pending pod to its own node, so it
# and kube-scheduler cannot share pods); `down` stops the real node whenever it
# runs. The node agent stays the default (NODE=agent).
#
# Must run as root (network namespaces, bridge, bind mounts). One cluster per
# machine: the bridge, its addresses and the ports below are fixed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
cache="${KRAFTWERK_CACHE:-$HOME/.cache/kraftwerk}"
bin="$cache/bin"
dir="$cache/cluster"
pki="$dir/pki"
run="$dir/run"
logs="$dir/logs"

BRIDGE="${KRAFTWERK_BRIDGE:-kw0}"
HOST_IP=10.244.0.1          # the bridge's address: API server, pods' gateway
POD_CIDR=10.244.0.0/24      # pod IPs, only on $BRIDGE (never routed off this host)
SERVICE_CIDR=10.96.0.0/24   # ClusterIPs are allocated but nothing proxies them
API_PORT=6443
ETCD_CLIENT=127.0.0.1:2379
ETCD_PEER=127.0.0.1:2380
NODE_NAME="${KRAFTWERK_NODE_NAME:-kraft-node}"
NETNS_PREFIX=kw-
TARGET_DIR="${KRAFTWERK_TARGET_DIR:-${CARGO_TARGET_DIR:-$repo/target}/debug}"
CARGO="${CARGO:-cargo}"

log() { printf '[cluster] %s\n' "$*" >&2; }
die() { printf '[cluster] error: %s\n' "$*" >&2; exit 1; }

[[ $(id -u) -eq 0 ]] || die "must run as root (network namespaces, bridge, bind mounts)"

# alive, detach, start, stop
# shellcheck source=procs.sh
source "$here/procs.sh"

# shellcheck source=poll.sh
source "$here/poll.sh"
# shellcheck source=kube-pki.sh
source "$here/kube-pki.sh"

# wait_for WHAT SECONDS CMD...: `poll`, and on a timeout the last lines of the
# components' logs, then exit.
wait_for() {
  poll "$@" && return 0
  tail -n 30 "$logs"/*.log >&2 || true
  exit 1
}

# --- certificates ---------------------------------------------------------------
# cert and write_kubeconfig: dev/kube-pki.sh.
# kubeconfig NAME: $dir/NAME.kubeconfig, as user NAME with certificate NAME.
kubeconfig() {
  write_kubeconfig "$dir/$1.kubeconfig" "$1" "$1"
}

make_pki() {
  mkdir -p "$pki"
  if [[ ! -f "$pki/ca.crt" ]]; then
    openssl genrsa -out "$pki/ca.key" 2048 2>/dev/null
    openssl req -x509 -new -key "$pki/ca.key" -subj "/CN=kraftwerk-local-ca" -days 3650 -sha256 \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" \
      -out "$pki/ca.crt" 2>/dev/null
  fi
  cert apiserver kube-apiserver "" \
    "IP:$HOST_IP,IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  cert admin kubernetes-admin system:masters
  cert controller-manager system:kube-controller-manager ""
  # The node agent is also the scheduler and the volume provisioner, so it is an
  # administrator rather than a NodeRestriction-bound system:node identity.
  cert node-agent kraft-node-agent system:masters
  if [[ ! -f "$pki/sa.key" ]]; then
    openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
    openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
  fi
  kubeconfig admin
  kubeconfig controller-manager
  kubeconfig node-agent
}

# --- network --------------------------------------------------------------------
bridge_up() {
  if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
    ip link add "$BRIDGE" type bridge
  fi
  ip addr replace "$HOST_IP/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
}

# Removes every pod network namespace (killing what still runs in it), their
# /etc/netns files and the bridge. Deleting a namespace deletes its veth pair.
network_down() {
  local ns
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$NETNS_PREFIX" || true); do
    local pids
    pids="$(ip netns pids "$ns" 2>/dev/null || true)"
    [[ -n "$pids" ]] && kill -KILL $pids 2>/dev/null || true
    ip netns delete "$ns" 2>/dev/null || true
    rm -rf "/etc/netns/$ns"
  done
  rm -rf /etc/netns/"$NETNS_PREFIX"*
  if ip link show "$BRIDGE" >/dev/null 2>&1; then
    ip link delete "$BRIDGE"
  fi
}

write_images() {
  # Image repository suffix -> local binary. See dev/node-agent/src/images.rs.
  cat >"$dir/images.yaml" <<EOF
# Written by dev/cluster.sh: which local program runs a container image.
images:
  - repository: kraft-controller
    entrypoint: $TARGET_DIR/kraft-controller
  - repository: kraft-operator
    entrypoint: $TARGET_DIR/kraft-operator
  - repository: busybox
  - repository: pause
    entrypoint: $(command -v sleep) infinity
  - repository: apache/kafka
    root: $cache/images/apache-kafka-{tag}
    paths: [/opt/kafka, /etc/kafka/docker, /mnt/shared/config]
    writable: [/opt/kafka/config, /opt/kafka/logs]
    entrypoint: /etc/kafka/docker/run
EOF
}

# --- up / down --------------------------------------------------------------------
# The node of a running cluster: agent (the node agent) or kubelet (NODE=kubelet).
node_mode() { cat "$run/node.mode" 2>/dev/null || echo agent; }
control_plane() { alive etcd && alive kube-apiserver && alive kube-controller-manager; }
running() {
  control_plane || return 1
  case "$(node_mode)" in
    kubelet) alive kubelet ;;
    *) alive node-agent ;;
  esac
}

# same_checkout: a cluster already up runs the binaries its images.yaml names
# (read once by the node agent at its start); reusing one started from another
# checkout would run that checkout's kraft-controller and kraft-operator.
same_checkout() {
  local theirs
  theirs="$(sed -n 's/^ *entrypoint: \(.*\)\/kraft-controller$/\1/p' "$dir/images.yaml" 2>/dev/null | head -n1)"
  [[ -z "$theirs" || "$theirs" == "$TARGET_DIR" ]] && return 0
  die "the local cluster is already up, running the binaries of $theirs, not $TARGET_DIR;" \
    "stop it first (make cluster-down) or use the checkout that started it"
}

up() {
  "$here/install-tools.sh"
  mkdir -p "$dir" "$run" "$logs"
  if running; then
    [[ "$(node_mode)" == "${NODE:-agent}" ]] ||
      die "the local cluster is already up with NODE=$(node_mode), not NODE=${NODE:-agent}; stop it first (make cluster-down)"
    same_checkout
    log "already up"
    real_node_up
    print_env
    return 0
  fi
  if ! alive etcd && ! alive kube-apiserver && ! alive kube-controller-manager && ! alive node-agent; then
    # A fresh start: no state or logs of an earlier cluster.
    network_down
    rm -rf "$logs" "$dir/etcd" "$dir/volumes" "$dir/pods"
    mkdir -p "$logs"
  fi
  log "building the node agent"
  "$CARGO" build --quiet -p kraft-node-agent
  make_pki
  # apache/kafka:<version> runs from these roots (Kafka's jars, our scripts).
  "$here/kafka-image.sh"
  write_images
  bridge_up

  start etcd "$bin/etcd" --name kraftwerk --data-dir "$dir/etcd" \
    --listen-client-urls "http://$ETCD_CLIENT" --advertise-client-urls "http://$ETCD_CLIENT" \
    --listen-peer-urls "http://$ETCD_PEER" --initial-advertise-peer-urls "http://$ETCD_PEER" \
    --initial-cluster "kraftwerk=http://$ETCD_PEER" --listen-metrics-urls "" \
    --unsafe-no-fsync --log-level warn
  wait_for etcd 60 bash -c "exec 3<>/dev/tcp/${ETCD_CLIENT%:*}/${ETCD_CLIENT#*:}"

  start kube-apiserver "$bin/kube-apiserver" \
    --etcd-servers "http://$ETCD_CLIENT" \
    --bind-address "$HOST_IP" --advertise-address "$HOST_IP" --secure-port "$API_PORT" \
    --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --client-ca-file "$pki/ca.crt" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --service-cluster-ip-range "$SERVICE_CIDR" \
    --authorization-mode Node,RBAC \
    --enable-admission-plugins NodeRestriction \
    --allow-privileged=true --profiling=false \
    --cert-dir "$dir/apiserver-certs"
  wait_for kube-apiserver 300 "$bin/kubectl" --kubeconfig "$dir/admin.kubeconfig" get --raw /readyz

  start kube-controller-manager "$bin/kube-controller-manager" \
    --kubeconfig "$dir/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$dir/controller-manager.kubeconfig" \
    --authorization-kubeconfig "$dir/controller-manager.kubeconfig" \
    --use-service-account-credentials=true \
    --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
    --cluster-signing-cert-file "$pki/ca.crt" --cluster-signing-key-file "$pki/ca.key" \
    --service-cluster-ip-range "$SERVICE_CIDR" \
    --controllers '*' --leader-elect=false \
    --bind-address 127.0.0.1 --profiling=false
  wait_for kube-controller-manager 180 bash -c "exec 3<>/dev/tcp/127.0.0.1/10257"

  echo "${NODE:-agent}" >"$run/node.mode"
  if [[ "${NODE:-agent}" == kubelet ]]; then
    wait_for "default service account" 180 "$bin/kubectl" --kubeconfig "$dir/admin.kubeconfig" \
      get serviceaccount default
    log "control plane up; the real node replaces the node agent"
    real_node_up
    print_env
    return 0
  fi
  start node-agent env RUST_LOG="${RUST_LOG:-info}" "$TARGET_DIR/kraft-node-agent" \
    --kubeconfig "$dir/node-agent.kubeconfig" --node-name "$NODE_NAME" \
    --images "$dir/images.yaml" --state-dir "$dir" --bridge "$BRIDGE" \
    --host-ip "$HOST_IP" --pod-cidr "$POD_CIDR" --api-port "$API_PORT" \
    --ca-file "$pki/ca.crt"
  wait_for "node $NODE_NAME Ready" 180 "$bin/kubectl" --kubeconfig "$dir/admin.kubeconfig" \
    wait --for=condition=Ready "node/$NODE_NAME" --timeout=1s
  wait_for "default service account" 180 "$bin/kubectl" --kubeconfig "$dir/admin.kubeconfig" \
    get serviceaccount default
  log "cluster up"
  real_node_up
  print_env
}

# The real node, when asked for (NODE=kubelet).
real_node_up() {
  case "${NODE:-agent}" in
    agent) ;;
    kubelet) "$here/real-node/node.sh" up ;;
    *) die "NODE is $NODE; expected agent (the default) or kubelet" ;;
  esac
}

down() {
  mkdir -p "$run"
  if [[ -f "$run/kubelet.pid" || -f "$run/containerd.pid" || -f "$run/kube-scheduler.pid" ]]; then
    "$here/real-node/node.sh" down
  fi
  stop node-agent
  network_down
  stop kube-controller-manager
  stop kube-apiserver
  stop etcd
  rm -f "$run/node.mode"
  # State goes with the cluster; logs stay for debugging until the next `up`.
  rm -rf "$dir/etcd" "$dir/volumes" "$dir/pods" "$dir/apiserver-certs"
  left_behind
  log "cluster down"
}

# network_gone: no pod network namespace or veth is left.
network_gone() {
  [[ -z "$(ip netns list 2>/dev/null | grep "^$NETNS_PREFIX" || true)" &&
    -z "$(ip -o link show 2>/dev/null | grep -o 'kwv[0-9a-f]*' || true)" ]]
}

# left_behind: fails, naming it, when anything of the cluster is left after down.
# The kernel removes a deleted namespace's veth pair asynchronously (seconds
# under load: over a minute was seen at load 20), so the network gets 120 s
# to go before it counts as left.
left_behind() {
  local left=() c
  poll "the pod network namespaces and veths are gone" 120 network_gone || true
  for c in etcd kube-apiserver kube-controller-manager node-agent; do
    [[ ! -f "$run/$c.pid" ]] || left+=("pid file run/$c.pid")
  done
  c="$(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$NETNS_PREFIX" | xargs || true)"
  [[ -z "$c" ]] || left+=("network namespaces $c")
  ! ip link show "$BRIDGE" >/dev/null 2>&1 || left+=("bridge $BRIDGE")
  c="$(ip -o link show 2>/dev/null | grep -o 'kwv[0-9a-f]*' | sort -u | xargs || true)"
  [[ -z "$c" ]] || left+=("veths $c")
  ((${#left[@]} == 0)) || die "cluster down left behind: ${left[*]}"
}

print_env() {
  echo "export KUBECONFIG=$dir/admin.kubeconfig"
  echo "export PATH=$bin:\$PATH"
}

status() {
  local c
  for c in etcd kube-apiserver kube-controller-manager node-agent; do
    if alive "$c"; then echo "$c: running (pid $(cat "$run/$c.pid"))"; else echo "$c: stopped"; fi
  done
  for c in containerd kubelet kube-scheduler kube-proxy coredns local-path-provisioner pod-hosts pod-logs; do
    if alive "$c"; then echo "$c: running (pid $(cat "$run/$c.pid"), the real node)"; fi
  done
  ip netns list 2>/dev/null | grep "^$NETNS_PREFIX" || true
}

print_logs() {
  local f
  for f in "$logs"/*.log; do
    [[ -f "$f" ]] || continue
    echo "===== $f (last 200 lines)"
    tail -n 200 "$f"
  done
  find "$logs" -mindepth 3 -name '*.log' 2>/dev/null | sort | while read -r f; do
    echo "===== $f (last 100 lines)"
    tail -n 100 "$f"
  done
}

case "${1:-}" in
  up) up ;;
  running) running ;;
  control-plane) control_plane ;;
  down) down ;;
  status) status ;;
  logs) print_logs ;;
  env) print_env ;;
  *) die "usage: $0 up|running|control-plane|down|status|logs|env" ;;
esac
