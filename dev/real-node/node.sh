#!/usr/bin/env bash
# The real node (issue 24): containerd (+ runc) and the kubelet, registered as
# node kraft-kubelet with the API server that dev/cluster.sh starts. It is an
# extra node beside the node agent's kraft-node, selected by a flag
# (`NODE=kubelet make cluster-up`); the node agent stays the default.
#
#   dev/real-node/node.sh containerd   start containerd only (idempotent)
#   dev/real-node/node.sh up           containerd, CNI config, kubelet; waits for the Node Ready
#   dev/real-node/node.sh down         stop the kubelet's pods, the kubelet and containerd
#   dev/real-node/node.sh status       what runs
#
# Wrap every use in `flock /tmp/kraftwerk-cluster.lock ...` (one cluster per
# machine). Needs root, the control plane up (`dev/cluster.sh up`) for `up`,
# and the tools of dev/real-node/install.sh.
set -euo pipefail

# shellcheck source=dev/real-node/common.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"
# shellcheck source=dev/poll.sh
source "$dev_dir/poll.sh"

[[ $(id -u) -eq 0 ]] || rdie "must run as root (containers, cgroups, network)"

HOST_IP=10.244.0.1          # the bridge of dev/cluster.sh: the API server listens here
API_PORT=6443
# The kubelet node's pods get their own bridge and range, next to the node
# agent's kw0 / 10.244.0.0/24; a host route joins the two.
REAL_BRIDGE=kwr0
REAL_POD_CIDR=10.244.1.0/24
REAL_GATEWAY=10.244.1.1

alive() { [[ -f "$run/$1.pid" ]] && kill -0 "$(cat "$run/$1.pid")" 2>/dev/null; }

start() {
  local name="$1"
  shift
  if alive "$name"; then return 0; fi
  mkdir -p "$run" "$logs"
  setsid "$@" >>"$logs/$name.log" 2>&1 </dev/null &
  echo $! >"$run/$name.pid"
  rlog "started $name (pid $!)"
}

stop() {
  local name="$1" pid
  [[ -f "$run/$name.pid" ]] || return 0
  pid="$(cat "$run/$name.pid")"
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    rlog "stopped $name (pid $pid)"
  fi
  rm -f "$run/$name.pid"
}

wait_for() {
  poll "$@" && return 0
  tail -n 40 "$logs/containerd.log" "$logs/kubelet.log" >&2 2>/dev/null || true
  exit 1
}

# containerd's own configuration: its store under the cache (images survive a
# `down`), its state and socket under /run/kraftwerk (not Debian's
# /run/containerd), the cgroupfs driver (this VM has cgroup v1 controllers and
# no systemd), the sandbox image built here, the CNI plugins built here.
write_containerd_config() {
  mkdir -p "$rn" "$CNI_CONF" "$rn_state/containerd"
  cat >"$rn/containerd.toml" <<EOF
# Written by dev/real-node/node.sh.
version = 2
root = "$rn/containerd"
state = "$rn_state/containerd"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]

[grpc]
  address = "$CONTAINERD_SOCK"

[plugins."io.containerd.internal.v1.opt"]
  path = "$rn/containerd-opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  disable_apparmor = true
  enable_selinux = false
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "${KRAFTWERK_SNAPSHOTTER:-overlayfs}"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "${KRAFTWERK_OCI_RUNTIME:-/usr/bin/runc}"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN"
    conf_dir = "$CNI_CONF"
    max_conf_num = 1
EOF
}

start_containerd() {
  write_containerd_config
  start containerd containerd --config "$rn/containerd.toml"
  wait_for containerd 60 ctr --address "$CONTAINERD_SOCK" version
}

case "${1:-}" in
  containerd) start_containerd ;;
  *) rdie "usage: $0 containerd|up|down|status" ;;
esac
