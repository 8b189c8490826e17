#!/usr/bin/env bash
# The cluster tests (`make test-e2e`, issues 9 and 18): the Rust crate in
# tests/ (kraft-e2e, its cases in tests/tests/cluster/) against the local
# Kubernetes cluster, the operator installed by its Helm chart. Shell only
# brings the cluster up, installs the operator and stops what it started: a
# cluster already up (such as the one `make demo` leaves) is reused and left
# up, each case checking only what it created in its own namespace. The one
# exception is the demo's namespace (dev/demo.sh labels it kraftwerk.dev/demo):
# its quorum and brokers ask 1050m of the node's 2 CPUs, and two cases at once
# do not fit beside them (`0/1 nodes are available: 1 Insufficient cpu`), so
# it is deleted first, saying so (`make demo` starts it again).
#
#   tests/e2e/run.sh              every cluster test
#   tests/e2e/run.sh FILTER...    cargo test's name filters (`load::`,
#                                 `security::a_default_quorum_speaks_mtls`)
#   KEEP_CLUSTER=1                leave a cluster this run started up
#   E2E_KEEP_FAILED=1             keep a failed case's namespace (it is dumped
#                                 either way: objects, events, logs)
#   E2E_THREADS=N                 cases at once (default 2: most of a case is
#                                 waiting; each has its own namespace, and a
#                                 case that kills the operator runs alone)
#
# Ends with the figures (seconds; medians), the load cases' counts and
# "N passed, N failed".
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "$here/lib.sh"

# cargo test's output, for the summary at the end.
output="$cache/e2e-output.txt"

# Whether this run started the cluster (and so stops it).
owned=1
# A control plane that runs (even with its node down, which `up` restarts) is
# someone else's cluster: never stopped here.
if "$repo/dev/cluster.sh" control-plane 2>/dev/null; then owned=; fi

finish() {
  local rc=$?
  if [[ -n "$owned" && -z "${KEEP_CLUSTER:-}" ]]; then
    "$repo/dev/cluster.sh" down >/dev/null 2>&1 || echo "warning: dev/cluster.sh down failed" >&2
  fi
  echo
  if [[ -f "$output" ]]; then
    python3 - "$output" <<'PY'
import re, statistics, sys
text = open(sys.argv[1], errors="replace").read()
samples = {}
for name, value in re.findall(r"figure ([a-z0-9_]+) ([0-9.]+)", text):
    samples.setdefault(name, []).append(float(value))
if samples:
    print("figures (seconds; median of the samples):")
    for name, values in sorted(samples.items()):
        print(f"  {name}: median {statistics.median(values):g} of {values}")
loads = re.findall(r"^load .*$", text, re.M)
if loads:
    print("under an acks=all load:")
    for line in loads:
        print(f"  {line}")
passed = sum(int(n) for n in re.findall(r"test result: \w+\. (\d+) passed", text))
failed = sum(int(n) for n in re.findall(r"test result: \w+\. \d+ passed; (\d+) failed", text))
failures = re.findall(r"^test (\S+) \.\.\. .*FAILED$", text, re.M)
if failures:
    print("failed: " + " ".join(failures))
print(f"{passed} passed, {failed} failed")
PY
  fi
  exit "$rc"
}
trap finish EXIT

rm -f "$output"
if [[ -n "$owned" ]]; then
  log "cluster up"
else
  log "cluster up (already up: reused, and left up at the end)"
fi
"$repo/dev/cluster.sh" up >/dev/null
for demo_ns in $(kubectl get namespaces -l kraftwerk.dev/demo -o name); do
  log "deleting ${demo_ns#namespace/} (make demo's quorum and brokers) to free the node's CPU for the cluster tests"
  kubectl delete "$demo_ns" --wait=true --timeout=180s >/dev/null
done
log "installing the operator with its Helm chart"
install_operator

log "cargo test -p kraft-e2e --features cluster --test cluster $*"
"${CARGO:-cargo}" test -p kraft-e2e --features cluster --test cluster -- \
  --test-threads "${E2E_THREADS:-2}" --nocapture "$@" 2>&1 | tee "$output"
