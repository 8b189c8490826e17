#!/usr/bin/env bash
# Formats three controller volumes in a temp dir as a 3-voter dynamic quorum
# (KIP-853 --initial-controllers), shows that formatting again is a no-op, and
# prints what was written with `kraft-controller dump-log`.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${KRAFT_CONTROLLER:-$root/target/debug/kraft-controller}"
if [[ ! -x "$bin" ]]; then
  (cd "$root" && cargo build -q -p kraft-controller)
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/kraftwerk-demo.XXXXXX")"
cluster_id="MkU3OEVBNTcwNTJENDM2Qg"
dir_ids=(Yn6jBgNWRcWUqv7Dz5TlZQ bkIhY8PmQGiDnQJRUm2Rjg mS3ioBlXSyuHHyHmDiw2OA)
voters=""
for i in 0 1 2; do
  voters+="${voters:+,}$i@quorum-$i.quorum:9093:${dir_ids[$i]}"
done

echo "# formatting three volumes under $work"
for i in 0 1 2; do
  cat >"$work/controller-$i.properties" <<PROPS
node.id=$i
process.roles=controller
metadata.log.dir=$work/volume-$i
controller.listener.names=CONTROLLER
listeners=CONTROLLER://0.0.0.0:9093
advertised.listeners=CONTROLLER://quorum-$i.quorum:9093
PROPS
  "$bin" format --config "$work/controller-$i.properties" \
    --cluster-id "$cluster_id" --initial-controllers "$voters"
done

echo
echo "# formatting volume-0 again with the same ids is a no-op"
"$bin" format --config "$work/controller-0.properties" \
  --cluster-id "$cluster_id" --initial-controllers "$voters"

echo
echo "# a different cluster id is refused and nothing is written"
if "$bin" format --config "$work/controller-0.properties" \
  --cluster-id AAAAAAAAAAAAAAAAAAAAAQ --initial-controllers "$voters"; then
  echo "unexpected success" >&2
  exit 1
fi

for i in 0 1 2; do
  echo
  echo "# kraft-controller dump-log $work/volume-$i"
  "$bin" dump-log "$work/volume-$i"
done
echo
echo "# files left in $work (delete it when done)"
