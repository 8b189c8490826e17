#!/usr/bin/env bash
# The cluster services of the local cluster's one node (issue 24), each a
# host process with its pid and log beside the cluster's: the first four
# built from Go modules by dev/real-node/install.sh, the last two our scripts:
#
#   kube-scheduler          binds pods to kraft-kubelet (identity system:kube-scheduler)
#   kube-proxy (iptables)   Service ClusterIPs, among them kubernetes 10.96.0.1:443
#                           (identity system:kube-proxy)
#   CoreDNS                 cluster DNS on $HOST_IP:53 (the kubelet's clusterDNS):
#                           Services and StatefulSet pod names (kubernetes plugin)
#   local-path-provisioner  the default StorageClass local-path (rancher.io/local-path,
#                           Immediate): hostPath PVs under $rn/local-path, made by helper pods
#   pod-hosts               $cluster_dir/hosts, pod names for Java tools on the host
#                           (dev/real-node/pod-hosts.sh)
#   pod-logs                container logs copied to $cluster_dir/logs/<ns>/<pod>/<container>.log
#                           (dev/real-node/pod-logs.sh), where the cluster tests read them
#
#   dev/real-node/addons.sh up     start them (idempotent), wait until each serves
#   dev/real-node/addons.sh down   stop them, remove the volumes (node.sh down removes
#                                  kube-proxy's and the kubelet's iptables chains)
#
# Called by dev/real-node/node.sh up/down (not by up-standalone). CoreDNS and the provisioner use the admin
# kubeconfig: they are dev tools on this host, not pods.
set -euo pipefail

# shellcheck source=dev/real-node/common.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"
# shellcheck source=dev/poll.sh
source "$dev_dir/poll.sh"
# shellcheck source=dev/kube-pki.sh
source "$dev_dir/kube-pki.sh"

[[ $(id -u) -eq 0 ]] || rdie "must run as root (iptables, port 53)"

HOST_IP=10.244.0.1
# shellcheck disable=SC2034  # read by write_kubeconfig (dev/kube-pki.sh)
API_PORT=6443
CLUSTER_CIDR=10.244.0.0/16
LOCAL_PATH_DIR="$rn/local-path"
LOCAL_PATH_NS=local-path-storage
BUSYBOX_IMAGE=localhost/kraftwerk/busybox:static
admin_kubeconfig="$cluster_dir/admin.kubeconfig"
kubectl_() { "$bin/kubectl" --kubeconfig "$admin_kubeconfig" "$@"; }


wait_for() {
  local name="$1"
  shift
  poll "$name" "$@" && return 0
  tail -n 40 "$logs/$name.log" >&2 2>/dev/null || true
  exit 1
}

# kube-scheduler: the default scheduler (schedulerName default-scheduler),
# with the built-in system:kube-scheduler role.
# --pod-max-in-unschedulable-pods-duration 20s (default 5m; deprecated in
# v1.33 but honoured, and a scheduler that refused it would stop `up` with
# its log): a pod whose immediate PVC binds can miss its requeue
# (kubernetes#93552, open): the queue's handler for the last of the binding's
# PV and PVC updates can run before the volume binder's cache has the bound
# PVC, the retry still reads it unbound, and no event is left to requeue the
# pod, so it waits for the scheduler's sweep of unschedulable pods, after
# 5 min by default. In CI (7 December) `make demo` timed out waiting for 5
# voters: quorum-4's volume was provisioned 4 s after its pod was created,
# and the kubelet never saw the pod in the 5 min that followed; most likely
# this race (not reproduced here in 20 scale-ups). The sweep runs every
# 30 s: such a pod is retried within 50 s. A cluster already up keeps the
# scheduler it started with until `make cluster-down`.
scheduler_up() {
  cert kube-scheduler system:kube-scheduler ""
  write_kubeconfig "$rn/kube-scheduler.kubeconfig" system:kube-scheduler kube-scheduler
  start kube-scheduler "$bin/kube-scheduler" --kubeconfig "$rn/kube-scheduler.kubeconfig" \
    --authentication-kubeconfig "$rn/kube-scheduler.kubeconfig" \
    --authorization-kubeconfig "$rn/kube-scheduler.kubeconfig" \
    --leader-elect=false --bind-address 127.0.0.1 --profiling=false \
    --pod-max-in-unschedulable-pods-duration 20s
  wait_for kube-scheduler 120 curl -fsSk https://127.0.0.1:10259/healthz
}

# kube-proxy in iptables mode (this host's iptables is 1.8.9, nf_tables
# backend). Conntrack limits and timeouts are left as the shared machine has
# them (0 = leave as is), and no route_localnet (localhostNodePorts false).
proxy_up() {
  # A running kube-proxy exits when its configuration file changes.
  alive kube-proxy && return 0
  cert kube-proxy system:kube-proxy ""
  write_kubeconfig "$rn/kube-proxy.kubeconfig" system:kube-proxy kube-proxy
  cat >"$rn/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $rn/kube-proxy.kubeconfig}
hostnameOverride: $REAL_NODE_NAME
mode: iptables
clusterCIDR: $CLUSTER_CIDR
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
iptables: {localhostNodePorts: false}
EOF
  start kube-proxy "$bin/kube-proxy" --config "$rn/kube-proxy.yaml"
  wait_for kube-proxy 120 bash -c "iptables -w -t nat -S KUBE-SERVICES 2>/dev/null | grep -q 'default/kubernetes:https'"
}

# CoreDNS on the host at $HOST_IP:53 (the address of dev/cluster.sh's bridge
# kw0, which exists before any pod; the pods reach it through their
# gateway). Names it does not own go to this host's resolver.
#
# Caching as kubeadm's Corefile of the same Kubernetes version has it
# (cmd/kubeadm/app/phases/addons/dns/manifests.go, v1.33.13): answers for
# cluster.local are never cached (`disable success` and `disable denial`), so
# a restarted StatefulSet pod's name gives its new IP as soon as the
# EndpointSlice has it; `ttl 30` is only what clients are told. Names
# forwarded to the host's resolver are cached up to 30 s. The `cache 5` this
# had before answered a restarted pod's name with its previous IP for up to
# 5 s after the EndpointSlice moved on; a pod dialling it got "No route to
# host", that IP being gone from the bridge (docs/local-cluster.md, "DNS").
# CoreDNS reads its Corefile only at start: a running one whose Corefile
# differs is restarted with the new one.
coredns_up() {
  cat >"$rn/Corefile.new" <<EOF
.:53 {
    bind $HOST_IP
    errors
    health 127.0.0.1:18080
    ready 127.0.0.1:18181
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $admin_kubeconfig kraftwerk
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }
    forward . /etc/resolv.conf
    cache 30 {
        disable success cluster.local
        disable denial cluster.local
    }
}
EOF
  if alive coredns; then
    if cmp -s "$rn/Corefile.new" "$rn/Corefile"; then
      rm -f "$rn/Corefile.new"
      return 0
    fi
    rlog "the Corefile changed: restarting CoreDNS"
    stop coredns
  fi
  mv "$rn/Corefile.new" "$rn/Corefile"
  start coredns "$bin/coredns" -conf "$rn/Corefile"
  wait_for coredns 120 curl -fsS http://127.0.0.1:18181/ready
}

# local-path-provisioner: its namespace, service account, ConfigMap (paths,
# setup and teardown scripts, helper pod on our busybox image) and the
# StorageClass, marked the default; then the provisioner itself. Its
# "sharedFileSystemPath" mode (volumes without node affinity) with Immediate
# binding: the cluster has one node on this host's disk, and a PVC then binds
# before any pod uses it (the cluster tests adopt.rs and one_voter.rs write
# to a bound PVC's hostPath before a pod starts; with WaitForFirstConsumer
# they timed out on "PVC data-q-0 bound").
provisioner_up() {
  mkdir -p "$LOCAL_PATH_DIR"
  kubectl_ apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Namespace
metadata: {name: $LOCAL_PATH_NS}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: local-path-provisioner-service-account, namespace: $LOCAL_PATH_NS}
automountServiceAccountToken: false
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: local-path
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: rancher.io/local-path
volumeBindingMode: Immediate
reclaimPolicy: Delete
---
apiVersion: v1
kind: ConfigMap
metadata: {name: local-path-config, namespace: $LOCAL_PATH_NS}
data:
  config.json: |-
    {"sharedFileSystemPath": "$LOCAL_PATH_DIR"}
  setup: |-
    #!/bin/sh
    set -eu
    mkdir -m 0777 -p "\$VOL_DIR"
  teardown: |-
    #!/bin/sh
    set -eu
    rm -rf "\$VOL_DIR"
  helperPod.yaml: |-
    apiVersion: v1
    kind: Pod
    metadata: {name: helper-pod}
    spec:
      automountServiceAccountToken: false
      containers:
      - name: helper-pod
        image: $BUSYBOX_IMAGE
        imagePullPolicy: Never
EOF
  start local-path-provisioner "$bin/local-path-provisioner" start \
    --kubeconfig "$admin_kubeconfig" --namespace "$LOCAL_PATH_NS" \
    --helper-image "$BUSYBOX_IMAGE" --configmap-name local-path-config
  wait_for local-path-provisioner 60 alive local-path-provisioner
}

# pod-hosts: the host's own view of pod names (dev/real-node/pod-hosts.sh);
# pod-logs: container logs where the cluster tests read them (dev/real-node/pod-logs.sh).
pod_hosts_up() {
  start pod-hosts "$real_here/pod-hosts.sh"
  wait_for pod-hosts 60 grep -q kubernetes.default "$cluster_dir/hosts"
  start pod-logs "$real_here/pod-logs.sh"
  wait_for pod-logs 60 alive pod-logs
}

up() {
  scheduler_up
  proxy_up
  coredns_up
  provisioner_up
  pod_hosts_up
  rlog "cluster services up: kube-scheduler, kube-proxy, CoreDNS on $HOST_IP:53, StorageClass local-path"
}

down() {
  mkdir -p "$run"
  local i
  for ((i = ${#ADDONS[@]} - 1; i >= 0; i--)); do stop "${ADDONS[i]}"; done
  rm -rf "$LOCAL_PATH_DIR"
}

# status: one line per service; exit 1 when one is not running.
status() {
  local c rc=0
  for c in "${ADDONS[@]}"; do
    if alive "$c"; then echo "$c: running (pid $(cat "$run/$c.pid"))"; else echo "$c: stopped"; rc=1; fi
  done
  return "$rc"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  *) rdie "usage: $0 up|down|status" ;;
esac
