#!/usr/bin/env bash
# The real node (issue 24): containerd (+ runc) and the kubelet, registered as
# node kraft-kubelet with the API server that dev/cluster.sh starts, the
# local cluster's one node (`dev/cluster.sh up` and `down` start and stop it).
#
#   dev/real-node/node.sh containerd   start containerd only (idempotent)
#   dev/real-node/node.sh up           containerd, CNI config, kubelet; waits for the Node Ready;
#                                      then kube-scheduler, kube-proxy, CoreDNS and
#                                      local-path-provisioner (dev/real-node/addons.sh)
#   dev/real-node/node.sh up-standalone  the same without an API server (static pods)
#   dev/real-node/node.sh down         stop the kubelet's pods, the kubelet and containerd
#   dev/real-node/node.sh status       what runs
#
# dev/cluster.sh up and down run it; one cluster per machine (where several
# checkouts share the machine, wrap their make targets in `flock
# /tmp/kraftwerk-cluster.lock ...`). Needs root, the control plane up
# (`dev/cluster.sh up`) for `up`, and the tools of dev/real-node/install.sh.
set -euo pipefail

# shellcheck source=dev/real-node/common.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"
# shellcheck source=dev/poll.sh
source "$dev_dir/poll.sh"
# shellcheck source=dev/kube-pki.sh
source "$dev_dir/kube-pki.sh"

[[ $(id -u) -eq 0 ]] || rdie "must run as root (containers, cgroups, network)"

HOST_IP=10.244.0.1          # the bridge of dev/cluster.sh: the API server listens here
API_PORT=6443
# The pods get their own bridge and range, next to the host's address on
# dev/cluster.sh's kw0 (10.244.0.1/24, the API server's).
REAL_BRIDGE=kwr0
REAL_POD_CIDR=10.244.1.0/24
REAL_GATEWAY=10.244.1.1
# Pods the kubelet admits (its maxPods), read when it starts: 50 for the
# tests; `make bench-operator` starts the cluster with more (issue 23: 50
# quorums of 3 voters). At most 250, the addresses of $REAL_POD_CIDR.
MAX_PODS="${KRAFTWERK_MAX_PODS:-50}"
[[ "$MAX_PODS" =~ ^[0-9]+$ ]] && ((MAX_PODS >= 10 && MAX_PODS <= 250)) \
  || rdie "KRAFTWERK_MAX_PODS must be a number from 10 to 250, not '$MAX_PODS'"


wait_for() {
  poll "$@" && return 0
  tail -n 40 "$logs/containerd.log" "$logs/kubelet.log" >&2 2>/dev/null || true
  exit 1
}

# containerd's own configuration: its store under the cache (images survive a
# `down`), its state and socket under /run/kraftwerk (not Debian's
# /run/containerd), the cgroupfs driver (this VM has cgroup v1 controllers and
# no systemd), oom_score_adj clamped (below), the sandbox image built here, the CNI plugins built here.
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
  # The VM's root has no CAP_SYS_RESOURCE (CapBnd 000001fffeffffff: bit 24
  # clear), so runc cannot lower oom_score_adj below its own (the kubelet
  # asks -998 for the sandbox): "nsexec: failed to update
  # /proc/self/oom_score_adj: Permission denied". Clamp it, as for rootless.
  restrict_oom_score_adj = true
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

kubectl_() { "$bin/kubectl" --kubeconfig "$cluster_dir/admin.kubeconfig" "$@"; }

# The kubelet's client certificate: CN system:node:<name>, O system:nodes, so
# the API server's Node authorizer and NodeRestriction admission treat it as
# a kubelet.
kubelet_credentials() {
  cert "kubelet-$REAL_NODE_NAME" "system:node:$REAL_NODE_NAME" system:nodes
  write_kubeconfig "$rn/kubelet.kubeconfig" "$REAL_NODE_NAME" "kubelet-$REAL_NODE_NAME"
}

# Pod network: the reference bridge plugin on $REAL_BRIDGE with host-local
# addresses from $REAL_POD_CIDR; no masquerade (pods reach this host and each
# other, nothing else), portmap for hostPort.
write_cni_config() {
  mkdir -p "$CNI_CONF" "$rn/cni/ipam"
  cat >"$CNI_CONF/10-kraftwerk.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "kraftwerk",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$REAL_BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$rn/cni/ipam",
        "ranges": [[{"subnet": "$REAL_POD_CIDR", "gateway": "$REAL_GATEWAY"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
}

# The kubelet's configuration (KubeletConfiguration v1beta1). Eviction and
# image GC thresholds are set so that a shared, half-full test disk never makes
# the kubelet evict pods or delete the imported images (they cannot be pulled
# again). failCgroupV1 false: this VM has cgroup v1 controllers.
#
# standalone (STANDALONE=1): no API server; the kubelet serves on loopback
# only and runs the static pods of $rn/manifests.
write_kubelet_config() {
  local auth
  if [[ -n "${STANDALONE:-}" ]]; then
    auth="address: 127.0.0.1
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
staticPodPath: $rn/manifests"
  else
    auth="address: $HOST_IP
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $pki/ca.crt}
authorization: {mode: Webhook}
clusterDNS: [$HOST_IP]"
  fi
  cat >"$rn/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
$auth
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://$CONTAINERD_SOCK
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
podLogsDir: $POD_LOGS_DIR
evictionHard: {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
podPidsLimit: 4096
maxPods: $MAX_PODS
EOF
}

# The kernel settings the kubelet sets at its start (its
# protectKernelDefaults is false): saved before the first `up`, put back at
# `down`, so that the shared machine keeps its own (kernel.panic_on_oops=1
# and kernel.panic=10 would reboot it on an oops).
TUNABLES=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes)
save_tunables() {
  [[ -f "$rn/sysctl.saved" ]] || sysctl -e "${TUNABLES[@]}" >"$rn/sysctl.saved"
}
restore_tunables() {
  [[ -f "$rn/sysctl.saved" ]] || return 0
  sysctl -q -e -p "$rn/sysctl.saved" || true
  rm -f "$rn/sysctl.saved"
}

# up-standalone: containerd and the kubelet without an API server (static
# pods from $rn/manifests, seen with crictl). Touches no cluster, so it needs
# no lock; dev/real-node/standalone-test.sh uses it.
up_standalone() {
  "$real_here/install.sh"
  mkdir -p "$rn" "$KUBELET_ROOT" "$rn/kubelet-pki" "$rn/manifests"
  write_cni_config
  start_containerd
  "$real_here/images.sh" import
  STANDALONE=1 write_kubelet_config
  save_tunables
  echo standalone >"$run/kubelet.mode"
  start kubelet "$bin/kubelet" --config "$rn/kubelet.yaml" \
    --root-dir "$KUBELET_ROOT" --cert-dir "$rn/kubelet-pki" \
    --hostname-override "$REAL_NODE_NAME" --v="${KUBELET_V:-1}"
  wait_for "kubelet healthz" 120 curl -fsS http://127.0.0.1:10248/healthz
  rlog "kubelet standalone up (static pods: $rn/manifests)"
}

up() {
  "$real_here/install.sh"
  "$dev_dir/cluster.sh" control-plane || rdie "the control plane is not up: run dev/cluster.sh up first (under the lock)"
  mkdir -p "$rn" "$KUBELET_ROOT" "$rn/kubelet-pki"
  write_cni_config
  start_containerd
  "$real_here/images.sh" import
  kubelet_credentials
  write_kubelet_config
  save_tunables
  echo cluster >"$run/kubelet.mode"
  start kubelet "$bin/kubelet" --config "$rn/kubelet.yaml" --kubeconfig "$rn/kubelet.kubeconfig" \
    --root-dir "$KUBELET_ROOT" --cert-dir "$rn/kubelet-pki" \
    --hostname-override "$REAL_NODE_NAME" --node-ip "$HOST_IP" --v="${KUBELET_V:-1}"
  wait_for "node $REAL_NODE_NAME Ready" 180 kubectl_ wait --for=condition=Ready "node/$REAL_NODE_NAME" --timeout=1s
  rlog "node $REAL_NODE_NAME up: $(kubectl_ get node "$REAL_NODE_NAME" --no-headers -o wide | awk '{print $NF}')"
  "$real_here/addons.sh" up
}

# The iptables chains the kubelet (KUBE-FIREWALL, canaries) and kube-proxy
# (KUBE-SERVICES...) leave when they exit, in both families: the jumps to them
# from the built-in chains first, then the chains. (`kube-proxy --cleanup`
# does not do it here: it fails on the ipvs and nftables modes it also tries,
# "could not find nftables binary".) Only the local cluster makes KUBE-*
# chains on this machine (one cluster per machine, under the lock).
iptables_cleanup() {
  local ipt table rule chain
  for ipt in iptables ip6tables; do
    command -v "$ipt" >/dev/null 2>&1 || continue
    for table in filter nat mangle; do
      "$ipt" -w -t "$table" -S >/dev/null 2>&1 || continue
      while read -r rule; do
        eval "$ipt -w -t $table ${rule/#-A /-D }" || true
      done < <("$ipt" -w -t "$table" -S | grep -E '^-A [A-Z]+ .*-j KUBE-' || true)
      for chain in $("$ipt" -w -t "$table" -S | awk '/^-N KUBE-/{print $2}'); do "$ipt" -w -t "$table" -F "$chain"; done
      for chain in $("$ipt" -w -t "$table" -S | awk '/^-N KUBE-/{print $2}'); do "$ipt" -w -t "$table" -X "$chain"; done
    done
  done
}

# Whether anything of the node is there to stop: a pid file of its
# processes, containerd's state under /run/kraftwerk, its bridge. The rest of
# `down` also clears machine-wide things (KUBE-* iptables chains, kubepods
# cgroups), so it runs only then.
node_state() {
  local c
  for c in containerd kubelet "${ADDONS[@]}"; do
    [[ ! -f "$run/$c.pid" ]] || return 0
  done
  [[ -d "$rn_state" ]] || ip link show "$REAL_BRIDGE" >/dev/null 2>&1
}

# down: the kubelet does not stop its pods when it exits, so they are removed
# through the CRI first (crictl rmp --force: stop and remove every sandbox),
# then containerd stops, the kubelet's mounts and cgroups, the bridge and the
# Node object go. containerd's image store stays (the cache).
down() {
  mkdir -p "$run"
  node_state || return 0
  "$real_here/addons.sh" down
  stop kubelet
  restore_tunables
  if ctr_ version >/dev/null 2>&1; then
    "$bin/crictl" --runtime-endpoint "unix://$CONTAINERD_SOCK" rmp --all --force >/dev/null 2>&1 || true
    local id
    for id in $(ctr_ -n k8s.io tasks ls -q 2>/dev/null); do
      ctr_ -n k8s.io tasks kill -s SIGKILL "$id" >/dev/null 2>&1 || true
    done
  fi
  stop containerd
  iptables_cleanup
  local m
  # The kubelet bind-mounts its root dir onto itself (rshared), then pods'
  # volumes below it: deepest first.
  for m in $(awk -v r="$KUBELET_ROOT" '$2 == r || index($2, r "/") == 1 {print $2}' /proc/self/mounts | sort -r); do
    umount -l "$m" 2>/dev/null || true
  done
  rm -rf "$KUBELET_ROOT" "$rn/cni/ipam" "$rn_state"
  # The removed pods' container logs (the kubelet's podLogsDir, and its
  # symlinks in /var/log/containers): after the next `up`,
  # dev/real-node/pod-logs.sh would copy them again into cluster/logs, where a
  # new pod of the same namespace and name would read an old run's lines.
  rm -rf "$POD_LOGS_DIR"
  [[ ! -d /var/log/containers ]] || find /var/log/containers -maxdepth 1 -lname "$POD_LOGS_DIR/*" -delete
  for m in /sys/fs/cgroup/*/kubepods; do
    [[ -d "$m" ]] && find "$m" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
  if ip link show "$REAL_BRIDGE" >/dev/null 2>&1; then ip link delete "$REAL_BRIDGE"; fi
  # The Node object, only when this kubelet registered one (never touch a
  # cluster from a standalone run).
  if [[ "$(cat "$run/kubelet.mode" 2>/dev/null)" == cluster ]] && kubectl_ get --raw /readyz >/dev/null 2>&1; then
    kubectl_ delete node "$REAL_NODE_NAME" --ignore-not-found --wait=false >/dev/null || true
  fi
  rm -f "$run/kubelet.mode"
  rm -rf "$rn/manifests"
  rlog "real node down"
}

status() {
  local c
  for c in containerd kubelet; do
    if alive "$c"; then echo "$c: running (pid $(cat "$run/$c.pid"))"; else echo "$c: stopped"; fi
  done
  "$real_here/addons.sh" status || true
}

case "${1:-}" in
  containerd) start_containerd ;;
  up) up ;;
  up-standalone) up_standalone ;;
  down) down ;;
  status) status ;;
  *) rdie "usage: $0 containerd|up|up-standalone|down|status" ;;
esac
