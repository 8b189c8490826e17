#!/usr/bin/env python3
"""Samples a KraftQuorum's pods and controllers while a cluster test runs, and
checks the samples afterwards (tests/e2e/run.sh, cases 3 and 6).

  samples.py record NS NAME OUT
      Until SIGTERM: every ~0.3 s, one JSON line to OUT with
        - the pods of NAME (ordinal, uid, ready, deleting, revision, IP),
        - each controller's own view from its /metrics (Kafka's raft-metrics:
          current leader, epoch, state, number of voters),
        - the cluster id in each volume's meta.properties (the PVs are
          hostPath directories of the local cluster, read from the host).
  samples.py check-one-quorum OUT CLUSTER_ID MIN_NODES
      No second quorum was ever formed: every volume holds CLUSTER_ID, and
      across every controller's view there is one leader per epoch.
  samples.py check-roll OUT REPLICAS
      A quorum-aware rolling restart: every pod restarted exactly once, one
      at a time, never fewer than a majority ready, the leader last.

Prints what it found; exits 1 with the reason on a failed check.
"""

import json
import re
import signal
import subprocess
import sys
import time
import urllib.request

HTTP_PORT = 9100  # CONTROLLER_HTTP_PORT (operator/src/crd.rs)
METRIC = re.compile(
    r'^kafka_server_raft_metrics_(current_leader|current_epoch|number_of_voters|current_state)'
    r'(?:\{state="(\w+)"\})? (-?[0-9.e+]+)$'
)


def kubectl_json(*args):
    out = subprocess.run(
        ["kubectl", *args, "-o", "json"], capture_output=True, text=True, timeout=20
    )
    if out.returncode != 0:
        return None
    return json.loads(out.stdout)


def controller_view(ip):
    """One controller's own Raft view from its /metrics, or None."""
    try:
        with urllib.request.urlopen(f"http://{ip}:{HTTP_PORT}/metrics", timeout=0.5) as r:
            text = r.read().decode()
    except OSError:
        return None
    view = {}
    for line in text.splitlines():
        m = METRIC.match(line)
        if not m:
            continue
        name, state, value = m.group(1), m.group(2), float(m.group(3))
        if name == "current_state":
            if value == 1:
                view["state"] = state
        else:
            view[name.removeprefix("current_")] = int(value)
    return view if "epoch" in view else None


def meta_cluster_id(path):
    try:
        with open(f"{path}/data/meta.properties") as f:
            for line in f:
                if line.startswith("cluster.id="):
                    return line.strip().split("=", 1)[1]
    except OSError:
        return None
    return None


def record(ns, name, out_path):
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    pv_paths = {}
    selector = f"app.kubernetes.io/instance={name}"
    with open(out_path, "w") as out:
        while not stop:
            listed = kubectl_json("-n", ns, "get", "pods,pvc", "-l", selector)
            if listed is None:
                time.sleep(0.3)
                continue
            sample = {"t": time.time(), "pods": {}, "views": {}, "volumes": {}}
            for item in listed["items"]:
                meta, status = item["metadata"], item.get("status", {})
                if item["kind"] == "Pod":
                    labels = meta.get("labels", {})
                    ordinal = labels.get("apps.kubernetes.io/pod-index")
                    if ordinal is None:
                        continue
                    ready = any(
                        c["type"] == "Ready" and c["status"] == "True"
                        for c in status.get("conditions", [])
                    )
                    ip = status.get("podIP")
                    sample["pods"][ordinal] = {
                        "uid": meta["uid"],
                        "ready": ready,
                        "deleting": "deletionTimestamp" in meta,
                        "revision": labels.get("controller-revision-hash"),
                    }
                    if ip and "deletionTimestamp" not in meta:
                        view = controller_view(ip)
                        if view is not None:
                            sample["views"][ordinal] = view
                elif item["kind"] == "PersistentVolumeClaim":
                    pv = item.get("spec", {}).get("volumeName")
                    if not pv:
                        continue
                    if pv not in pv_paths:
                        got = kubectl_json("get", "pv", pv)
                        path = (got or {}).get("spec", {}).get("hostPath", {}).get("path")
                        if path:
                            pv_paths[pv] = path
                    if pv in pv_paths:
                        cid = meta_cluster_id(pv_paths[pv])
                        if cid:
                            sample["volumes"][meta["name"]] = cid
            out.write(json.dumps(sample) + "\n")
            out.flush()
            time.sleep(0.3)


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def fail(message):
    print(f"FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def check_one_quorum(path, cluster_id, min_nodes):
    samples = load(path)
    viewed = [s for s in samples if s["views"]]
    if len(viewed) < 10:
        fail(f"only {len(viewed)} samples saw a controller; nothing was observed")
    ids = {}
    for s in samples:
        for pvc, cid in s["volumes"].items():
            ids.setdefault(cid, set()).add(pvc)
    if set(ids) != {cluster_id}:
        fail(f"volumes hold cluster ids {ids}, want only {cluster_id}")
    if len(ids[cluster_id]) < min_nodes:
        fail(f"only volumes {sorted(ids[cluster_id])} were read, want {min_nodes}")
    # (node, epoch, leader) -> times seen. A scrape reads the gauges one by
    # one while the controller may be setting them, so a single reading can
    # pair a new epoch with the old leader; a view counts once the same node
    # reported it twice. A second quorum would show for as long as it lives.
    seen = {}
    nodes = set()
    agreed = False
    for s in samples:
        pairs = set()
        for node, v in s["views"].items():
            nodes.add(node)
            leader = v.get("leader", -1)
            if v.get("state") == "leader":
                leader = int(node)
            if leader >= 0:
                seen.setdefault((node, v["epoch"], leader), []).append(round(s["t"], 2))
                pairs.add((v["epoch"], leader))
        if len(s["views"]) >= min_nodes and len(pairs) == 1 and all(
            v.get("leader", -1) >= 0 for v in s["views"].values()
        ):
            agreed = True
    if len(nodes) < min_nodes:
        fail(f"only nodes {sorted(nodes)} answered /metrics, want {min_nodes}")
    if not agreed:
        fail(f"no sample where {min_nodes} controllers agreed on one leader and epoch")
    leaders = {}  # epoch -> {leader: [(node, first time seen)]}
    for (node, epoch, leader), times in seen.items():
        if len(times) >= 2:
            leaders.setdefault(epoch, {}).setdefault(leader, []).append((node, times[0]))
    for epoch, by_leader in sorted(leaders.items()):
        if len(by_leader) > 1:
            fail(f"epoch {epoch} has leaders {by_leader} (seen by node, at time)")
    print(
        f"{len(samples)} samples, nodes {sorted(nodes)}, volumes {sorted(ids[cluster_id])} "
        f"all of cluster {cluster_id}; leader per epoch: "
        + ", ".join(f"{e}:{next(iter(b))}" for e, b in sorted(leaders.items()))
    )


def leader_of(sample):
    """The leader as the controllers with the highest epoch see it, or None."""
    views = [v for v in sample["views"].values() if v.get("leader", -1) >= 0]
    if not views:
        return None
    top = max(v["epoch"] for v in views)
    named = {v["leader"] for v in views if v["epoch"] == top}
    return named.pop() if len(named) == 1 else None


def leader_before(samples, i, since):
    """The leader just before the restart seen at sample i: the latest agreed
    leader in samples[since:i], the stretch where every pod was up (the
    previous restarted pod was back). The sample right before a restart may
    already be inside it: the pod listing shows the pod not yet deleting,
    then the scrape meets its controller shutting down (a leader resigning),
    so the views disagree; an earlier sample of the same stretch says who
    led when the restart began. None when no sample of it agreed."""
    for s in reversed(samples[since:i]):
        leader = leader_of(s)
        if leader is not None:
            return leader
    return None


def check_roll(path, replicas):
    samples = load(path)
    ordinals = [str(i) for i in range(replicas)]
    majority = replicas // 2 + 1
    if not samples or any(
        o not in samples[0]["pods"] or not samples[0]["pods"][o]["ready"] for o in ordinals
    ):
        fail(f"the roll did not start from {replicas} ready pods: {samples[:1]}")
    first = {o: samples[0]["pods"][o] for o in ordinals}
    restarts = []  # (sample index, ordinal, leader just before)
    seen_uids = {o: [first[o]["uid"]] for o in ordinals}
    started = set()
    back = {}  # ordinal -> first sample where its new pod was ready
    for i, s in enumerate(samples):
        # Restarts begin only once the previous restarted pod is back.
        settled = max((back[o] for o in started if o in back), default=0)
        down = []
        for o in ordinals:
            p = s["pods"].get(o)
            if p is None or p["deleting"] or not p["ready"]:
                down.append(o)
            if p is not None and p["uid"] not in seen_uids[o]:
                seen_uids[o].append(p["uid"])
            changed = p is None or p["deleting"] or p["uid"] != first[o]["uid"]
            if changed and o not in started:
                started.add(o)
                restarts.append((i, o, leader_before(samples, i, settled)))
            if o in started and p is not None and p["ready"] and p["uid"] != first[o]["uid"]:
                back.setdefault(o, i)
        if len(down) > 1:
            fail(f"sample {i}: pods {down} down at once (one at a time expected)")
        if replicas - len(down) < majority:
            fail(f"sample {i}: only {replicas - len(down)} ready, majority is {majority}")
    for o in ordinals:
        if len(seen_uids[o]) != 2:
            fail(f"pod {o} ran as {len(seen_uids[o])} pods {seen_uids[o]}, want restarted once")
    last = samples[-1]
    revisions = {last["pods"][o]["revision"] for o in ordinals}
    if len(revisions) != 1 or revisions & {first[o]["revision"] for o in ordinals}:
        fail(f"pods end on revisions {revisions}, from {[first[o]['revision'] for o in ordinals]}")
    for n, (i, o, leader) in enumerate(restarts):
        if leader is None:
            fail(f"no agreed leader in the samples before pod {o} restarted (sample {i})")
        is_last = n == len(restarts) - 1
        if is_last and int(o) != leader:
            fail(f"the last pod restarted was {o}, but the leader then was {leader}")
        if not is_last and int(o) == leader:
            fail(f"pod {o} restarted while it led, before pods {[r[1] for r in restarts[n + 1:]]}")
    seconds = samples[-1]["t"] - samples[restarts[0][0]]["t"]
    print(
        f"{len(samples)} samples; restarted "
        + ", ".join(f"{o} (leader then: {leader})" for _, o, leader in restarts)
        + f"; never more than one pod down, always >= {majority} ready; {seconds:.0f} s"
    )


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "record":
        record(*args)
    elif cmd == "check-one-quorum":
        check_one_quorum(args[0], args[1], int(args[2]))
    elif cmd == "check-roll":
        check_roll(args[0], int(args[1]))
    else:
        fail(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
