#!/usr/bin/env bash
# Smoke test of the local cluster and its node (`make test-cluster`, issues 8
# and 24): on the cluster of dev/cluster.sh (a cluster already up, such as the
# one `make demo` leaves, is reused and left up; else one is started, and
# stopped at the end), checks:
#
#   1. node kraft-kubelet is Ready and reports containerd://1.6.x as its runtime
#   2. a pod of the FROM-scratch busybox image, bound to the node, is Running
#      with an IP of the CNI bridge's range, and `crictl ps` lists its container
#   3. ghcr.io/kraftwerk/kraft-controller runs as a pod (`--version`, exit 0)
#      as uid 65532 from the image's USER
#   4. securityContext is enforced: with readOnlyRootFilesystem a write to /
#      fails ("Read-only file system"), and runAsNonRoot refuses an image whose
#      user is root (CreateContainerConfigError)
#   5. kube-scheduler binds a pod that names no node to kraft-kubelet
#   6. the kubernetes Service's ClusterIP 10.96.0.1:443 answers from a pod
#      (kube-proxy's iptables rules)
#   7. a StatefulSet's PVC is provisioned and bound (local-path-provisioner),
#      its pod writes to it as uid 65532, and CoreDNS resolves both
#      kubernetes.default and the StatefulSet pod's own name, the latter
#      uncached (dig: the same full TTL twice)
#   8. deleting the StatefulSet garbage-collects its pod; deleting the PVC
#      deletes its PV and the volume's directory
#   9. on a cluster it started: `dev/cluster.sh down` leaves no process,
#      network namespace, bridge or containerd shim
#
# Everything it creates is in its namespace (and that namespace's PV), so it
# passes beside other workloads (the demo's quorum). `make test-cluster` runs
# it (after `make cluster-images`); where other checkouts may use the one
# cluster of this machine, wrap it: `flock /tmp/kraftwerk-cluster.lock make
# test-cluster`. Prints the node's and pods' state on failure.
set -euo pipefail

# shellcheck source=dev/real-node/common.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"
# shellcheck source=dev/poll.sh
source "$dev_dir/poll.sh"

NS=realnode-smoke
kubectl_() { "$bin/kubectl" --kubeconfig "$cluster_dir/admin.kubeconfig" "$@"; }

started_cluster=0
failed=0
cleanup() {
  local rc=$?
  if ((rc != 0 || failed)); then
    rlog "FAILED; state of the node and the pods:"
    kubectl_ get node -o wide >&2 || true
    kubectl_ -n "$NS" get pods -o wide >&2 || true
    kubectl_ -n "$NS" describe pods >&2 2>/dev/null | tail -n 60 >&2 || true
    tail -n 40 "$logs/kubelet.log" >&2 2>/dev/null || true
  fi
  kubectl_ delete namespace "$NS" --ignore-not-found --wait=true --timeout=120s >/dev/null 2>&1 || true
  if ((started_cluster)); then
    # Fails, naming what, when anything of the cluster is left.
    if "$dev_dir/cluster.sh" down; then
      rlog "ok: cluster down leaves no process, network namespace, bridge or shim"
    else
      rlog "NOT OK: cluster down left state behind"
      rc=1
    fi
  else
    rlog "skipped: cluster down (the cluster was up before this test: left up for its owner)"
  fi
  ((rc != 0)) || rlog "smoke test passed"
  exit "$rc"
}

# A control plane that runs (even with its node down, which `up` restarts)
# is someone else's cluster: never stopped here.
if ! "$dev_dir/cluster.sh" control-plane; then
  started_cluster=1
fi
trap cleanup EXIT
"$dev_dir/cluster.sh" up >/dev/null

node="$REAL_NODE_NAME"
runtime="$(kubectl_ get node "$node" -o jsonpath='{.status.nodeInfo.containerRuntimeVersion}')"
kubectl_ get node -o wide
crictl_ version
check "node $node runs containerd 1.6 ($runtime)" [ "${runtime#containerd://1.6.}" != "$runtime" ]

# A namespace of an earlier run (a failed one, on a cluster that stayed up) goes first.
kubectl_ delete namespace "$NS" --ignore-not-found --wait=true --timeout=120s >/dev/null
kubectl_ create namespace "$NS" >/dev/null
# pod NAME IMAGE RESTART SECURITY_CONTEXT ARGS_JSON: a pod bound to the real
# node by name (kube-scheduler is checked below).
pod() {
  kubectl_ -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  nodeName: $node
  restartPolicy: $3
  automountServiceAccountToken: false
  containers:
    - name: main
      image: $2
      imagePullPolicy: Never
      args: $5
      securityContext: $4
EOF
}
phase() { [[ "$(kubectl_ -n "$NS" get pod "$1" -o jsonpath='{.status.phase}')" == "$2" ]]; }
waiting_reason() {
  [[ "$(kubectl_ -n "$NS" get pod "$1" -o jsonpath='{.status.containerStatuses[0].state.waiting.reason}')" == "$2" ]]
}

pod sleeper localhost/kraftwerk/busybox:static Always '{}' '["sleep", "3600"]'
check "busybox pod Running" poll "pod sleeper Running" 120 phase sleeper Running
ip="$(kubectl_ -n "$NS" get pod sleeper -o jsonpath='{.status.podIP}')"
check "pod IP $ip in 10.244.1.0/24" [ "${ip#10.244.1.}" != "$ip" ]
crictl_ ps
# container_of POD: the id of POD's (latest) container, this test's namespace only
# (the demo's and the cluster tests' pods may run beside it).
container_of() {
  crictl_ ps -a -q --label "io.kubernetes.pod.name=$1" --label "io.kubernetes.pod.namespace=$NS" | head -n1
}
listed() { crictl_ ps -q --label "io.kubernetes.pod.name=sleeper" --label "io.kubernetes.pod.namespace=$NS" | grep -q .; }
check "crictl ps lists the pod's container" listed

pod version "ghcr.io/kraftwerk/kraft-controller:$APP_VERSION" Never '{}' '["--version"]'
check "kraft-controller --version exits 0" poll "pod version Succeeded" 120 phase version Succeeded
log_line="$(crictl_logs "$(container_of version)")"
check "its output is \"$log_line\"" [ "${log_line#kraft-controller }" != "$log_line" ]

# The restricted settings the KraftQuorum's pods carry, on the busybox image
# (the controller image has no shell to try a write with).
pod readonly localhost/kraftwerk/busybox:static Never \
  '{runAsUser: 65532, runAsNonRoot: true, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}, seccompProfile: {type: RuntimeDefault}}' \
  '["sh", "-c", "id; touch /probe"]'
check "a write to the read-only root filesystem fails the pod" poll "pod readonly Failed" 120 phase readonly Failed
out="$(crictl_logs "$(container_of readonly)")"
rlog "pod readonly said: $out"
check "as uid 65532, with \"Read-only file system\"" bash -c "grep -q 'uid=65532' <<<'$out' && grep -q 'Read-only file system' <<<'$out'"

pod rootimage localhost/kraftwerk/busybox:static Never '{runAsNonRoot: true}' '["true"]'
check "runAsNonRoot refuses an image whose user is root" \
  poll "pod rootimage CreateContainerConfigError" 120 waiting_reason rootimage CreateContainerConfigError

# A pod that names no node: kube-scheduler places it; it reaches the API
# server through the kubernetes Service's ClusterIP (plain HTTP to the TLS
# port, so the answer is the server's "400 Bad Request").
unscheduled() {
  kubectl_ -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  restartPolicy: Never
  automountServiceAccountToken: false
  containers:
    - {name: main, image: localhost/kraftwerk/busybox:static, imagePullPolicy: Never, args: $2}
EOF
}
# (busybox's nc: its static wget crashes in an image without glibc's NSS
# libraries, "Segmentation fault".)
unscheduled clusterip '["sh", "-c", "printf \"GET / HTTP/1.0\\r\\n\\r\\n\" | nc 10.96.0.1 443 | tee /dev/stderr | grep -q \"400 Bad Request\""]'
check "kube-scheduler binds a pod without nodeName (pod clusterip Succeeded)" \
  poll "pod clusterip Succeeded" 120 phase clusterip Succeeded
check "on $node" [ "$(kubectl_ -n "$NS" get pod clusterip -o jsonpath='{.spec.nodeName}')" == "$node" ]
rlog "pod clusterip said: $(crictl_logs "$(container_of clusterip)")"

# A StatefulSet with a headless Service and a volume claim (the default
# StorageClass local-path), its pod restricted as the KraftQuorum's are.
kubectl_ -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {clusterIP: None, selector: {app: web}, ports: [{port: 80}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  serviceName: web
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      automountServiceAccountToken: false
      securityContext: {runAsUser: 65532, runAsNonRoot: true, fsGroup: 65532}
      containers:
        - name: main
          image: localhost/kraftwerk/busybox:static
          imagePullPolicy: Never
          args: ["sh", "-c", "echo written > /data/probe && cat /data/probe && sleep 3600"]
          volumeMounts: [{name: data, mountPath: /data}]
  volumeClaimTemplates:
    - metadata: {name: data}
      spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 16Mi}}}
EOF
check "StatefulSet pod web-0 Running" poll "pod web-0 Running" 180 phase web-0 Running
pvc_bound() { [[ "$(kubectl_ -n "$NS" get pvc data-web-0 -o jsonpath='{.status.phase}')" == Bound ]]; }
check "its PVC data-web-0 Bound" pvc_bound
pv="$(kubectl_ -n "$NS" get pvc data-web-0 -o jsonpath='{.spec.volumeName}')"
provisioned_by="$(kubectl_ get pv "$pv" -o jsonpath='{.metadata.annotations.pv\.kubernetes\.io/provisioned-by}' 2>/dev/null || true)"
check "by local-path-provisioner (PV $pv, provisioned-by $provisioned_by)" [ "$provisioned_by" == rancher.io/local-path ]
wrote() { crictl_logs "$(container_of web-0)" | grep -q written; }
check "web-0 wrote to its volume as uid 65532" poll "web-0 wrote its volume" 60 wrote
web_ip="$(kubectl_ -n "$NS" get pod web-0 -o jsonpath='{.status.podIP}')"
fqdn="web-0.web.$NS.svc.cluster.local"
unscheduled dns "[\"sh\", \"-c\", \"busybox nslookup kubernetes.default.svc.cluster.local && busybox nslookup $fqdn | tee /dev/stderr | grep -q 'Address: $web_ip'\"]"
check "CoreDNS resolves kubernetes.default and $fqdn to $web_ip (pod dns Succeeded)" \
  poll "pod dns Succeeded" 120 phase dns Succeeded
rlog "pod dns said: $(crictl_logs "$(container_of dns)")"
# CoreDNS caches no cluster.local answer (kubeadm's Corefile, addons.sh):
# asked twice 1.5 s apart, it answers web-0 with the kubernetes plugin's
# full TTL (30) both times; a cached answer's TTL counts down. (With the
# earlier `cache 5` a restarted pod's name gave its previous IP for up to 5 s.)
# dns_answer NAME: CoreDNS's A records for NAME as "IP TTL" lines (dig, one
# query to 10.244.0.1, the bridge CoreDNS listens on (addons.sh), no
# recursion asked, 2 s timeout); fails when there is none.
dns_answer() {
  dig +norecurse +noall +answer +time=2 +tries=1 @10.244.0.1 "$1" A |
    awk '$4 == "A" { print $5, $2; n++ } END { exit n == 0 }'
}
uncached() {
  local first second
  first="$(dns_answer "$fqdn")" || return 1
  sleep 1.5
  second="$(dns_answer "$fqdn")" || return 1
  rlog "CoreDNS answered $fqdn with \"$first\", 1.5 s later \"$second\""
  [[ "$first" == "$web_ip 30" && "$second" == "$web_ip 30" ]]
}
check "CoreDNS answers $fqdn uncached (TTL 30 both times)" uncached

check "kube-scheduler, kube-proxy, CoreDNS and local-path-provisioner still run" "$real_here/addons.sh" status

# Garbage collection and volume deletion: only this test's StatefulSet, claim
# and volume (others, the demo's, may exist).
volume_dir="$(kubectl_ get pv "$pv" -o jsonpath='{.spec.hostPath.path}{.spec.local.path}')"
kubectl_ -n "$NS" delete statefulset web --wait=true --timeout=60s >/dev/null
no_web_pod() { [[ -z "$(kubectl_ -n "$NS" get pods -l app=web -o name)" ]]; }
check "deleting the StatefulSet garbage-collects its pod" poll "the StatefulSet's pod is gone" 90 no_web_pod
kubectl_ -n "$NS" delete pvc data-web-0 --wait=true --timeout=60s >/dev/null
pv_gone() { [[ -z "$(kubectl_ get pv "$pv" --ignore-not-found -o name)" ]]; }
check "deleting the PVC deletes its PV $pv" poll "PV $pv deleted" 120 pv_gone
check "and its directory ($volume_dir)" bash -c "[[ -n '$volume_dir' && ! -e '$volume_dir' ]]"

((failed == 0)) || exit 1
