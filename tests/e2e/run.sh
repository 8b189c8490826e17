#!/usr/bin/env bash
# The cluster tests of issue 9 (`make test-e2e`), against the local Kubernetes
# cluster: the operator installed by its Helm chart, KraftQuorums applied with
# kubectl, the quorum checked from the host with `kraft-controller quorum
# describe`. Each test runs in its own namespace and its own process (so
# `set -e` holds inside it); a failing test dumps the namespace's objects,
# events, the operator's log and every container log, and the next test runs.
# A test checks only what it created (its namespace, the objects and volumes
# of its quorum), so the suite passes beside other workloads, such as the
# quorum `make demo` leaves: a cluster already up is reused and left up (the
# suite's namespaces deleted at the end); one it started, it stops.
#
#   tests/e2e/run.sh              cluster up, every test, the Rust cluster
#                                 tests (tests/tests/cluster/), cluster down
#   tests/e2e/run.sh NAME...      only these bash tests (cluster left up: KEEP_CLUSTER=1)
#   E2E_RUST=0 tests/e2e/run.sh   the bash tests only
#
# Ends with "N passed, N failed" and the measured figures (seconds).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "$here/lib.sh"

image=ghcr.io/kraftwerk/kraft-controller:0.1.0
figures="${E2E_FIGURES:-$cache/e2e-figures.txt}"

# apply_quorum NS NAME REPLICAS: create NS and a KraftQuorum NAME in it.
apply_quorum() {
  restricted_namespace "$1"
  kubectl -n "$1" apply -f - >/dev/null <<EOF
apiVersion: kraft.krabka.io/v1alpha1
kind: KraftQuorum
metadata:
  name: $2
spec:
  replicas: $3
  image: $image
  storage:
    size: 1Gi
EOF
}

# ready_three NS: a KraftQuorum q of 3 voters in NS, Ready; records the time
# from apply to Ready.
ready_three() {
  local start=$SECONDS
  apply_quorum "$1" q 3
  poll "3 voters Ready" 240 is_ready "$1" q 3
  figure apply_to_ready_3 $((SECONDS - start))
}

# figure NAME SECONDS: record one measurement.
figure() { echo "$1 $2" >>"$figures"; }

# described NS NAME: DescribeQuorum as JSON: {leaderId, leaderEpoch, voters: [{id, directoryId}]}.
described() {
  describe_quorum "$1" "$2" | python3 -c '
import json, sys
out = {}
for line in sys.stdin:
    key, _, value = line.partition(":")
    value = value.strip()
    if key == "LeaderId": out["leaderId"] = int(value)
    if key == "LeaderEpoch": out["leaderEpoch"] = int(value)
    if key == "CurrentVoters": out["voters"] = [{"id": v["id"], "directoryId": v["directoryId"]} for v in json.loads(value)]
print(json.dumps(out))'
}

# voters_match NS NAME N: DescribeQuorum and status agree on N voters (ids,
# directory ids), the leader and the epoch.
voters_match() {
  local d s
  d="$(described "$1" "$2")" || return 1
  s="$(kubectl -n "$1" get kq "$2" -o json)" || return 1
  python3 - "$d" "$s" "$3" <<'PY'
import json, sys
d, s, n = json.loads(sys.argv[1]), json.loads(sys.argv[2])["status"], int(sys.argv[3])
described = sorted((v["id"], v["directoryId"]) for v in d["voters"])
status = sorted((v["nodeId"], v["directoryId"]) for v in s["voters"])
ok = described == status and len(described) == n \
    and [i for i, _ in described] == list(range(n)) \
    and d["leaderId"] == s.get("leaderId") and d["leaderEpoch"] == s.get("leaderEpoch")
if not ok:
    print(f"describe {d} vs status voters {status} leader {s.get('leaderId')} epoch {s.get('leaderEpoch')}", file=sys.stderr)
sys.exit(0 if ok else 1)
PY
}

# voter_events NS NAME REASON: the node ids of the REASON events of the
# KraftQuorum, in the order they were emitted.
voter_events() {
  kubectl -n "$1" get events.v1.events.k8s.io -o json | python3 -c '
import json, re, sys
name, reason = sys.argv[1], sys.argv[2]
items = [e for e in json.load(sys.stdin)["items"]
         if e["regarding"].get("kind") == "KraftQuorum" and e["regarding"].get("name") == name and e["reason"] == reason]
items.sort(key=lambda e: e.get("eventTime") or "")
print(" ".join(re.search(r"node (\d+)", e.get("note", "")).group(1) for e in items))' "$2" "$3"
}

# --- the tests ------------------------------------------------------------------

# (1) 3 voters become Ready; DescribeQuorum shows them with the directory ids
# of the status; the status' leader and epoch match.
t_three_voters_become_ready() {
  local ns=e2e-ready
  ready_three "$ns"
  poll "DescribeQuorum agrees with the status" 60 voters_match "$ns" q 3
}

# (2) scale 3 → 5: voters 3 then 4 added one at a time; 5 → 3: voters 4 then
# 3 removed, highest first; 3 → 5 again (issue 27): pods q-3 and q-4 come
# back under the same names, on their kept volumes, with new pod IPs, and are
# added again no slower than the first time (plus a margin): the leader
# reaches a re-created pod at once, and a change the leader answered
# "retry" is planned again within seconds (it once took 124 s, not 8 s).
t_scaling_adds_and_removes_voters_one_at_a_time() {
  local ns=e2e-scale start first again margin=30
  ready_three "$ns"
  start=$SECONDS
  kubectl -n "$ns" scale kq/q --replicas=5 >/dev/null
  poll "5 voters Ready" 300 is_ready "$ns" q 5
  first=$((SECONDS - start))
  figure add_voter_each $((first / 2))
  figure scale_3_to_5 "$first"
  poll "DescribeQuorum shows 5 voters" 60 voters_match "$ns" q 5
  [[ "$(voter_events "$ns" q VoterAdded)" == "3 4" ]] || {
    echo "VoterAdded events: '$(voter_events "$ns" q VoterAdded)', want '3 4'" >&2
    return 1
  }
  start=$SECONDS
  kubectl -n "$ns" scale kq/q --replicas=3 >/dev/null
  poll "3 voters Ready after scaling down" 300 is_ready "$ns" q 3
  figure remove_voter_each $(((SECONDS - start) / 2))
  figure scale_5_to_3 $((SECONDS - start))
  poll "DescribeQuorum shows 3 voters" 60 voters_match "$ns" q 3
  [[ "$(voter_events "$ns" q VoterRemoved)" == "4 3" ]] || {
    echo "VoterRemoved events: '$(voter_events "$ns" q VoterRemoved)', want '4 3'" >&2
    return 1
  }
  poll "pods quorum-3 and -4 gone" 120 bash -c "! kubectl -n $ns get pod q-3 q-4 2>/dev/null | grep -q q-"
  start=$SECONDS
  kubectl -n "$ns" scale kq/q --replicas=5 >/dev/null
  poll "5 voters Ready again" 300 is_ready "$ns" q 5
  again=$((SECONDS - start))
  figure scale_3_to_5_again "$again"
  poll "DescribeQuorum shows 5 voters again" 60 voters_match "$ns" q 5
  ((again <= first + margin)) || {
    echo "3 → 5 again took ${again} s, the first 3 → 5 ${first} s (margin ${margin} s)" >&2
    return 1
  }
}

# expect_rejected NS FILE-CONTENT MESSAGE: kubectl apply fails with MESSAGE.
expect_rejected() {
  local out
  if out="$(kubectl -n "$1" apply -f - 2>&1 <<<"$2")"; then
    echo "accepted, want rejected with '$3': $out" >&2
    return 1
  fi
  grep -qF "$3" <<<"$out" || {
    echo "rejected without '$3': $out" >&2
    return 1
  }
}

# (8) the API server rejects replicas 0 and 10 and a changed clusterId with the
# CRD's CEL messages.
t_invalid_specs_are_rejected_by_the_api_server() {
  local ns=e2e-invalid r id other
  kubectl create namespace "$ns" >/dev/null
  for r in 0 10; do
    expect_rejected "$ns" "apiVersion: kraft.krabka.io/v1alpha1
kind: KraftQuorum
metadata: {name: bad}
spec: {replicas: $r, image: $image, storage: {size: 1Gi}}" "replicas must be between 1 and 9"
  done
  id=MkU3OEVBNTcwNTJENDM2Qg
  other=AAAAAAAAAAAAAAAAAAAAAA
  kubectl -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: kraft.krabka.io/v1alpha1
kind: KraftQuorum
metadata: {name: fixed}
spec: {replicas: 1, image: $image, clusterId: $id, storage: {size: 1Gi}}
EOF
  expect_rejected "$ns" "apiVersion: kraft.krabka.io/v1alpha1
kind: KraftQuorum
metadata: {name: fixed}
spec: {replicas: 1, image: $image, clusterId: $other, storage: {size: 1Gi}}" "clusterId is immutable once set"
}

# pod_uid NS POD
pod_uid() { kubectl -n "$1" get pod "$2" -o jsonpath='{.metadata.uid}'; }

# voter_dir NS NAME NODE: the directory id of voter NODE in the status.
voter_dir() { kq "$1" "$2" "{.status.voters[?(@.nodeId==$3)].directoryId}"; }

# (4) the leader's pod deleted: it comes back with the same directory id and
# rejoins; the membership does not change.
t_a_deleted_leader_pod_rejoins_with_the_same_directory_id() {
  local ns=e2e-leader leader dirs uid
  ready_three "$ns"
  poll "DescribeQuorum agrees with the status" 60 voters_match "$ns" q 3
  leader="$(kq "$ns" q '{.status.leaderId}')"
  dirs="$(kq "$ns" q '{.status.voters[*].directoryId}')"
  uid="$(pod_uid "$ns" "q-$leader")"
  kubectl -n "$ns" delete pod "q-$leader" --wait=false >/dev/null
  poll "pod q-$leader replaced" 120 bash -c "[[ \"\$(kubectl -n $ns get pod q-$leader -o jsonpath='{.metadata.uid}')\" != $uid ]]"
  poll "3 voters Ready again" 240 is_ready "$ns" q 3
  poll "DescribeQuorum agrees with the status" 60 voters_match "$ns" q 3
  [[ "$(kq "$ns" q '{.status.voters[*].directoryId}')" == "$dirs" ]] || {
    echo "directory ids changed: '$dirs' -> '$(kq "$ns" q '{.status.voters[*].directoryId}')'" >&2
    return 1
  }
  [[ -z "$(voter_events "$ns" q VoterAdded)$(voter_events "$ns" q VoterRemoved)" ]] || {
    echo "unexpected membership change" >&2
    return 1
  }
}

# (5) a voter's PVC and pod deleted: it comes back with a new directory id;
# the operator replaces the old voter (same node id) with the new one; the
# quorum keeps committing (the high watermark grows).
t_a_lost_volume_is_replaced_with_a_new_directory_id() {
  local ns=e2e-volume old hw
  ready_three "$ns"
  old="$(voter_dir "$ns" q 2)"
  kubectl -n "$ns" delete pvc data-q-2 --wait=false >/dev/null
  kubectl -n "$ns" delete pod q-2 --wait=false >/dev/null
  poll "voter 2 with a new directory id" 300 bash -c "d=\$(kubectl -n $ns get kq q -o jsonpath='{.status.voters[?(@.nodeId==2)].directoryId}'); [[ -n \$d && \$d != $old ]]"
  poll "3 voters Ready again" 300 is_ready "$ns" q 3
  poll "DescribeQuorum agrees with the status" 60 voters_match "$ns" q 3
  hw="$(kq "$ns" q '{.status.highWatermark}')"
  poll "the high watermark grows past $hw" 60 bash -c "(( \$(kubectl -n $ns get kq q -o jsonpath='{.status.highWatermark}') > $hw ))"
}

# (10) deleting the KraftQuorum garbage-collects its StatefulSet, pods,
# Service and ConfigMap.
t_deleting_the_quorum_collects_its_children() {
  local ns=e2e-delete
  ready_three "$ns"
  kubectl -n "$ns" delete kq q --wait=true --timeout=120s >/dev/null
  poll "statefulset, pods, service collected" 180 bash -c \
    "[[ -z \"\$(kubectl -n $ns get statefulsets,pods,services -o name 2>/dev/null)\" ]]"
}

# (9) the operator killed in the middle of a scale-up: the new operator pod
# finishes the change, one voter at a time, each added once.
t_an_operator_killed_mid_scale_up_finishes_the_change() {
  local ns=e2e-restart
  ready_three "$ns"
  kubectl -n "$ns" scale kq/q --replicas=5 >/dev/null
  poll "the scale-up started" 60 bash -c "kubectl -n $ns get statefulset q -o jsonpath='{.spec.replicas}' | grep -qx 5"
  kubectl -n "$operator_ns" delete pod -l app.kubernetes.io/name=kraft-operator --grace-period=0 --force --wait=false >/dev/null 2>&1
  poll "5 voters Ready" 300 is_ready "$ns" q 5
  poll "DescribeQuorum shows 5 voters" 60 voters_match "$ns" q 5
  # An event may be lost with the killed pod; none may repeat or go backwards.
  local added
  added="$(voter_events "$ns" q VoterAdded)"
  [[ "$added" == "3 4" || "$added" == 3 || "$added" == 4 ]] || {
    echo "VoterAdded events: '$added', want '3 4' (or one of them)" >&2
    return 1
  }
  kubectl -n "$operator_ns" rollout status deployment/"$operator_release" --timeout 2m >/dev/null
}

# event_count NS NAME REASON: how many REASON events the KraftQuorum has.
event_count() {
  kubectl -n "$1" get events.v1.events.k8s.io -o json | python3 -c '
import json, sys
name, reason = sys.argv[1], sys.argv[2]
print(sum(1 for e in json.load(sys.stdin)["items"]
          if e["regarding"].get("name") == name and e["reason"] == reason))' "$2" "$3"
}

# degraded_because NS NAME REASON: condition Degraded is True with REASON.
degraded_because() {
  [[ "$(condition "$1" "$2" Degraded)" == True ]] || return 1
  [[ "$(kq "$1" "$2" '{.status.conditions[?(@.type=="Degraded")].reason}')" == "$3" ]]
}

# rolled NS NAME REVISION N: the StatefulSet's update revision is no longer
# REVISION, all N pods run it, and the quorum is Ready with N voters.
rolled() {
  local want have
  want="$(kubectl -n "$1" get statefulset "$2" -o jsonpath='{.status.updateRevision}')"
  [[ -n "$want" && "$want" != "$3" ]] || return 1
  have="$(kubectl -n "$1" get pods -l "app.kubernetes.io/instance=$2" \
    -o custom-columns=R:.metadata.labels.controller-revision-hash --no-headers | sort | uniq -c | xargs)"
  [[ "$have" == "$4 $want" ]] || return 1
  is_ready "$1" "$2" "$4"
}

# (6, one voter) a config change on a 1-voter quorum restarts its only voter:
# an outage nothing avoids, announced by one Warning Event SingleVoterRestart;
# the quorum is Ready again on the new revision.
t_a_single_voter_is_restarted_with_a_warning() {
  local ns=e2e-solo rev start
  start=$SECONDS
  apply_quorum "$ns" q 1
  poll "1 voter Ready" 240 is_ready "$ns" q 1
  figure apply_to_ready_1 $((SECONDS - start))
  rev="$(kubectl -n "$ns" get statefulset q -o jsonpath='{.status.updateRevision}')"
  start=$SECONDS
  kubectl -n "$ns" patch kq q --type merge \
    -p '{"spec":{"config":{"controller.quorum.append.linger.ms":"20"}}}' >/dev/null
  poll "the change rolled out to the only voter" 240 rolled "$ns" q "$rev" 1
  figure single_voter_restart $((SECONDS - start))
  [[ "$(event_count "$ns" q SingleVoterRestart)" == 1 ]] || {
    echo "SingleVoterRestart events: $(event_count "$ns" q SingleVoterRestart), want 1" >&2
    return 1
  }
}

# volume_hashes DIR: sha256 of every file under DIR, by path.
volume_hashes() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 -r sha256sum); }

# (7) a KraftQuorum whose volume holds another cluster's data: its format
# init container refuses the volume (again and again), the quorum reports
# Degraded/ClusterIdMismatch naming the volume's cluster id, and every file
# of the volume is byte for byte what it was.
t_a_volume_of_another_cluster_is_reported_and_left_untouched() {
  local ns=e2e-foreign other=T3RoZXJDbHVzdGVySWQxMg pv path before after
  kubectl create namespace "$ns" >/dev/null
  kubectl -n "$ns" apply -f - >/dev/null <<PVC
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data-q-0}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
PVC
  poll "PVC data-q-0 bound" 60 bash -c \
    "[[ \$(kubectl -n $ns get pvc data-q-0 -o jsonpath='{.status.phase}') == Bound ]]"
  pv="$(kubectl -n "$ns" get pvc data-q-0 -o jsonpath='{.spec.volumeName}')"
  path="$(kubectl get pv "$pv" -o jsonpath='{.spec.hostPath.path}')"
  [[ -n "$path" && -d "$path" ]] || {
    echo "PV $pv has no host directory '$path'" >&2
    return 1
  }
  # Another cluster's controller 0, formatted where q-0's volume will be.
  "$kraft_controller" format --metadata-log-dir "$path/data" --node-id 0 \
    --cluster-id="$other" \
    --initial-controllers "0@q-0.q.elsewhere.svc.cluster.local:9093:T3RoZXJEaXJlY3RvcnkwMA" >/dev/null
  before="$(volume_hashes "$path")"
  [[ "$before" == *meta.properties* ]] || {
    echo "nothing formatted in $path: $before" >&2
    return 1
  }
  apply_quorum "$ns" q 1
  poll "Degraded/ClusterIdMismatch" 180 degraded_because "$ns" q ClusterIdMismatch
  # The format init container has met the volume more than once by now.
  poll "the format init container retried" 120 bash -c \
    "(( \$(kubectl -n $ns get pod q-0 -o jsonpath='{.status.initContainerStatuses[0].restartCount}') >= 2 ))"
  kq "$ns" q '{.status.conditions[?(@.type=="Degraded")].message}' | grep -qF "$other" || {
    echo "the ClusterIdMismatch message does not name the volume's cluster id $other" >&2
    return 1
  }
  [[ "$(kq "$ns" q '{.status.clusterId}')" != "$other" ]]
  after="$(volume_hashes "$path")"
  [[ "$before" == "$after" ]] || {
    printf 'the volume changed:\nbefore:\n%s\nafter:\n%s\n' "$before" "$after" >&2
    return 1
  }
  [[ "$(condition "$ns" q Ready)" == False ]]
}

# The cases ported to the Rust crate (tests/tests/cluster/) are not here:
# they run after these, in `cargo test -p kraft-e2e --features cluster`.
# The security cases of issue 20 (security.sh) are in tests/cluster/security.rs.
all_tests=()

# --- the driver -----------------------------------------------------------------

if [[ "${1:-}" == --one ]]; then
  "$2"
  exit 0
fi

namespace_of() { grep -h -A3 "^$1()" "${BASH_SOURCE[0]}" | grep -o 'ns=e2e-[a-z]*' | head -1 | cut -d= -f2; }

tests=("$@")
((${#tests[@]} > 0)) || tests=("${all_tests[@]}")
passed=0
failed=0
failures=()

# Whether this run started the cluster (and so stops it).
owned=1
if "$repo/dev/cluster.sh" running 2>/dev/null; then owned=; fi

finish() {
  local rc=$?
  if [[ -n "$owned" && -z "${KEEP_CLUSTER:-}" ]]; then
    "$repo/dev/cluster.sh" down >/dev/null 2>&1 || echo "warning: dev/cluster.sh down failed" >&2
  elif [[ -z "$owned" ]]; then
    # A reused cluster is left as found: without the suite's namespaces.
    local spaces=() t
    for t in "${tests[@]}"; do spaces+=("$(namespace_of "$t")"); done
    ((${#spaces[@]} == 0)) || kubectl delete namespace "${spaces[@]}" --ignore-not-found --wait=true --timeout=180s >/dev/null 2>&1 ||
      echo "warning: the namespaces ${spaces[*]} are not all gone after 180 s" >&2
  fi
  echo
  if [[ -f "$figures" ]]; then
    echo "figures (seconds; median of the samples):"
    python3 - "$figures" <<'PY'
import statistics, sys
samples = {}
for line in open(sys.argv[1]):
    name, value = line.split()
    samples.setdefault(name, []).append(int(value))
for name, values in sorted(samples.items()):
    print(f"  {name}: median {statistics.median(values)} of {values}")
PY
  fi
  ((${#failures[@]} == 0)) || echo "failed: ${failures[*]}"
  echo "$passed passed, $failed failed"
  ((failed == 0 && rc == 0)) || exit 1
}
trap finish EXIT

rm -f "$figures"
if [[ -n "$owned" ]]; then
  log "cluster up"
else
  log "cluster up (already up: reused, and left up at the end)"
fi
"$repo/dev/cluster.sh" up >/dev/null
log "installing the operator with its Helm chart"
install_operator

for t in "${tests[@]}"; do
  log "RUN  $t"
  start=$SECONDS
  # Each test starts from no namespace of its own (one of an earlier run, on a
  # cluster that stayed up, may still exist or be terminating).
  if kubectl delete namespace "$(namespace_of "$t")" --ignore-not-found --wait=true --timeout=180s >/dev/null &&
    "${BASH_SOURCE[0]}" --one "$t"; then
    log "PASS $t ($((SECONDS - start)) s)"
    passed=$((passed + 1))
    kubectl delete namespace "$(namespace_of "$t")" --wait=false >/dev/null 2>&1 || true
  else
    log "FAIL $t ($((SECONDS - start)) s)"
    failed=$((failed + 1))
    failures+=("$t")
    dump "$(namespace_of "$t")"
  fi
done

# The cases ported to Rust, while the cluster this run holds is up (so a
# cluster it started is stopped only after them): one more pass or fail.
if ((${#@} == 0)) && [[ "${E2E_RUST:-1}" != 0 ]]; then
  log "RUN  cargo test -p kraft-e2e --features cluster"
  start=$SECONDS
  if "${CARGO:-cargo}" test -p kraft-e2e --features cluster --test cluster -- --test-threads 1 --nocapture; then
    log "PASS rust cluster tests ($((SECONDS - start)) s)"
    passed=$((passed + 1))
  else
    log "FAIL rust cluster tests ($((SECONDS - start)) s)"
    failed=$((failed + 1))
    failures+=("rust-cluster-tests")
  fi
fi
