#!/usr/bin/env python3
"""The operator at scale (issue 23): N KraftQuorums of 3 voters applied at
once to the local cluster, then one of them scaled 3 -> 5 while the others
stay as they are. Python 3.11, standard library only; `kubectl` from the
project's cache, the operator installed by tests/e2e/lib.sh's
`install_operator` (helm).

    python3 bench/operators.py --quorums 50 [--json out.json]

Measured, and printed as one table:
- apply -> Ready of every quorum (the `Ready` condition True with 3 voters in
  status, 3 ready replicas and no pending change: the e2e tests' `is_ready`),
  p50 / p99 / max over the quorums, and until all are Ready;
- the operator's `VmRSS` (peak and at the end) and CPU (`utime + stime` from
  /proc on this host, where the node's containers are processes) over the
  rollout, and over a steady window with every quorum Ready;
- the reconcile duration p50 / p99, from the operator's own histogram
  (`kraft_operator_reconcile_duration_seconds`, buckets 10 ms x 2^k): the
  upper bound of the bucket that holds the quantile, over the rollout;
- scaling one quorum 3 -> 5: apply -> Ready with 5 voters, and whether any
  other quorum left Ready or changed leader epoch meanwhile (it must not).

Every quorum asks `--cpu` / `--memory` (10m / 48Mi), not the operator's
defaults (100m / 256Mi), so that 50 quorums fit one node of 2 CPUs and
24 GiB: the figures are the operator's and the API server's, not the
scheduler's. The node must allow 3 N + 10 pods (`KRAFTWERK_MAX_PODS` of
dev/real-node/node.sh, which `make bench-operator` sets). The namespace is
deleted at the end, whatever happened.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RssSampler, log, proc_cpu_s, proc_rss_mib  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("KRAFTWERK_CACHE", Path.home() / ".cache/kraftwerk"))
ENV = dict(os.environ,
           KUBECONFIG=os.environ.get("KUBECONFIG", str(CACHE / "cluster/admin.kubeconfig")),
           PATH=f"{CACHE / 'bin'}:{os.environ['PATH']}")
OPERATOR_NS = os.environ.get("HELM_NAMESPACE", "kraft-system")
METRIC = "kraft_operator_reconcile_duration_seconds"


def kubectl(*args: str, stdin: str | None = None) -> str:
    """Runs kubectl; a non-zero exit raises with its stderr (one line)."""
    p = subprocess.run(["kubectl", *args], input=stdin, capture_output=True, text=True, env=ENV)
    if p.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args[:3])}: {p.stderr.strip().splitlines()[-1:]}")
    return p.stdout


def quorum_manifest(ns: str, name: str, replicas: int, cpu: str, memory: str) -> dict:
    return {
        "apiVersion": "kraft.krabka.io/v1alpha1",
        "kind": "KraftQuorum",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "replicas": replicas,
            "image": "ghcr.io/kraftwerk/kraft-controller:0.1.0",
            "storage": {"size": "64Mi"},
            "resources": {"requests": {"cpu": cpu, "memory": memory}},
        },
    }


def is_ready(q: dict, replicas: int) -> bool:
    """tests/e2e/lib.sh `is_ready NS NAME REPLICAS`, on one object."""
    st = q.get("status") or {}
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in st.get("conditions", []))
    return (ready and len(st.get("voters", [])) == replicas and st.get("readyReplicas") == replicas
            and not st.get("pendingChange"))


def quorums(ns: str) -> dict[str, dict]:
    items = json.loads(kubectl("-n", ns, "get", "kraftquorums", "-o", "json"))["items"]
    return {q["metadata"]["name"]: q for q in items}


def operator_process() -> tuple[int, str]:
    """The operator's pid on this host and its pod's IP (one operator pod)."""
    pods = json.loads(kubectl("-n", OPERATOR_NS, "get", "pods", "-o", "json"))["items"]
    running = [p for p in pods if p.get("status", {}).get("phase") == "Running"]
    if len(running) != 1:
        raise RuntimeError(f"expected one running operator pod in {OPERATOR_NS}, found {len(running)}")
    pids = subprocess.run(["pgrep", "-x", "kraft-operator"], capture_output=True, text=True).stdout.split()
    if len(pids) != 1:
        raise RuntimeError(f"expected one kraft-operator process on this host, found {pids}")
    return int(pids[0]), running[0]["status"]["podIP"]


def reconcile_histogram(pod_ip: str) -> dict[float, float]:
    """Cumulative bucket counts of the reconcile duration histogram, by upper bound (s)."""
    with urllib.request.urlopen(f"http://{pod_ip}:8080/metrics", timeout=5) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line.startswith(f"{METRIC}_bucket{{"):
            le = line.split('le="', 1)[1].split('"', 1)[0]
            out[float("inf") if le == "+Inf" else float(le)] = float(line.rsplit(" ", 1)[1])
    if not out:
        raise RuntimeError(f"no {METRIC} in the operator's /metrics")
    return out


def histogram_quantile(before: dict[float, float], after: dict[float, float], q: float) -> tuple[float, int]:
    """The upper bound of the bucket holding quantile `q` of the reconciles
    between two scrapes, and how many there were."""
    bounds = sorted(after)
    counts = [after[b] - before.get(b, 0.0) for b in bounds]
    total = counts[-1]
    if total <= 0:
        return float("nan"), 0
    for b, c in zip(bounds, counts):
        if c >= q * total:
            return b, int(total)
    return float("inf"), int(total)


def pick(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, max(0, int(q / 100 * len(sorted_values) + 0.999) - 1))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quorums", type=int, default=50, help="KraftQuorums of 3 voters applied at once")
    ap.add_argument("--namespace", default="kq-scale")
    ap.add_argument("--cpu", default="10m", help="each controller's CPU request")
    ap.add_argument("--memory", default="48Mi", help="each controller's memory request")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds for all quorums to be Ready")
    ap.add_argument("--scale-timeout", type=float, default=600, help="seconds for the scaled quorum")
    ap.add_argument("--steady", type=float, default=60, help="seconds of the steady window")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if args.quorums < 1:
        ap.error(f"--quorums must be at least 1, not {args.quorums}")

    subprocess.run(["bash", "-c", f'set -euo pipefail; source "{ROOT}/tests/e2e/lib.sh"; install_operator'],
                   check=True, env=ENV)
    node = json.loads(kubectl("get", "nodes", "-o", "json"))["items"]
    pods_allowed = sum(int(n["status"]["allocatable"]["pods"]) for n in node)
    pods_now = len(json.loads(kubectl("get", "pods", "-A", "-o", "json"))["items"])
    need = 3 * args.quorums + 2  # the scaled quorum's two more voters
    if pods_now + need > pods_allowed:
        raise SystemExit(f"bench-operator: the node allows {pods_allowed} pods and {pods_now} run; "
                         f"{args.quorums} quorums need {need} more: restart the cluster with "
                         f"KRAFTWERK_MAX_PODS={pods_now + need + 10} (make cluster-down; make bench-operator)")
    pid, pod_ip = operator_process()
    ns = args.namespace
    if subprocess.run(["kubectl", "get", "namespace", ns], capture_output=True, env=ENV).returncode == 0:
        log(f"deleting the namespace {ns} of an earlier run")
        kubectl("delete", "namespace", ns, "--wait=true", "--timeout=600s")
    kubectl("create", "namespace", ns)
    names = [f"q{i:03d}" for i in range(args.quorums)]
    result: dict = {"quorums": args.quorums, "cpu_request": args.cpu, "memory_request": args.memory,
                    "node_pods_allowed": pods_allowed}
    with RssSampler(pid) as rss:  # every 0.25 s, from the apply to the end
        try:
            cpu0 = proc_cpu_s(pid)
            hist0 = reconcile_histogram(pod_ip)
            docs = [quorum_manifest(ns, n, 3, args.cpu, args.memory) for n in names]
            log(f"applying {len(docs)} KraftQuorums of 3 voters to {ns}")
            t0 = time.monotonic()
            kubectl("apply", "-f", "-", stdin="\n".join(json.dumps(d) for d in docs))
            ready_at: dict[str, float] = {}
            last_report = 0.0
            while len(ready_at) < len(names):
                now = time.monotonic()
                if now - t0 > args.timeout:
                    missing = sorted(set(names) - set(ready_at))
                    raise RuntimeError(f"{len(missing)} quorums not Ready after {args.timeout:.0f} s: {missing[:10]}")
                for name, q in quorums(ns).items():
                    if name not in ready_at and is_ready(q, 3):
                        ready_at[name] = time.monotonic() - t0
                if now - last_report >= 30:
                    log(f"{len(ready_at)}/{len(names)} Ready after {now - t0:.0f} s, "
                        f"operator RSS {rss.samples[-1]:.0f} MiB")
                    last_report = now
                time.sleep(1)
            rollout_s = time.monotonic() - t0
            times = sorted(ready_at.values())
            hist1 = reconcile_histogram(pod_ip)
            hist1_at = time.monotonic()
            rollout_rss_peak = max(x for x in rss.samples if x == x)
            p50, n_rec = histogram_quantile(hist0, hist1, 0.50)
            p99, _ = histogram_quantile(hist0, hist1, 0.99)
            result["rollout"] = {
                "all_ready_s": rollout_s, "ready_p50_s": pick(times, 50), "ready_p99_s": pick(times, 99),
                "ready_max_s": times[-1], "operator_cpu_s": proc_cpu_s(pid) - cpu0,
                "operator_rss_peak_mib": rollout_rss_peak,
                "reconciles": n_rec, "reconcile_p50_le_s": p50, "reconcile_p99_le_s": p99,
            }
            log(f"all {len(names)} Ready after {rollout_s:.0f} s")

            # Steady: every quorum Ready, nothing applied.
            cpu0, hist0 = proc_cpu_s(pid), hist1
            epochs = {n: (q.get("status") or {}).get("leaderEpoch") for n, q in quorums(ns).items()}
            t1 = time.monotonic()
            time.sleep(max(0.0, args.steady - (time.monotonic() - t1)))
            hist2 = reconcile_histogram(pod_ip)
            # The reconciles counted between the two scrapes: a little more
            # than the steady window (the status read and the scrape).
            window_s = time.monotonic() - hist1_at
            _, n_steady = histogram_quantile(hist0, hist2, 0.5)
            result["steady"] = {"seconds": args.steady, "operator_cpu_s": proc_cpu_s(pid) - cpu0,
                                "operator_rss_mib": rss.samples[-1], "reconciles": n_steady,
                                "reconcile_window_s": window_s, "reconciles_per_s": n_steady / window_s}

            # One quorum scaled 3 -> 5 while the others stay.
            scaled, others = names[0], names[1:]
            cpu0, hist0 = proc_cpu_s(pid), hist2
            log(f"scaling {scaled} to 5 voters")
            t2 = time.monotonic()
            kubectl("-n", ns, "scale", f"kraftquorum/{scaled}", "--replicas=5")
            not_ready_seen: set[str] = set()
            epoch_changed: set[str] = set()
            while True:
                if time.monotonic() - t2 > args.scale_timeout:
                    raise RuntimeError(f"{scaled} not Ready with 5 voters after {args.scale_timeout:.0f} s")
                qs = quorums(ns)
                for n in others:
                    if not is_ready(qs[n], 3):
                        not_ready_seen.add(n)
                    if (qs[n].get("status") or {}).get("leaderEpoch") != epochs[n]:
                        epoch_changed.add(n)
                if is_ready(qs[scaled], 5):
                    break
                time.sleep(1)
            hist3 = reconcile_histogram(pod_ip)
            p99s, n_scale = histogram_quantile(hist0, hist3, 0.99)
            result["scale"] = {"quorum": scaled, "ready_5_s": time.monotonic() - t2,
                               "others_not_ready": sorted(not_ready_seen), "others_new_epoch": sorted(epoch_changed),
                               "operator_cpu_s": proc_cpu_s(pid) - cpu0, "reconciles": n_scale,
                               "reconcile_p99_le_s": p99s}
            result["operator_rss_end_mib"] = proc_rss_mib(pid)
            result["operator_rss_peak_mib"] = rss.peak
        finally:
            log(f"deleting the namespace {ns}")
            subprocess.run(["kubectl", "delete", "namespace", ns, "--wait=true", "--timeout=900s"], env=ENV)

    r, s, c = result["rollout"], result["steady"], result["scale"]
    print(f"\nThe operator at scale: {args.quorums} KraftQuorums x 3 voters (requests {args.cpu} CPU, "
          f"{args.memory}) applied at once, one node\n")
    print("| quorums | all Ready s | Ready p50 / p99 / max s | reconciles | reconcile p50 / p99 s (≤ bucket) "
          f"| operator CPU s rollout / steady {args.steady:.0f} s | operator RSS MiB rollout peak / peak "
          "| scale 3→5 s "
          "| others disturbed |")
    print("|---|---|---|---|---|---|---|---|---|")
    disturbed = len(c["others_not_ready"]) + len(c["others_new_epoch"])
    print(f"| {args.quorums} | {r['all_ready_s']:.0f} | {r['ready_p50_s']:.0f} / {r['ready_p99_s']:.0f} / "
          f"{r['ready_max_s']:.0f} | {r['reconciles']} | {r['reconcile_p50_le_s']:g} / {r['reconcile_p99_le_s']:g} "
          f"| {r['operator_cpu_s']:.1f} / {s['operator_cpu_s']:.1f} | {r['operator_rss_peak_mib']:.0f} / "
          f"{result['operator_rss_peak_mib']:.0f} | {c['ready_5_s']:.0f} | {disturbed} |")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    if disturbed:
        print(f"others not Ready meanwhile: {c['others_not_ready']}; new leader epoch: {c['others_new_epoch']}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
