# Sourced, not run: `poll`, the one wait-for-a-condition loop of the shell
# scripts (the local cluster, its smoke test, the cluster tests, the demo).
#
# poll DESCRIPTION SECONDS CMD...: runs CMD every 0.5 s until it succeeds;
# after SECONDS prints "timed out after SECONDSs: DESCRIPTION" on stderr and
# returns 1.
poll() {
  local what="$1" secs="$2"
  shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
      echo "timed out after ${secs}s: $what" >&2
      return 1
    fi
    sleep 0.5
  done
}
