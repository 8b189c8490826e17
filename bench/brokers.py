#!/usr/bin/env python3
"""Broker heartbeats side by side (issue 23): N simulated Kafka 4.4 brokers
register with and heartbeat to three of our controllers and to three of
Kafka's own (`kafka.Kafka`, process.roles=controller), in one run. The load
is `kraft-broker-load` (controller/src/bin/broker_load: BrokerRegistration,
then BrokerHeartbeat every broker.heartbeat.interval.ms); this script starts
the controllers (bench/controllers.py), samples the active controller's CPU
(utime+stime) and RSS, checks from the metadata log on disk that every
simulated broker was unfenced (its last BrokerRegistrationChangeRecord has
fenced=-1), prints one table and writes JSON. Python 3.11, standard library
only.

    python3 bench/brokers.py --controller target/release/kraft-controller \\
        --load target/release/kraft-broker-load [--brokers 100 --duration 60] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.dont_write_bytecode = True  # importing common.py leaves no __pycache__ in the tree
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RssSampler, log, proc_cpu_s, wait_for  # noqa: E402
from controllers import CLUSTER_ID, Controllers  # noqa: E402

# A broker's registration and fencing records as `kraft-controller dump-log`
# prints them (it reads Kafka's segments as well as ours).
REGISTER = re.compile(r"REGISTER_BROKER_RECORD\(0\) version=\d+ broker_id=(\d+) .*\bfenced=(true|false)\b")
CHANGE = re.compile(r"BROKER_REGISTRATION_CHANGE_RECORD\(17\) version=\d+ broker_id=(\d+) broker_epoch=\d+ "
                    r"fenced=(-?\d+)")
FENCE = re.compile(r"(UNFENCE|FENCE)_BROKER_RECORD\(\d+\) version=\d+ broker_id=(\d+)")


def unfenced_brokers(lines) -> set[int]:
    """The brokers whose last registration state in a metadata log (dump-log
    lines, in log order) is unfenced: a RegisterBrokerRecord sets its
    `fenced`, a BrokerRegistrationChangeRecord's `fenced` -1 unfences and 1
    fences (0 leaves it), Fence/UnfenceBrokerRecord (metadata.version before
    3.3's change record) do as named."""
    fenced: dict[int, bool] = {}
    for line in lines:
        if m := REGISTER.search(line):
            fenced[int(m.group(1))] = m.group(2) == "true"
        elif m := CHANGE.search(line):
            change = int(m.group(2))
            if change != 0:
                fenced[int(m.group(1))] = change > 0
        elif m := FENCE.search(line):
            fenced[int(m.group(2))] = m.group(1) == "FENCE"
    return {broker for broker, f in fenced.items() if not f}


def cpu_share(cpu_s: float, wall_s: float) -> float:
    """CPU seconds per wall second, in percent of one core."""
    return 100.0 * cpu_s / wall_s if wall_s > 0 else float("nan")


def ms(value) -> str:
    return "-" if value is None else f"{value:.1f}"


def table(results: list[dict]) -> str:
    """The side-by-side table of `results` (one dict per system)."""
    head = (f"{'controllers':<12} {'hb sent':>8} {'answered':>9} {'errors':>7} {'hb p50':>7} {'hb p99':>7} "
            f"{'hb p99.9':>9} {'run p50':>8} {'run p99':>8} {'run p99.9':>9} {'reg p50':>8} {'reg p99':>8} {'unfenced s':>11} {'on disk':>8} "
            f"{'CPU s':>6} {'CPU %':>6} {'RSS MiB':>8}")
    rows = [head]
    for r in results:
        unfenced = "-" if r["all_unfenced_ms"] is None else f"{r['all_unfenced_ms'] / 1000:.2f}"
        rows.append(
            f"{r['system']:<12} {r['heartbeats_sent']:>8} {r['heartbeats_answered']:>9} "
            f"{r['heartbeat_errors'] + r['registration_errors']:>7} {ms(r['heartbeat_p50_ms']):>7} "
            f"{ms(r['heartbeat_p99_ms']):>7} {ms(r['heartbeat_p999_ms']):>9} {ms(r['heartbeat_running_p50_ms']):>8} "
            f"{ms(r['heartbeat_running_p99_ms']):>8} {ms(r['heartbeat_running_p999_ms']):>9} "
            f"{ms(r['registration_p50_ms']):>8} "
            f"{ms(r['registration_p99_ms']):>8} {unfenced:>11} {r['unfenced_on_disk']:>8} "
            f"{r['leader_cpu_s']:>6.1f} {r['leader_cpu_pct']:>6.1f} {r['rss_peak_mib']:>8.0f}")
    return "\n".join(rows)


def run(kind: str, args, work: Path) -> dict:
    system = Controllers(kind, work, args.controller, args.kafka_version, release_version=args.release_version)
    t0 = time.monotonic()
    try:
        system.start()

        def leader():
            system.check_running()
            return system.leader()

        leader_id = wait_for("a controller leader", leader, 120, 0.5)
        started = time.monotonic() - t0
        pid = system.procs[leader_id].pid
        log(f"{kind}: {args.brokers} brokers heartbeating for {args.duration} s to leader {leader_id}")
        cpu0, w0 = proc_cpu_s(pid), time.monotonic()
        with RssSampler(pid) as rss:
            r = subprocess.run([args.load, "--bootstrap-controller", system.bootstrap, "--cluster-id", CLUSTER_ID,
                                "--brokers", str(args.brokers), "--duration-s", str(args.duration)],
                               capture_output=True, text=True, timeout=args.duration + 300)
        cpu1, w1 = proc_cpu_s(pid), time.monotonic()
        (work / "load.stderr").write_text(r.stderr)
        if r.returncode != 0 or not r.stdout.strip():
            raise RuntimeError(f"kraft-broker-load failed on {kind}:\n{r.stderr[-3000:]}")
        figures = json.loads(r.stdout.strip().splitlines()[-1])
        error_lines = [line for line in r.stderr.splitlines() if line.strip()]
        system.check_running()
    finally:
        system.stop()
    dump = subprocess.run([args.controller, "dump-log", work / f"c{leader_id}" / "__cluster_metadata-0"],
                          capture_output=True, text=True)
    ids = set(range(100, 100 + args.brokers))
    on_disk = unfenced_brokers(dump.stdout.splitlines()) & ids
    figures.update(system=kind, start_to_leader_s=started, leader=leader_id, leader_cpu_s=cpu1 - cpu0,
                   leader_cpu_pct=cpu_share(cpu1 - cpu0, w1 - w0), rss_peak_mib=rss.peak,
                   unfenced_on_disk=len(on_disk), first_errors=error_lines[:20])
    return figures


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--controller", type=Path, required=True)
    ap.add_argument("--load", type=Path, required=True, help="the kraft-broker-load binary")
    ap.add_argument("--kafka-version", default="4.4.0")
    ap.add_argument("--release-version", default="4.4-IV2",
                    help="metadata.version both quorums are formatted with (the simulated brokers support 7-33)")
    ap.add_argument("--brokers", type=int, default=100)
    ap.add_argument("--duration", type=int, default=60, help="seconds of load per system")
    ap.add_argument("--systems", default="ours,kafka", help="which controllers, in order (ours, kafka)")
    ap.add_argument("--keep", action="store_true", help="keep each system's work directory (logs, metadata)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    with open("/proc/loadavg") as f:
        load_before = f.read().strip()
    results = []
    for kind in args.systems.split(","):
        work = Path(tempfile.mkdtemp(prefix=f"bench-brokers-{kind}-"))
        results.append(run(kind, args, work))
        if args.keep:
            log(f"{kind}: kept {work}")
        else:
            subprocess.run(["rm", "-rf", str(work)], check=False)
    with open("/proc/loadavg") as f:
        load_after = f.read().strip()
    print(f"\n{args.brokers} simulated brokers x {args.duration} s, heartbeat every 2000 ms, "
          f"Kafka {args.kafka_version}'s controllers, metadata.version {args.release_version}; latencies ms "
          f"(hb: every heartbeat, run: those of brokers already unfenced); CPU/RSS of the active controller; "
          f"loadavg before {load_before}, after {load_after}")
    print(table(results))
    for r in results:
        if r["unfenced_on_disk"] != args.brokers:
            print(f"{r['system']}: only {r['unfenced_on_disk']} of {args.brokers} brokers unfenced in the log")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"loadavg_before": load_before, "loadavg_after": load_after,
                                         "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
