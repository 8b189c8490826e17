#!/usr/bin/env bash
# The real node without an API server (issue 24): containerd, runc, the CNI
# bridge and the kubelet running static pods (dev/real-node/node.sh
# up-standalone), checked with crictl. It touches no cluster, so it needs no
# lock; it must not run beside a real node that is up (same socket, bridge
# kwr0, ports 10248/10250). Checks:
#
#   1. a static pod of the FROM-scratch busybox image is Ready, with an IP of
#      the bridge's 10.244.1.0/24, its container Running
#   2. ghcr.io/kraftwerk/kraft-controller and kraft-operator run (`--version`,
#      exit 0, the version printed)
#   3. securityContext enforced: with readOnlyRootFilesystem a write to / fails
#      ("Read-only file system") as uid 65532; runAsNonRoot refuses an image
#      whose user is root
#
# then stops everything (node.sh down). Needs `make images` first.
set -euo pipefail

# shellcheck source=dev/real-node/common.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"
# shellcheck source=dev/poll.sh
source "$dev_dir/poll.sh"

# Refuse before the trap: its `node.sh down` would stop a cluster's node
# (its pods, kubelet, containerd and local-path volumes).
if "$dev_dir/cluster.sh" control-plane || alive containerd || alive kubelet; then
  rdie "the local cluster or its node runs: stop it first (make cluster-down)"
fi

failed=0
cleanup() {
  local rc=$?
  if ((rc != 0 || failed)); then
    rlog "FAILED; the pods, containers and the kubelet's last lines:"
    crictl_ pods >&2 || true
    crictl_ ps -a >&2 || true
    tail -n 30 "$logs/kubelet.log" >&2 2>/dev/null || true
  fi
  "$real_here/node.sh" down || rc=1
  ((rc == 0 && failed == 0)) || exit 1
}
trap cleanup EXIT
"$real_here/node.sh" up-standalone
manifests="$rn/manifests"
restricted='{runAsUser: 65532, runAsNonRoot: true, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}, seccompProfile: {type: RuntimeDefault}}'
# Written beside, then renamed in: the kubelet watches the directory and would
# read a half-written file.
cat >"$rn/smoke.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: smoke, namespace: default}
spec:
  restartPolicy: OnFailure
  containers:
    - {name: sleeper, image: "localhost/kraftwerk/busybox:static", imagePullPolicy: Never, args: [sleep, "3600"]}
    - name: readonly
      image: localhost/kraftwerk/busybox:static
      imagePullPolicy: Never
      args: [sh, -c, "id; touch /probe; echo touch=\$?; sleep 3600"]
      securityContext: $restricted
    - name: controller
      image: ghcr.io/kraftwerk/kraft-controller:$APP_VERSION
      imagePullPolicy: Never
      args: [--version]
      securityContext: $restricted
    - name: operator
      image: ghcr.io/kraftwerk/kraft-operator:$APP_VERSION
      imagePullPolicy: Never
      args: [--version]
      securityContext: $restricted
EOF
cat >"$rn/rootimage.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: rootimage, namespace: default}
spec:
  containers:
    - {name: main, image: "localhost/kraftwerk/busybox:static", imagePullPolicy: Never, args: ["true"],
       securityContext: {runAsNonRoot: true}}
EOF
mv "$rn/smoke.yaml" "$rn/rootimage.yaml" "$manifests/"

sandbox_ready() { crictl_ pods --name smoke --state ready -q | grep -q .; }
state_of() { crictl_ ps -a --name "^$1\$" -o json | grep -o '"state": *"[A-Z_]*"' | head -n1 | grep -q "$2"; }
exited_all() { state_of controller CONTAINER_EXITED && state_of operator CONTAINER_EXITED; }
logs_of() { crictl_logs "$(crictl_ ps -a --name "^$1\$" -q | head -n1)"; }

check "the static pod's sandbox is Ready" poll "pod smoke Ready" 180 sandbox_ready
check "container sleeper Running" poll "sleeper Running" 120 state_of sleeper CONTAINER_RUNNING
crictl_ pods
crictl_ ps -a
ip="$(crictl_ inspectp "$(crictl_ pods --name smoke -q | head -n1)" | sed -n 's/^ *"ip": "\(.*\)",\{0,1\}$/\1/p' | head -n1)"
check "pod IP $ip in 10.244.1.0/24" [ "${ip#10.244.1.}" != "$ip" ]

check "controller and operator containers ran to completion" poll "--version containers exited" 120 exited_all
for c in controller operator; do
  out="$(logs_of "$c")"
  check "kraft-$c --version printed \"$out\"" [ "$out" == "kraft-$c $APP_VERSION" ]
done

check "container readonly ran" poll "readonly Running" 120 state_of readonly CONTAINER_RUNNING
read_out() { logs_of readonly | grep -q 'touch='; }
poll "readonly's output" 60 read_out || true
out="$(logs_of readonly)"
rlog "container readonly said: $(tr '\n' ' ' <<<"$out")"
check "as uid 65532" grep -q 'uid=65532' <<<"$out"
check "a write to the read-only root filesystem fails" grep -q 'Read-only file system' <<<"$out"

refused() { grep -q 'image will run as root' "$logs/kubelet.log"; }
check "runAsNonRoot refuses an image whose user is root" poll "the kubelet refusing pod rootimage" 120 refused

((failed == 0)) || exit 1
rlog "real node standalone test passed"
