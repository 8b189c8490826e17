#!/usr/bin/env bash
# Container logs of the local cluster's node, in the layout the cluster tests
# read (issue 24): every second, each container log the kubelet writes under
# its podLogsDir, $KRAFTWERK_CACHE/real-node/pod-logs (<ns>_<pod>_<uid>/<container>/<restart>.log, CRI format:
# "<time> <stream> <F|P> <text>") that changed is copied, restarts in order and without the CRI
# prefix, to $KRAFTWERK_CACHE/cluster/logs/<ns>/<pod>/<container>.log, the
# files the cluster tests (tests/src/logs.rs), `dev/cluster.sh logs` and the
# demo's dumps read. Each copy is replaced by rename, never half-written; a
# pod's copies stay after the pod goes, until the next fresh `dev/cluster.sh
# up`. Started and stopped by dev/real-node/addons.sh; it must not write
# anything else.
set -euo pipefail

# shellcheck source=dev/real-node/common.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"

POD_LOGS="$POD_LOGS_DIR"

# copy DIR OUT: the restart files of one container, oldest first, to OUT.
copy() {
  local dir="$1" out="$2"
  mkdir -p "$(dirname "$out")"
  # Restart files are named <n>.log: sort -V orders them.
  printf '%s\n' "$dir"/[0-9]*.log | sort -V | while read -r f; do cat "$f"; done |
    sed -E 's/^[^ ]+ (stdout|stderr) [FP] //' >"$out.tmp"
  mv "$out.tmp" "$out"
}

while true; do
  for dir in "$POD_LOGS"/*_*_*/*/; do
    [[ -d "$dir" ]] || continue
    dir="${dir%/}"
    container="${dir##*/}"
    pod_dir="${dir%/*}"
    pod_dir="${pod_dir##*/}"
    ns="${pod_dir%%_*}"
    rest="${pod_dir#*_}"
    pod="${rest%_*}"
    out="$logs/$ns/$pod/$container.log"
    if [[ ! -f "$out" ]] || [[ -n "$(find "$dir" -newer "$out" -name '*.log' -print -quit 2>/dev/null)" ]]; then
      copy "$dir" "$out" 2>/dev/null || true
    fi
  done
  sleep 1
done
