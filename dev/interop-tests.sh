#!/usr/bin/env bash
# The interop tests of `make test-interop` (mk/interop.mk): the test binaries
# of controller/tests/interop_kafka*.rs, in two groups run at once.
#
# The two that run whole Kafka clusters (three brokers each) take 11 to 13
# min one after the other beside the rest (cold runs, 2026-12-05):
# interop_kafka_topics 7 to 9 (Kafka 4.1.2's and 4.4.0's brokers through
# topic traffic and failovers, on ours and on Kafka's controllers),
# interop_kafka_brokers about 3. They form one group; the other binaries
# (about 6 min, interop_kafka_mixed the longest) run beside it. One after the
# other, cargo's way, all took 17 min, much of it waiting (JVM starts,
# session timeouts, elections, producers paced at 2,000 records/s).
# Within a binary the two Kafka versions' clusters still take turns, as does
# any other run of these tests on the machine: a machine-wide lock
# (controller/tests/interop/mod.rs, `one_cluster_at_a_time`), since the
# machine has two cores.
#
#   dev/interop-tests.sh    builds every interop test binary once, then runs
#                           both groups; the cluster group's output is
#                           printed after the others', whole (not
#                           interleaved), then one line with both results
#                           and, when a test failed, every panic's first
#                           lines and failed step again at the very end
#                           (a CI log's tail then says what failed)
#
# Exits non-zero when any test failed. Ctrl-C (or a kill of this script)
# stops both groups and the JVMs they started. KAFKA_VERSIONS (mk/kafka.mk) is
# passed on to the tests; CARGO names cargo.
set -euo pipefail

cd "$(dirname "$0")/.."
# CARGO may be several words (`make CARGO="cargo +nightly"`).
read -ra cargo <<<"${CARGO:-cargo}"
clusters=(interop_kafka_topics interop_kafka_brokers)
# Every other controller/tests/interop_kafka*.rs, so that a new one runs too.
rest=()
for f in controller/tests/interop_kafka*.rs; do
  t="$(basename "$f" .rs)"
  [[ " ${clusters[*]} " == *" $t "* ]] || rest+=("$t")
done
cluster_flags=() rest_flags=()
for t in "${clusters[@]}"; do cluster_flags+=(--test "$t"); done
for t in "${rest[@]}"; do rest_flags+=(--test "$t"); done
cargo_test=("${cargo[@]}" test -p kraft-controller --features interop)
harness=(-- --nocapture --test-threads 2)

"${cargo_test[@]}" --no-run "${cluster_flags[@]}" "${rest_flags[@]}"

# Each group runs in a session of its own (setsid), so that stopping this
# script (Ctrl-C, kill) stops each group's whole session through the trap:
# cargo, the test binary and the JVMs it started. SIGKILL, as the tests stop
# their own processes: a Kafka broker's SIGTERM handler waits for a
# controlled shutdown that the killed controllers never answer.
log="$(mktemp)"
rest_log="$(mktemp)"
cluster_pid=
rest_pid=
finished=
stop_groups() {
  local pid
  # Also after both groups ended: a JVM of a test binary that died early
  # would still be in its session.
  for pid in $cluster_pid $rest_pid; do
    kill -KILL -- "-$pid" 2>/dev/null || true
  done
  if [[ -z "$finished" && -s "$log" ]]; then
    echo
    echo "==== interrupted; what ${clusters[*]} printed so far:"
    cat "$log"
  fi
  rm -f "$log" "$rest_log"
}
trap stop_groups EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

setsid "${cargo_test[@]}" --no-fail-fast "${cluster_flags[@]}" "${harness[@]}" >"$log" 2>&1 &
cluster_pid=$!
# The other group prints as it goes, and a copy goes to $rest_log for the
# summary of a failed run.
exec {rest_out}> >(tee "$rest_log")
tee_pid=$!
setsid "${cargo_test[@]}" --no-fail-fast "${rest_flags[@]}" "${harness[@]}" >&"$rest_out" 2>&1 &
rest_pid=$!
exec {rest_out}>&-

rest_rc=0
wait "$rest_pid" || rest_rc=$?
cluster_rc=0
wait "$cluster_pid" || cluster_rc=$?
finished=1
# tee ends when the last writer of its pipe does (the group's JVMs too);
# wait for it, at most 10 s.
for _ in {1..100}; do
  kill -0 "$tee_pid" 2>/dev/null || break
  sleep 0.1
done

echo
echo "==== ${clusters[*]} (run beside the tests above); their output:"
cat "$log"
echo
echo "==== interop: ${clusters[*]} exit $cluster_rc; the group of the other ${#rest[@]} test binaries exits $rest_rc"
if ((rest_rc != 0 || cluster_rc != 0)); then
  # The failed tests and the topics tests' failed steps, then each panic's
  # location and message, the cluster group's first. Some panics are caught
  # by a test's wait and retried; a failing test's own is among them.
  echo "==== interop failed; the failed tests and steps of both groups:"
  grep -h -E "^test .+ \.\.\. FAILED$|step [0-9]+ FAILED" "$log" "$rest_log" | cut -c1-400 || true
  echo "==== their panics (with those the tests' waits caught and retried):"
  grep -h -A2 "panicked at" "$log" "$rest_log" |
    grep -v -E "^(stack backtrace:|note: )" | cut -c1-400 | head -n 120 || true
  exit 1
fi
