# shellcheck shell=bash disable=SC2154  # run, logs: the caller's (below)
# The local cluster's processes, started and stopped by pid file: one copy
# for dev/cluster.sh and dev/real-node/*.sh (sourced, never run).
#
# Needs from the caller: `$run` (pid files, NAME.pid) and `$logs` (output,
# NAME.log) directories, and a function for one-line messages, named by
# `$procs_log` (default `log`).

# alive NAME: the recorded process of NAME runs.
alive() { [[ -f "$run/$1.pid" ]] && kill -0 "$(cat "$run/$1.pid")" 2>/dev/null; }

# detach CMD...: runs CMD in its own session with no inherited descriptor
# above 2. A daemon started under `flock /tmp/kraftwerk-cluster.lock ...`
# otherwise inherits the lock's descriptor and holds the lock for as long as
# it runs: a cluster left up (make demo) then blocks every later flock,
# `make cluster-down` included (seen: etcd, kube-apiserver, containerd,
# kubelet... all holding it). Stdout and stderr are the caller's.
detach() {
  local fd
  for fd in /proc/self/fd/*; do
    fd="${fd##*/}"
    ((fd > 2)) && eval "exec $fd>&-" 2>/dev/null
  done
  exec setsid "$@"
}

# start NAME CMD...: starts CMD detached, its output appended to
# $logs/NAME.log, its pid in $run/NAME.pid; nothing if NAME is alive.
start() {
  local name="$1"
  shift
  if alive "$name"; then return 0; fi
  mkdir -p "$run" "$logs"
  (detach "$@") >>"$logs/$name.log" 2>&1 </dev/null &
  echo $! >"$run/$name.pid"
  "${procs_log:-log}" "started $name (pid $!)"
}

# stop NAME: SIGTERM, then SIGKILL after 10 s; only the process recorded.
stop() {
  local name="$1" pid
  [[ -f "$run/$name.pid" ]] || return 0
  pid="$(cat "$run/$name.pid")"
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    "${procs_log:-log}" "stopped $name (pid $pid)"
  fi
  rm -f "$run/$name.pid"
}
