#!/usr/bin/env bash
# Checks the chart and the examples against a real API server: what only the
# server knows (admission, the CRD's structural schema and CEL rules, RBAC
# objects) beyond `make helm-check`'s offline schemas. Needs an API server
# only, no node and no operator: nothing here waits for a pod.
#
#   KUBECONFIG=… charts/hack/server-check.sh      (make helm-check-server)
#
# Default KUBECONFIG: the local cluster's ($KRAFTWERK_CACHE/cluster/admin.kubeconfig,
# `make cluster-up`). Works in a namespace of its own, deleted at the end; the
# CRD is applied for real (server-side apply) and left in place.
#
#  1. every object of the chart, rendered for that namespace, passes
#     `kubectl apply --dry-run=server` (CRD and RBAC included);
#  2. the CRD from crds/ is established;
#  3. each example passes `kubectl apply --dry-run=server`;
#  4. replicas 0 and 10 are rejected, naming replicas;
#  5. a KraftQuorum's clusterId, once set, cannot be changed (CEL transition
#     rule), and its listenerPort neither;
#  6. installed by Helm, the operator's ServiceAccount may do what the
#     reconciler does and no more (`kubectl auth can-i` against the server's
#     RBAC authorizer), in namespaced and in cluster-wide mode.
# Prints `N passed, N failed` at the end.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cache="${KRAFTWERK_CACHE:-$HOME/.cache/kraftwerk}"
export KUBECONFIG="${KUBECONFIG:-$cache/cluster/admin.kubeconfig}"
HELM="${HELM:-$cache/bin/helm}"
KUBECTL="${KUBECTL:-$cache/bin/kubectl}"
chart="$root/charts/kraft-operator"
ns="kw-chart-check-$$"

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "PASS $1"; }
fail() { failed=$((failed + 1)); echo "FAIL $1"; shift; printf '    %s\n' "$@"; }

"$KUBECTL" version >/dev/null 2>&1 || {
  echo "server-check: no API server answers for KUBECONFIG=$KUBECONFIG (make cluster-up?)" >&2
  exit 1
}
cleanup() { "$KUBECTL" delete namespace "$ns" --wait=false >/dev/null 2>&1 || true; }
trap cleanup EXIT
"$KUBECTL" create namespace "$ns" >/dev/null
# Pods need their ServiceAccount to exist at admission. A cluster's controller
# manager creates `default` in every namespace soon after; a bare API server
# never does, so create it (AlreadyExists when the controller was first).
"$KUBECTL" create serviceaccount default --namespace "$ns" >/dev/null 2>&1 || true

# 1. The chart's objects, namespaced mode (so the dry run touches no other
#    namespace) and cluster-wide mode.
for mode in "watchNamespace=$ns" "watchNamespace="; do
  if out="$("$HELM" template kw "$chart" --namespace "$ns" --set "$mode" |
    "$KUBECTL" apply --dry-run=server --namespace "$ns" -f - 2>&1)"; then
    pass "the chart's objects pass a server dry run ($mode)"
  else
    fail "the chart's objects pass a server dry run ($mode)" "$out"
  fi
done

# 2. The CRD, for real.
if out="$("$KUBECTL" apply --server-side --force-conflicts -f "$root/crds/kraftquorum.yaml" 2>&1)" &&
  out="$("$KUBECTL" wait --for=condition=Established crd/kraftquorums.kraft.krabka.io --timeout=60s 2>&1)"; then
  pass "the CRD is established"
else
  fail "the CRD is established" "$out"
fi

# 3. The examples.
for f in "$root"/examples/*.yaml; do
  if out="$("$KUBECTL" apply --dry-run=server --namespace "$ns" -f "$f" 2>&1)"; then
    pass "$(basename "$f") passes a server dry run"
  else
    fail "$(basename "$f") passes a server dry run" "$out"
  fi
done

quorum() { # quorum REPLICAS [EXTRA_SPEC_LINES]
  printf 'apiVersion: kraft.krabka.io/v1alpha1\nkind: KraftQuorum\nmetadata:\n  name: check\nspec:\n  replicas: %s\n  image: kraft-controller:check\n  storage:\n    size: 1Gi\n%s' "$1" "${2:-}"
}

# 4. Replica bounds.
for r in 0 10; do
  if out="$(quorum "$r" | "$KUBECTL" apply --dry-run=server --namespace "$ns" -f - 2>&1)"; then
    fail "replicas $r is rejected" "accepted: $out"
  elif grep -q "replicas must be between 1 and 9" <<<"$out"; then
    pass "replicas $r is rejected"
  else
    fail "replicas $r is rejected" "rejected for another reason: $out"
  fi
done

# 5. Immutable fields (a real object: transition rules need an old one). No
#    operator watches this namespace, so nothing adds a finalizer.
id1="MkU3OEVBNTcwNTJENDM2Qg"
id2="AAAAAAAAAAAAAAAAAAAAAA"
if out="$(quorum 3 "  clusterId: $id1"$'\n' | "$KUBECTL" apply --namespace "$ns" -f - 2>&1)"; then
  if out="$(quorum 3 "  clusterId: $id2"$'\n' | "$KUBECTL" apply --namespace "$ns" -f - 2>&1)"; then
    fail "clusterId cannot change once set" "accepted: $out"
  elif grep -q "clusterId is immutable" <<<"$out"; then
    pass "clusterId cannot change once set"
  else
    fail "clusterId cannot change once set" "rejected for another reason: $out"
  fi
  if out="$(quorum 3 "  clusterId: $id1"$'\n'"  listenerPort: 19093"$'\n' |
    "$KUBECTL" apply --namespace "$ns" -f - 2>&1)"; then
    fail "listenerPort cannot change" "accepted: $out"
  elif grep -q "listenerPort is immutable" <<<"$out"; then
    pass "listenerPort cannot change"
  else
    fail "listenerPort cannot change" "rejected for another reason: $out"
  fi
else
  fail "a KraftQuorum with a clusterId is created" "$out"
fi

# 6. RBAC as the API server's authorizer sees it: install the chart (no
#    pod needs to run) and ask what its ServiceAccount may do. The CRD is
#    already there (step 2), so these releases leave it alone.
can() { # can yes|no NAMESPACE SA_NAMESPACE VERB RESOURCE [--subresource=…]
  local want="$1" where="$2" sa="system:serviceaccount:$3:kw-kraft-operator"
  shift 3
  local got
  got="$("$KUBECTL" auth can-i "$@" --namespace "$where" --as "$sa" 2>/dev/null || true)"
  [[ "$got" == "$want" ]] || { echo "can-i $* in $where as $sa: $got, expected $want"; return 1; }
}
rbac_check() { # rbac_check LABEL CHECK…: each CHECK is "yes|no NS VERB RESOURCE [FLAGS]"
  local label="$1" errors="" line
  shift
  for line in "$@"; do
    # shellcheck disable=SC2086 # split the check into words on purpose
    errors+="$(can $line)" || true
  done
  if [[ -z "$errors" ]]; then pass "$label"; else fail "$label" "$errors"; fi
}
other="kw-chart-other-$$"
"$KUBECTL" create namespace "$other" >/dev/null
trap 'cleanup; "$KUBECTL" delete namespace "$other" --wait=false >/dev/null 2>&1 || true' EXIT

if out="$("$HELM" install kw "$chart" --namespace "$ns" --set watchNamespace="$ns" \
  --set crds.enabled=false 2>&1)"; then
  rbac_check "namespaced mode grants what the operator needs in its namespace, and nothing outside" \
    "yes $ns $ns watch kraftquorums.kraft.krabka.io" \
    "yes $ns $ns patch kraftquorums.kraft.krabka.io" \
    "yes $ns $ns patch kraftquorums.kraft.krabka.io --subresource=status" \
    "yes $ns $ns update kraftquorums.kraft.krabka.io --subresource=finalizers" \
    "yes $ns $ns create statefulsets.apps" \
    "yes $ns $ns patch statefulsets.apps" \
    "yes $ns $ns patch services" \
    "yes $ns $ns patch configmaps" \
    "yes $ns $ns patch poddisruptionbudgets.policy" \
    "yes $ns $ns delete pods" \
    "yes $ns $ns create events.events.k8s.io" \
    "yes $ns $ns create leases.coordination.k8s.io" \
    "yes $ns $ns update leases.coordination.k8s.io/kw-kraft-operator" \
    "no $ns $ns update leases.coordination.k8s.io/someone-else" \
    "no $ns $ns delete statefulsets.apps" \
    "no $ns $ns delete persistentvolumeclaims" \
    "yes $ns $ns get persistentvolumeclaims" \
    "yes $ns $ns create jobs.batch" \
    "no $ns $ns get secrets" \
    "no $ns $ns update kraftquorums.kraft.krabka.io" \
    "no $other $ns list kraftquorums.kraft.krabka.io" \
    "no $other $ns list pods"
  "$HELM" uninstall kw --namespace "$ns" >/dev/null 2>&1 || true
else
  fail "the chart installs in namespaced mode" "$out"
fi

if out="$("$HELM" install kw "$chart" --namespace "$ns" --set crds.enabled=false 2>&1)"; then
  rbac_check "cluster-wide mode reaches KraftQuorums in every namespace, the Lease only in its own" \
    "yes $other $ns list kraftquorums.kraft.krabka.io" \
    "yes $other $ns patch statefulsets.apps" \
    "yes $other $ns delete pods" \
    "no $other $ns create leases.coordination.k8s.io" \
    "no $other $ns get secrets" \
    "no $other $ns delete statefulsets.apps"
  "$HELM" uninstall kw --namespace "$ns" >/dev/null 2>&1 || true
else
  fail "the chart installs in cluster-wide mode" "$out"
fi

echo "$passed passed, $failed failed"
((failed == 0))
