#!/usr/bin/env bash
# The interop tests of `make test-interop` (mk/interop.mk): the test binaries
# of controller/tests/interop_kafka*.rs, in two groups run at once.
# interop_kafka_topics alone takes about 7 min (Kafka 4.1.2's and 4.4.0's
# brokers through topic traffic and failovers), about as long as all the
# others together, and most of each is waiting (JVM starts, elections,
# timeouts); run one after the other, cargo's way, they took 17 min.
#
#   dev/interop-tests.sh    builds every interop test binary once, then runs
#                           interop_kafka_topics beside the others; its output
#                           is printed after theirs, whole (not interleaved)
#
# Exits non-zero when any test failed. KAFKA_VERSIONS (mk/kafka.mk) is passed on
# to the tests; CARGO names cargo.
set -euo pipefail

cargo="${CARGO:-cargo}"
long=(interop_kafka_topics)
rest=(interop_kafka interop_kafka_format interop_kafka_voters interop_kafka_mixed interop_kafka_metadata
  interop_kafka_tls interop_kafka_brokers interop_kafka_configs interop_kafka_acls interop_kafka_recover
  interop_kafka_features interop_kafka_static_migration interop_kafka_unregister)

# tests NAME...: cargo's --test flags
tests() {
  local t
  for t in "$@"; do printf -- '--test %s ' "$t"; done
}

run() {
  # shellcheck disable=SC2046  # the flags are words
  "$cargo" test -p kraft-controller --features interop --no-fail-fast $(tests "$@") -- --nocapture --test-threads 2
}

# shellcheck disable=SC2046
"$cargo" test -p kraft-controller --features interop --no-run $(tests "${long[@]}" "${rest[@]}")

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
run "${long[@]}" >"$log" 2>&1 &
long_pid=$!
rc=0
run "${rest[@]}" || rc=$?
wait "$long_pid" || rc=$?
echo
echo "==== ${long[*]} (run beside the tests above); its output:"
cat "$log"
exit "$rc"
