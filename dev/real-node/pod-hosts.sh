#!/usr/bin/env bash
# The host's view of pod names on the local cluster's node (issue 24): every
# 2 s, writes $KRAFTWERK_CACHE/cluster/hosts, the file Java tools run on this
# host read with -Djdk.net.hosts.file (tests/kafka/kafka-run-class,
# KAFKA_HOSTS_FILE): each running pod with spec.subdomain (as
# StatefulSet pods have) under <hostname>.<subdomain>.<ns>.svc.cluster.local and
# the shorter forms, and the API server as kubernetes.default.svc.cluster.local.
# Pods resolve these names through CoreDNS; the host does not use CoreDNS
# (its resolver stays the machine's). The file is replaced by rename, never
# half-written. Started and stopped by dev/real-node/addons.sh; it must not
# write anything else.
set -euo pipefail

# shellcheck source=dev/real-node/common.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"

HOST_IP=10.244.0.1
out="$cluster_dir/hosts"
kubectl_() { "$bin/kubectl" --kubeconfig "$cluster_dir/admin.kubeconfig" "$@"; }
template='{range .items[?(@.spec.subdomain)]}{.status.podIP} {.spec.hostname} {.spec.subdomain} {.metadata.namespace} {.status.phase}{"\n"}{end}'

while true; do
  if pods="$(kubectl_ get pods -A -o jsonpath="$template" 2>/dev/null)"; then
    {
      echo "# Written by dev/real-node/pod-hosts.sh: the pods of the local cluster."
      printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n'
      printf '%s\tkubernetes.default.svc.cluster.local kubernetes.default.svc kubernetes.default kubernetes\n' "$HOST_IP"
      while read -r ip host sub ns phase; do
        [[ -n "$ip" && -n "$host" && "$phase" == Running ]] || continue
        base="$host.$sub.$ns"
        printf '%s\t%s.svc.cluster.local %s.svc %s %s.%s\n' "$ip" "$base" "$base" "$base" "$host" "$sub"
      done <<<"$pods"
    } >"$out.tmp"
    mv "$out.tmp" "$out"
  fi
  sleep 2
done
