#!/usr/bin/env bash
# Smoke test of the real node (issue 24): on the control plane of
# dev/cluster.sh (reused when up, else started and stopped again), starts
# containerd + kubelet (dev/real-node/node.sh up), then checks:
#
#   1. node kraft-kubelet is Ready and reports containerd://1.6.x as its runtime
#   2. a pod of the FROM-scratch busybox image, bound to the node, is Running
#      with an IP of the CNI bridge's range, and `crictl ps` lists its container
#   3. ghcr.io/kraftwerk/kraft-controller runs as a pod (`--version`, exit 0)
#      as uid 65532 from the image's USER
#   4. securityContext is enforced: with readOnlyRootFilesystem a write to /
#      fails ("Read-only file system"), and runAsNonRoot refuses an image whose
#      user is root (CreateContainerConfigError)
#
# then removes its namespace and stops the real node. Run it under the cluster
# lock: `flock /tmp/kraftwerk-cluster.lock dev/real-node/smoke-test.sh`
# (`make test-realnode` does). Prints the node's and pods' state on failure.
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
  "$real_here/node.sh" down || rc=1
  if ((started_cluster)); then "$dev_dir/cluster.sh" down || rc=1; fi
  exit "$rc"
}

check() {
  local what="$1"
  shift
  if "$@"; then
    rlog "ok: $what"
  else
    rlog "NOT OK: $what"
    failed=1
  fi
}

if ! "$dev_dir/cluster.sh" running; then
  started_cluster=1
fi
trap cleanup EXIT
"$dev_dir/cluster.sh" up >/dev/null
"$real_here/node.sh" up

node="$REAL_NODE_NAME"
runtime="$(kubectl_ get node "$node" -o jsonpath='{.status.nodeInfo.containerRuntimeVersion}')"
kubectl_ get node -o wide
crictl_ version
check "node $node runs containerd 1.6 ($runtime)" [ "${runtime#containerd://1.6.}" != "$runtime" ]

kubectl_ create namespace "$NS" >/dev/null
# pod NAME IMAGE RESTART SECURITY_CONTEXT ARGS_JSON: a pod bound to the real
# node (no scheduler picks it: the node agent's binds to its own node only).
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
listed() { crictl_ ps -q --label "io.kubernetes.pod.name=sleeper" --label "io.kubernetes.pod.namespace=$NS" | grep -q .; }
check "crictl ps lists the pod's container" listed

pod version "ghcr.io/kraftwerk/kraft-controller:0.1.0" Never '{}' '["--version"]'
check "kraft-controller --version exits 0" poll "pod version Succeeded" 120 phase version Succeeded
log_line="$(crictl_logs "$(crictl_ ps -a -q --label io.kubernetes.pod.name=version | head -n1)")"
check "its output is \"$log_line\"" [ "${log_line#kraft-controller }" != "$log_line" ]

# The restricted settings the KraftQuorum's pods carry, on the busybox image
# (the controller image has no shell to try a write with).
pod readonly localhost/kraftwerk/busybox:static Never \
  '{runAsUser: 65532, runAsNonRoot: true, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}, seccompProfile: {type: RuntimeDefault}}' \
  '["sh", "-c", "id; touch /probe"]'
check "a write to the read-only root filesystem fails the pod" poll "pod readonly Failed" 120 phase readonly Failed
out="$(crictl_logs "$(crictl_ ps -a -q --label io.kubernetes.pod.name=readonly | head -n1)")"
rlog "pod readonly said: $out"
check "as uid 65532, with \"Read-only file system\"" bash -c "grep -q 'uid=65532' <<<'$out' && grep -q 'Read-only file system' <<<'$out'"

pod rootimage localhost/kraftwerk/busybox:static Never '{runAsNonRoot: true}' '["true"]'
check "runAsNonRoot refuses an image whose user is root" \
  poll "pod rootimage CreateContainerConfigError" 120 waiting_reason rootimage CreateContainerConfigError

((failed == 0)) || exit 1
rlog "real node smoke test passed"
