#!/usr/bin/env python3
"""Side-by-side benchmark of kraft-controller and Apache Kafka's KRaft (issues 11, 23).

Runs, on loopback, a 3-voter quorum of our controller (`run --workload-throughput`)
and a 3-voter quorum of Kafka's `kafka.tools.TestRaftServer` (Kafka 4.4.0 by
default, `--kafka-version 4.1.2` for the older one), alternately, for every
row: record size (256 B, 4 KiB) x append linger (Kafka's default 25 ms, 0) x
rate; then a saturation search per system and record size; then kills the
leader of each 5 times; measures the disk's own fsync latency in the same run;
prints one table and writes it, with the raw figures, to an output directory
(target/bench/<UTC time>/: results.json, report.md; bench/plot.py draws the
pictures next to them).

What is measured, for both systems the same way:
- append-to-commit latency percentiles and committed throughput, as the leader
  reports them (ours: `GET /workload`; Kafka: the last `Throughput (bytes/second)`
  line TestRaftServer prints; Kafka prints no p50);
- the work done, from the logs on disk (`kraft-controller dump-log`, which reads
  Kafka's segments too): the leader's records/s and bytes per record over the
  window; a row whose two systems differ by more than 5 % in either is marked
  NOT COMPARABLE;
- RSS (VmRSS) and CPU seconds (utime+stime) of each node from /proc at the
  end, and the leader's CPU over the window per record it appended;
- start-to-leader: from the first process spawned to a leader's first commit in
  its epoch (ours: `/readyz` says "leader ..., high watermark"; Kafka: the
  LeaderState INFO line "High watermark set to ... for the first time");
- saturation: the highest rate at which, over the second half of the window,
  the leader's log and the best follower's log each hold >= 95 % of the
  records offered (doubling, then bisecting; runs.py says why that is the
  unbounded-backlog test);
- failover: kill -9 of the leader to the first commit of a new leader (median).

And, per row, the machine's replication floor (`kraft-replication-floor`):
three processes that replicate the same batches with nothing but a file, a
loopback socket and fsync each, the leader's fsync after the row's linger in
parallel with one follower's receive, append, fsync and answer; no Raft, no
Kafka protocol. A controller's distance to it is what the controller adds to
the bare replication on this machine.

Only the standard library; Python 3.11.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.dont_write_bytecode = True  # importing the sibling modules leaves no __pycache__ in the tree
sys.path.insert(0, str(Path(__file__).resolve().parent))
from clusters import Kafka, Ours  # noqa: E402
from common import fsync_floor, log  # noqa: E402
from report import comparability, linger_name, stage_table, text  # noqa: E402
from runs import effective_rate, failover_run, saturation_search, throughput_run  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("KRAFTWERK_CACHE", Path.home() / ".cache/kraftwerk"))


def loadavg() -> str:
    """The 1, 5 and 15 minute load averages (/proc/loadavg): the machine is shared, so every run says how busy
    it was."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def lingers(text: str) -> list[int | None]:
    """`default,0` -> [None, 0]: None leaves controller.quorum.append.linger.ms unset (25 ms)."""
    return [None if x.strip() == "default" else int(x) for x in text.split(",") if x.strip()]


# What a failed run raises: a node exited, no leader in time, a tool failed, no log.
RUN_ERRORS = (RuntimeError, TimeoutError, subprocess.CalledProcessError, StopIteration, OSError)
# A saturation probe waits this long for a leader's first commit (a row: 300 s).
PROBE_LEADER_TIMEOUT_S = 60


def floor_run(floor: Path, work: Path, rate: int, size: int, linger: int | None, duration: float) -> dict:
    """One run of the replication floor (its JSON line), the leader's fsync
    lingering as the row's (None: Kafka's default, 25 ms); RuntimeError with
    the tool's last error line when it fails, times out or prints no report."""
    argv = [str(floor), "--dir", str(work), "--rate", str(rate), "--record-size", str(size),
            "--duration-s", str(duration), "--leader-fsync-linger-ms", str(25 if linger is None else linger)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=duration + 60)
    except subprocess.TimeoutExpired as e:
        raise RuntimeError(f"kraft-replication-floor did not end within {duration + 60:.0f} s") from e
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        raise RuntimeError(f"kraft-replication-floor: {last}")
    try:
        r = json.loads(done.stdout.strip().splitlines()[-1])
        return {"p50": r["p50_ms"], "p75": r["p75_ms"], "p99": r["p99_ms"], "p999": r["p999_ms"],
                "max": r["max_ms"], "records": r["records"], "batches": r["batches"],
                "cpu_us_per_record": r["cpu_us_per_record"], "loadavg": loadavg()}
    except (IndexError, ValueError, KeyError) as e:
        raise RuntimeError(f"kraft-replication-floor printed no report: {done.stdout[-200:]!r}") from e


def guarded(run) -> dict:
    """`run()`, or `{"error": ...}` when it fails: one failed run is a row's
    finding, not the end of the benchmark."""
    try:
        return run()
    except RUN_ERRORS as e:
        log(f"  run failed: {e}")
        return {"error": str(e)[:500]}


def probe(system, rate: int, size: int, duration: float, controller: Path) -> dict:
    """One saturation probe; a failed run (e.g. no stable leader under the
    load) is a rate not sustained."""
    r = guarded(lambda: throughput_run(system, rate, size, duration, controller, PROBE_LEADER_TIMEOUT_S))
    if "error" in r:
        r.update(sustained=False, leader_half_per_sec=0.0, follower_half_per_sec=0.0, p99=None)
    return r


def save(out: Path, results: dict) -> None:
    """results.json as it stands (after every row and search), temp file + rename."""
    tmp = out / "results.json.tmp"
    tmp.write_text(json.dumps(results, indent=2, default=str))
    tmp.replace(out / "results.json")


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--controller", type=Path, required=True, help="the kraft-controller binary (release for figures)")
    ap.add_argument("--floor", type=Path, default=None,
                    help="the kraft-replication-floor binary (default: beside --controller; 'none' skips it)")
    ap.add_argument("--kafka-version", default="4.4.0", help="Kafka whose TestRaftServer runs (4.4.0; 4.1.2 kept)")
    ap.add_argument("--kafka-classpath-file", type=Path, default=None,
                    help="default: $KRAFTWERK_CACHE/kafka-<version>.classpath (make kafka-jars)")
    ap.add_argument("--log4j", type=Path, default=Path(__file__).with_name("log4j2.yaml"))
    ap.add_argument("--kafka-heap", default="-Xmx512m")
    ap.add_argument("--rates", default="1000,5000,20000", help="records/s of the rows")
    ap.add_argument("--record-sizes", default="256,4096", help="bytes per record of the rows")
    ap.add_argument("--lingers", default="default,0",
                    help="controller.quorum.append.linger.ms of the rows, for both systems ('default' = 25)")
    ap.add_argument("--max-mib-per-sec", type=float, default=32,
                    help="skip rows offering more (disk: 3 logs of rate x size x duration)")
    ap.add_argument("--duration", type=float, default=40,
                    help="seconds measured per row and system (at least 35: Kafka's rate meter reads low for its first 30 s window)")
    ap.add_argument("--saturation-sizes", default=None, help="record sizes searched (default: --record-sizes; '' for none)")
    ap.add_argument("--saturation-linger", default="default", help="the append linger of the search ('default' = 25)")
    ap.add_argument("--saturation-start", type=int, default=20000)
    ap.add_argument("--saturation-min-rate", type=int, default=1000)
    ap.add_argument("--saturation-max-rate", type=int, default=1_000_000)
    ap.add_argument("--saturation-max-mib-per-sec", type=float, default=96,
                    help="the search offers no more (a probe's three logs are deleted after it)")
    ap.add_argument("--saturation-steps", type=int, default=3, help="bisection steps after doubling")
    ap.add_argument("--saturation-duration", type=float, default=20, help="seconds per probe")
    ap.add_argument("--leader-timeout", type=float, default=300,
                    help="seconds a row waits for a leader's first commit before it is an error")
    ap.add_argument("--failovers", type=int, default=5, help="kill -9 rounds per system (0: none)")
    ap.add_argument("--systems", default="ours,kafka",
                    help="which systems run ('ours' alone: no JVM, e.g. to measure a change of ours; rows of one "
                         "system are not compared)")
    ap.add_argument("--failover-rate", type=int, default=1000)
    ap.add_argument("--workdir", type=Path, default=None, help="where the nodes' directories go (default: a temp dir)")
    ap.add_argument("--out", type=Path, default=None,
                    help="results.json and report.md go here (default target/bench/<UTC time>; target/bench/latest links to it)")
    ap.add_argument("--json", type=Path, default=None, help="also write the raw results here")
    return ap.parse_args()


def main() -> int:
    args = parse_args()
    classpath_file = args.kafka_classpath_file or CACHE / f"kafka-{args.kafka_version}.classpath"
    classpath = classpath_file.read_text().strip() if "kafka" in args.systems else ""
    controller = args.controller.resolve()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="kraftwerk-bench."))
    work.mkdir(parents=True, exist_ok=True)
    out = args.out or ROOT / "target/bench" / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    out.mkdir(parents=True, exist_ok=True)
    out = out.resolve()
    max_bytes = args.max_mib_per_sec * 1024 * 1024
    began = time.monotonic()

    wanted = {x.strip() for x in args.systems.split(",") if x.strip()}
    floor = None if str(args.floor) == "none" else (args.floor or controller.with_name("kraft-replication-floor"))
    if floor is not None and not floor.exists():
        raise SystemExit(f"bench: no replication floor binary at {floor} (cargo build --release -p kraft-controller)")

    def systems(linger):
        every = [Ours(work / "ours", linger, controller),
                 Kafka(work / "kafka", linger, args.kafka_version, classpath, args.log4j.resolve(), args.kafka_heap)]
        return [s for s in every if ("ours" if isinstance(s, Ours) else "kafka") in wanted]

    log(f"work dir {work}; output {out}; disk fsync floor")
    results: dict = {
        "meta": {"kafka_version": args.kafka_version, "controller": str(controller), "duration_s": args.duration,
                 "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "argv": sys.argv[1:]},
        "fsync_ms": fsync_floor(work), "rows": [], "skipped_rows": [], "saturation": {}, "failover_ms": {},
    }
    for size in ints(args.record_sizes):
        for linger in lingers(args.lingers):
            for rate in ints(args.rates):
                if rate * size > max_bytes:
                    log(f"skipping {rate}/s of {size} B: over --max-mib-per-sec {args.max_mib_per_sec}")
                    results["skipped_rows"].append({"record_size": size, "linger_ms": linger, "rate": rate})
                    continue
                row = {"record_size": size, "linger_ms": linger, "rate": rate, "systems": {}}
                for system in systems(linger):
                    log(f"load average before: {loadavg()}")
                    log(f"{system.name}: {rate} records/s of {size} B, linger {linger_name(linger)} ms, "
                        f"{args.duration:.0f} s")
                    r = guarded(lambda s=system: throughput_run(s, rate, size, args.duration, controller,
                                                                 args.leader_timeout))
                    row["systems"][system.name] = r
                    r["loadavg"] = loadavg()
                    log(f"  {r}")
                    if r.get("stages"):
                        log("  where the commit latency goes (ms from the batch's append):\n"
                            + "\n".join(stage_table(r["stages"])))
                if floor is not None:
                    log(f"replication floor: {rate} records/s of {size} B, leader fsync linger "
                        f"{linger_name(linger)} ms, {args.duration:.0f} s")
                    row["floor"] = guarded(lambda: floor_run(floor, work / "floor", rate, size, linger,
                                                             args.duration))
                    log(f"  {row['floor']}")
                row["comparable"], row["why"] = comparability(row["systems"])
                results["rows"].append(row)
                save(out, results)

    sizes = ints(args.record_sizes if args.saturation_sizes is None else args.saturation_sizes)
    sat_linger = lingers(args.saturation_linger)[0]
    for size in sizes:
        results["saturation"][size] = {}
        for system in systems(sat_linger):
            entry: dict
            if isinstance(system, Kafka) and not system.honours_workload_flags():
                entry = {"skipped": f"Kafka {args.kafka_version} ignores --throughput "
                                    f"(always {effective_rate(system, 0)} records/s)"}
            else:
                sat_bytes = args.saturation_max_mib_per_sec * 1024 * 1024
                max_rate = max(args.saturation_min_rate, min(args.saturation_max_rate, int(sat_bytes // size)))
                log(f"{system.name}: saturation search, {size} B records, up to {max_rate}/s")
                entry = saturation_search(
                    lambda rate, s=system: probe(s, rate, size, args.saturation_duration, controller),
                    args.saturation_start, max_rate, args.saturation_min_rate, args.saturation_steps)
            entry["linger_ms"] = sat_linger
            results["saturation"][size][system.name] = entry
            save(out, results)

    for system in systems(None) if args.failovers > 0 else []:
        log(f"{system.name}: {args.failovers} failovers")
        try:
            results["failover_ms"][system.name] = failover_run(system, args.failovers, args.failover_rate,
                                                               ints(args.record_sizes)[0])
        except RUN_ERRORS as e:
            log(f"  {system.name}: failovers failed: {e}")
            results["failover_errors"] = {**results.get("failover_errors", {}), system.name: str(e)[:500]}
    results["meta"]["total_s"] = time.monotonic() - began

    report = text(results)
    print(report)
    print(f"total {results['meta']['total_s']:.0f} s; work dir {work}; output {out}")
    save(out, results)
    (out / "report.md").write_text(report)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))
    latest = out.parent / "latest"
    if out.parent == ROOT / "target/bench":
        latest.unlink(missing_ok=True)
        latest.symlink_to(out.name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
