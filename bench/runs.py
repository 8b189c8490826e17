"""One measured run of a system at one setting, the failover rounds, and the
saturation search (issue 23).

Owns what a run measures and when: fresh directories, start, a leader's first
commit, a window of `duration` seconds, kill -9, then the logs on disk. Knows
nothing about how results are printed (report.py) or plotted (plot.py).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from clusters import KAFKA_412_RATE, Cluster, Kafka
from common import log, log_stats, wait_for

# A rate is sustained when, over the second half of the window, both the
# leader's log and the most complete follower's log hold at least this share
# of the records offered (see `sustained`).
SUSTAINED_SHARE = 0.95


def effective_rate(cluster: Cluster, rate: int) -> int:
    """The rate the system's workload generator is actually asked for: Kafka
    4.1.x's TestRaftServer writes 20 000 records/s whatever `rate` says."""
    if isinstance(cluster, Kafka) and not cluster.honours_workload_flags():
        return KAFKA_412_RATE
    return rate


def watch(cluster: Cluster, seconds: float) -> None:
    """Lets the window pass, failing early if a node exits."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        cluster.check_alive()
        time.sleep(min(left, 0.5))


def throughput_run(cluster: Cluster, rate: int, size: int, duration: float, controller: Path,
                   leader_timeout_s: float = 300) -> dict:
    """One run of `cluster` at `rate` records/s of `size` bytes, measured over
    `duration` seconds from the leader's first commit (waited for at most
    `leader_timeout_s`).

    Returns the system's own latency report (ms), RSS (MiB) and CPU (s) of
    the leader and the largest follower at the end, the leader's CPU over
    the window, start-to-leader (s), and from the logs on disk: the leader's
    records/s over the window (`log_records_per_sec`), its bytes per record,
    and over the window's second half the leader's and the best follower's
    records/s (`leader_half_per_sec`, `follower_half_per_sec`), from which
    `sustained` is decided."""
    shutil.rmtree(cluster.work, ignore_errors=True)
    cluster.work.mkdir(parents=True)
    cluster.format()
    started = time.monotonic()
    cluster.start_all(rate, size)
    try:
        def leader():
            cluster.check_alive()
            return cluster.committed_leader(0)

        node, epoch = wait_for(f"a {cluster.name} leader", leader, leader_timeout_s)
        start_to_leader = time.monotonic() - started
        cpu0 = cluster.usage()[node][1]
        t0_ms = time.time() * 1000
        watch(cluster, duration / 2)
        tmid_ms = time.time() * 1000
        watch(cluster, duration / 2)
        t1_ms = time.time() * 1000
        usage = cluster.usage()
        try:
            result = cluster.results(node, size)
        except RuntimeError as e:  # e.g. a window shorter than Kafka's 5 s report interval
            log(f"  {cluster.name}: no self-reported figures: {e}")
            result = {"p50": None, "p75": None, "p99": None, "p999": None, "max": None, "records_per_sec": None}
        cluster.stop_all(last=node)
        if isinstance(cluster, Kafka):
            result["gc_leader"] = cluster.gc_pauses(node, t0_ms, t1_ms)
        result["leader"], result["epoch"] = node, epoch
        result["rss_leader"], result["cpu_leader"] = usage[node]
        result["cpu_leader_window"] = usage[node][1] - cpu0
        followers = [usage[n] for n in usage if n != node]
        result["rss_follower"] = max(u[0] for u in followers)
        result["cpu_follower"] = max(u[1] for u in followers)
        result["start_to_leader_s"] = start_to_leader
        whole = log_stats(controller, cluster.partition_dir(node), epoch, t0_ms, t1_ms)
        half = log_stats(controller, cluster.partition_dir(node), epoch, tmid_ms, t1_ms)
        follower_half = max((log_stats(controller, cluster.partition_dir(n), epoch, tmid_ms, t1_ms)
                             for n in cluster.ports if n != node), key=lambda s: s["records"])
        result["log_records_per_sec"] = whole["records_per_sec"]
        result["log_bytes_per_record"] = whole["bytes_per_record"]
        result["leader_half_per_sec"] = half["records_per_sec"]
        result["follower_half_per_sec"] = follower_half["records_per_sec"]
        result["cpu_us_per_record"] = (result["cpu_leader_window"] * 1e6 / whole["records"]
                                       if whole["records"] else None)
        result["offered_per_sec"] = effective_rate(cluster, rate)
        result["sustained"] = sustained(result)
        return result
    finally:
        cluster.stop_all()
        for n in cluster.ports:  # the logs can be gigabytes at saturation; keep node-N.out/.err
            shutil.rmtree(cluster.dir(n), ignore_errors=True)


def sustained(result: dict) -> bool:
    """Whether the run held its offered rate: over the window's second half
    the leader's log and the best follower's log each hold at least 95 % of
    the records offered. A backlog (offered minus replicated) that grows
    without bound shows as the follower's share falling below 95 %, and at a
    constant offered rate an unbounded commit latency is the same thing
    (Little's law: backlog = rate × latency); a generator that cannot even
    append at the rate shows in the leader's share."""
    need = SUSTAINED_SHARE * result["offered_per_sec"]
    return result["leader_half_per_sec"] >= need and result["follower_half_per_sec"] >= need


def saturation_search(probe, start: int, max_rate: int, min_rate: int, steps: int) -> dict:
    """The highest sustained rate of one system: `probe(rate)` runs once at
    `rate` and returns a result with `sustained`. Doubles from `start` while
    sustained (at most `max_rate`), halves while not (at least `min_rate`),
    then bisects between the highest sustained and the lowest failed rate
    `steps` times. Returns every probe, `highest_sustained` (None when none
    was) and `capped` (True when `max_rate` itself was sustained)."""
    probes: list[dict] = []

    def run(rate: int) -> bool:
        r = probe(rate)
        r["rate"] = rate
        probes.append(r)
        log(f"  saturation probe {rate}/s: {'sustained' if r['sustained'] else 'NOT sustained'} "
            f"(leader {r['leader_half_per_sec']:.0f}/s, follower {r['follower_half_per_sec']:.0f}/s)")
        return r["sustained"]

    good = bad = None
    rate = max(min_rate, min(start, max_rate))
    if run(rate):
        good = rate
        while rate < max_rate:
            rate = min(rate * 2, max_rate)
            if not run(rate):
                bad = rate
                break
            good = rate
    else:
        bad = rate
        while rate > min_rate:
            rate = max(rate // 2, min_rate)
            if run(rate):
                good = rate
                break
            bad = rate
    for _ in range(steps):
        if good is None or bad is None or bad - good <= max(1, good // 20):
            break
        mid = (good + bad) // 2
        if run(mid):
            good = mid
        else:
            bad = mid
    return {"probes": probes, "highest_sustained": good, "lowest_failed": bad,
            "capped": good == max_rate}


def failover_run(cluster: Cluster, rounds: int, rate: int, size: int) -> list[float]:
    """kill -9 of the leader to the first commit of a new leader, `rounds`
    times (the killed node restarted between rounds); milliseconds."""
    shutil.rmtree(cluster.work, ignore_errors=True)
    cluster.work.mkdir(parents=True)
    cluster.format()
    cluster.start_all(rate, size)
    times = []
    try:
        node, epoch = wait_for(f"a {cluster.name} leader", lambda: cluster.committed_leader(0), 300)
        for i in range(rounds):
            watch(cluster, 2)  # let the followers catch up with the workload
            t0 = time.monotonic()
            cluster.kill(node)
            new, new_epoch = wait_for(f"a new {cluster.name} leader",
                                      lambda: cluster.committed_leader(epoch + 1), 60, 0.005)
            times.append((time.monotonic() - t0) * 1000)
            log(f"{cluster.name}: failover {i + 1}: node {node} killed, node {new} leads epoch {new_epoch} "
                f"after {times[-1]:.0f} ms")
            cluster.start(node, rate, size)  # back as a follower for the next round
            node, epoch = new, new_epoch
        return times
    finally:
        cluster.stop_all()
        for n in cluster.ports:
            shutil.rmtree(cluster.dir(n), ignore_errors=True)
