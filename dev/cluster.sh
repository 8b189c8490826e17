#!/usr/bin/env bash
# The local Kubernetes cluster: a real etcd, kube-apiserver and
# kube-controller-manager built from their Go modules, and one real node
# (issue 24): containerd + runc from Debian's packages and the kubelet, node
# kraft-kubelet, with kube-scheduler, kube-proxy, CoreDNS and
# local-path-provisioner (dev/real-node/node.sh). Pods run the images
# `make images` builds from our Dockerfile's final stages. See
# docs/local-cluster.md.
#
#   dev/cluster.sh up       start everything (idempotent; imports the saved
#                           images again); prints `export KUBECONFIG=...`
#   dev/cluster.sh running  exit 0 when every component runs (the tests reuse such
#                           a cluster and leave it up; they stop only one they started)
#   dev/cluster.sh control-plane  exit 0 when etcd, the API server and the controller manager run
#   dev/cluster.sh down     stop everything; fails unless no process, network
#                           namespace, bridge or containerd shim of the cluster is left
#   dev/cluster.sh status   what runs
#   dev/cluster.sh logs     print the component logs and every container log
#
# Must run as root (containers, cgroups, bridges, iptables). One cluster per
# machine: the bridges, their addresses and the ports below are fixed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${KRAFTWERK_CACHE:-$HOME/.cache/kraftwerk}"
bin="$cache/bin"
dir="$cache/cluster"
pki="$dir/pki"
run="$dir/run"
logs="$dir/logs"

# The host's address on the cluster network, on a bridge of its own: the API
# server and CoreDNS listen here; the node's pods (10.244.1.0/24 on kwr0,
# dev/real-node/node.sh) reach it through their gateway.
BRIDGE="${KRAFTWERK_BRIDGE:-kw0}"
HOST_IP=10.244.0.1
SERVICE_CIDR=10.96.0.0/24   # ClusterIPs, served by kube-proxy on the node
API_PORT=6443
ETCD_CLIENT=127.0.0.1:2379
ETCD_PEER=127.0.0.1:2380

log() { printf '[cluster] %s\n' "$*" >&2; }
die() { printf '[cluster] error: %s\n' "$*" >&2; exit 1; }

[[ $(id -u) -eq 0 ]] || die "must run as root (containers, cgroups, bridges, iptables)"

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
  if [[ ! -f "$pki/sa.key" ]]; then
    openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
    openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
  fi
  kubeconfig admin
  kubeconfig controller-manager
}

# --- network --------------------------------------------------------------------
bridge_up() {
  if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
    ip link add "$BRIDGE" type bridge
  fi
  ip addr replace "$HOST_IP/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
}

bridge_down() {
  if ip link show "$BRIDGE" >/dev/null 2>&1; then
    ip link delete "$BRIDGE"
  fi
}

# --- up / down --------------------------------------------------------------------
control_plane() { alive etcd && alive kube-apiserver && alive kube-controller-manager; }
running() { control_plane && alive kubelet; }

up() {
  # NODE=agent chose the node agent before issue 24; other NODE values (npm
  # sets one) are not ours.
  [[ "${NODE:-}" != agent ]] ||
    die "NODE=agent: the node agent is gone (issue 24); the cluster's one node is the kubelet: unset NODE"
  "$here/install-tools.sh"
  mkdir -p "$dir" "$run" "$logs"
  if running; then
    log "already up"
    # Idempotent; imports the saved images again (those of a newer `make images`).
    "$here/real-node/node.sh" up
    print_env
    return 0
  fi
  if ! alive etcd && ! alive kube-apiserver && ! alive kube-controller-manager; then
    # A fresh start: no state or logs of an earlier cluster.
    rm -rf "$logs" "$dir/etcd"
    mkdir -p "$logs"
  fi
  make_pki
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

  wait_for "default service account" 180 "$bin/kubectl" --kubeconfig "$dir/admin.kubeconfig" \
    get serviceaccount default
  log "control plane up; starting the node"
  "$here/real-node/node.sh" up
  log "cluster up"
  print_env
}

down() {
  mkdir -p "$run"
  "$here/real-node/node.sh" down
  stop kube-controller-manager
  stop kube-apiserver
  stop etcd
  bridge_down
  # State goes with the cluster; logs stay for debugging until the next `up`.
  rm -rf "$dir/etcd" "$dir/apiserver-certs"
  left_behind
  log "cluster down"
}

# The pods' network namespaces (containerd's cni-<id>) and their veths go
# with their sandboxes, which node.sh down removes through the CRI.
cni_netns() { ip netns list 2>/dev/null | awk '{print $1}' | grep '^cni-' || true; }
network_gone() { [[ -z "$(cni_netns)" ]]; }

# left_behind: fails, naming it, when anything of the cluster is left after down.
# The kernel removes a deleted namespace asynchronously (seconds under load),
# so the network gets 120 s to go before it counts as left.
left_behind() {
  local left=() c
  poll "the pods' network namespaces are gone" 120 network_gone || true
  # Every process the scripts start has its pid file here; `stop` removes it.
  for c in "$run"/*.pid; do
    [[ ! -e "$c" ]] || left+=("pid file run/${c##*/}")
  done
  c="$(cni_netns | xargs)"
  [[ -z "$c" ]] || left+=("network namespaces $c")
  for c in "$BRIDGE" kwr0; do
    ! ip link show "$c" >/dev/null 2>&1 || left+=("bridge $c")
  done
  c="$(pgrep -f 'containerd-shim.* -address /run/kraftwerk/' | xargs || true)"
  [[ -z "$c" ]] || left+=("containerd shims (pids $c)")
  [[ ! -e /run/kraftwerk ]] || left+=("/run/kraftwerk")
  c="$(awk -v r="$cache/real-node/" 'index($2, r) == 1 {print $2}' /proc/self/mounts | xargs)"
  [[ -z "$c" ]] || left+=("mounts $c")
  for c in iptables ip6tables; do
    command -v "$c" >/dev/null 2>&1 || continue
    ! "$c" -w -S 2>/dev/null | grep -q '^-N KUBE-' || left+=("$c KUBE-* chains (filter)")
    ! "$c" -w -t nat -S 2>/dev/null | grep -q '^-N KUBE-' || left+=("$c KUBE-* chains (nat)")
  done
  ((${#left[@]} == 0)) || die "cluster down left behind: ${left[*]}"
}

print_env() {
  echo "export KUBECONFIG=$dir/admin.kubeconfig"
  echo "export PATH=$bin:\$PATH"
}

status() {
  local c
  for c in etcd kube-apiserver kube-controller-manager; do
    if alive "$c"; then echo "$c: running (pid $(cat "$run/$c.pid"))"; else echo "$c: stopped"; fi
  done
  "$here/real-node/node.sh" status
}

print_logs() {
  local f
  [[ -d "$logs" ]] || return 0
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
