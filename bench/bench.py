#!/usr/bin/env python3
"""Side-by-side benchmark of kraft-controller and Apache Kafka's KRaft.

Runs, on loopback, a 3-voter quorum of our controller (`run --workload-throughput`)
and a 3-voter quorum of Kafka's `kafka.tools.TestRaftServer` (same jars as the
interop tests), alternately, at each rate; then kills the leader of each 5 times;
measures the disk's own fsync latency in the same run; prints one table.

What is measured, for both systems the same way:
- append-to-commit latency percentiles and committed throughput, as the leader
  reports them (ours: `GET /workload`; Kafka: the last `Throughput (bytes/second)`
  line TestRaftServer prints; Kafka prints no p50);
- RSS (VmRSS) and CPU seconds (utime+stime) of each node from /proc at the end;
- start-to-leader: from the first process spawned to a leader's first commit in
  its epoch (ours: `/readyz` says "leader ..., high watermark"; Kafka: the
  LeaderState INFO line "High watermark set to ... for the first time");
- failover: kill -9 of the leader to the first commit of a new leader (median).

Only the standard library; Python 3.11.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"
DIR_IDS = ["Yn6jBgNWRcWUqv7Dz5TlZQ", "bkIhY8PmQGiDnQJRUm2Rjg", "mS3ioBlXSyuHHyHmDiw2OA"]
NODES = [1, 2, 3]
CLK_TCK = os.sysconf("SC_CLK_TCK")


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def proc_rss_mib(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def proc_cpu_s(pid: int) -> float:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return float("nan")
    fields = stat[stat.rindex(")") + 2 :].split()
    # fields[0] is field 3 (state); utime is field 14, stime field 15.
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def free_ports(count: int) -> list[int]:
    """Ports the kernel says are free now (bound to port 0, then released)."""
    import socket

    socks = [socket.socket() for _ in range(count)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def wait_for(what: str, fn, timeout_s: float, interval_s: float = 0.01):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = fn()
        if value is not None:
            return value
        time.sleep(interval_s)
    raise TimeoutError(f"timed out after {timeout_s:.0f} s waiting for {what}")


BATCH = re.compile(r"^batch base_offset=\d+ last_offset=\d+ count=(\d+) epoch=(\d+) control=(\w+) .* timestamp=(\d+)$")


def log_rate(controller: Path, partition_dir: Path, epoch: int, t0_ms: float, t1_ms: float) -> float:
    """Records per second the leader appended in `epoch` between wall-clock
    times `t0_ms` and `t1_ms`, counted from its log on disk by `kraft-controller
    dump-log` (which reads Kafka's segments as well as ours): the same measure
    for both systems, independent of what each one reports about itself. Data
    batches only; a batch counts when its timestamp (the leader's append time)
    is inside the window."""
    count = 0
    with subprocess.Popen([controller, "dump-log", partition_dir], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True) as p:
        assert p.stdout is not None
        for line in p.stdout:
            m = BATCH.match(line)
            if m and m.group(3) == "false" and int(m.group(2)) == epoch and t0_ms <= int(m.group(4)) < t1_ms:
                count += int(m.group(1))
    return count / ((t1_ms - t0_ms) / 1000)


def fsync_floor(directory: Path, count: int = 500) -> dict:
    """The disk's own fsync latency: append 256 bytes and fsync, `count` times."""
    path = directory / "fsync-probe"
    samples = []
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        payload = b"\0" * 256
        for _ in range(count):
            os.write(fd, payload)
            t0 = time.perf_counter()
            os.fsync(fd)
            samples.append((time.perf_counter() - t0) * 1000)
    finally:
        os.close(fd)
        path.unlink(missing_ok=True)
    samples.sort()
    pick = lambda q: samples[min(len(samples) - 1, max(0, int(q / 100 * len(samples) + 0.999) - 1))]
    return {"p50": pick(50), "p99": pick(99), "p999": pick(99.9)}


class Cluster:
    """Three nodes of one system in `work`; subclasses say how to run them."""

    name = ""

    def __init__(self, work: Path):
        self.work = work
        self.ports = dict(zip(NODES, free_ports(len(NODES))))
        self.procs: dict[int, subprocess.Popen] = {}
        self.started_at = 0.0

    def dir(self, n: int) -> Path:
        return self.work / f"node-{n}"

    def static_voters(self) -> str:
        """`controller.quorum.voters`: both systems run a static 3-voter quorum
        (kraft.version 0), the same Raft path for both."""
        return ",".join(f"{n}@127.0.0.1:{self.ports[n]}" for n in NODES)

    def start_all(self, rate: int, record_size: int) -> None:
        self.started_at = time.monotonic()
        for n in NODES:
            self.start(n, rate, record_size)

    def start(self, n: int, rate: int, record_size: int) -> None:
        out = open(self.work / f"node-{n}.out", "ab")
        err = open(self.work / f"node-{n}.err", "ab")
        self.procs[n] = subprocess.Popen(self.command(n, rate, record_size), stdout=out, stderr=err)

    def kill(self, n: int) -> None:
        p = self.procs.pop(n, None)
        if p is not None:
            p.send_signal(signal.SIGKILL)
            p.wait()

    def stop_all(self) -> None:
        for n in list(self.procs):
            self.kill(n)

    def usage(self) -> dict[int, tuple[float, float]]:
        return {n: (proc_rss_mib(p.pid), proc_cpu_s(p.pid)) for n, p in self.procs.items()}

    def check_alive(self) -> None:
        for n, p in self.procs.items():
            if p.poll() is not None:
                tail = (self.work / f"node-{n}.err").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"{self.name} node {n} exited with {p.returncode}:\n{tail}")

    # Subclasses: format(), command(n, rate, size), committed_leader(min_epoch)
    # -> (node, epoch) of a leader that committed in an epoch >= min_epoch, or None;
    # results(leader) -> dict with p50/p75/p99/p999 (ms) and records_per_sec.


class Ours(Cluster):
    name = "kraft-controller"

    def __init__(self, work: Path, binary: Path):
        super().__init__(work)
        self.binary = binary
        self.http = dict(zip(NODES, free_ports(len(NODES))))

    def properties(self, n: int) -> Path:
        return self.work / f"node-{n}.properties"

    def format(self) -> None:
        for n in NODES:
            self.properties(n).write_text(
                f"node.id={n}\nprocess.roles=controller\nmetadata.log.dir={self.dir(n)}\n"
                f"controller.quorum.voters={self.static_voters()}\n"
                "controller.listener.names=CONTROLLER\n"
                f"listeners=CONTROLLER://127.0.0.1:{self.ports[n]}\n"
                f"advertised.listeners=CONTROLLER://127.0.0.1:{self.ports[n]}\n"
                f"kraftwerk.http.listener=127.0.0.1:{self.http[n]}\n"
            )
            subprocess.run(
                [self.binary, "format", "--config", self.properties(n), "--cluster-id", CLUSTER_ID,
                 "--directory-id", DIR_IDS[n - 1], "--no-initial-controllers"],
                check=True, stdout=subprocess.DEVNULL,
            )

    def command(self, n: int, rate: int, record_size: int) -> list:
        return [self.binary, "run", "--config", self.properties(n), "--workload-throughput", str(rate),
                "--workload-record-size", str(record_size)]

    def get(self, n: int, path: str) -> tuple[int, str] | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.http[n]}{path}", timeout=1) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()
        except OSError:
            return None

    def committed_leader(self, min_epoch: int):
        for n in self.procs:
            answer = self.get(n, "/readyz")
            if answer and answer[0] == 200:
                m = re.match(r"leader in epoch (\d+), high watermark", answer[1])
                if m and int(m.group(1)) >= min_epoch:
                    return n, int(m.group(1))
        return None

    def results(self, leader: int) -> dict:
        answer = self.get(leader, "/workload")
        if answer is None or answer[0] != 200:
            raise RuntimeError(f"GET /workload on node {leader} failed: {answer}")
        r = json.loads(answer[1])
        return {"p50": r["p50_ms"], "p75": r["p75_ms"], "p99": r["p99_ms"], "p999": r["p999_ms"],
                "records_per_sec": r["records_per_sec"]}


class Kafka(Cluster):
    name = "Kafka 4.1 TestRaftServer"
    STATS = re.compile(
        r"Throughput \(bytes/second\): ([\d.]+), Latency \(ms\): ([\d.]+) p75 ([\d.]+) p99 ([\d.]+) p999")
    HW = re.compile(r"High watermark set to .* for the first time for epoch (\d+) based on")

    def __init__(self, work: Path, classpath: str, log4j: Path, heap: str):
        super().__init__(work)
        self.java = [shutil.which("java") or "java", heap, f"-Dlog4j2.configurationFile={log4j}",
                     "-cp", classpath]

    def properties(self, n: int) -> Path:
        return self.work / f"kafka-{n}.properties"

    def format(self) -> None:
        for n in NODES:
            self.properties(n).write_text(
                f"process.roles=controller\nnode.id={n}\ncontroller.listener.names=CONTROLLER\n"
                f"listeners=CONTROLLER://127.0.0.1:{self.ports[n]}\n"
                f"controller.quorum.voters={self.static_voters()}\n"
                f"log.dirs={self.dir(n)}\nmetadata.log.dir={self.dir(n)}\n"
            )
            subprocess.run(
                self.java + ["kafka.tools.StorageTool", "format", "--config", str(self.properties(n)),
                             "--cluster-id", CLUSTER_ID],
                check=True, stdout=subprocess.DEVNULL,
            )

    def command(self, n: int, rate: int, record_size: int) -> list:
        return self.java + ["kafka.tools.TestRaftServer", "--config", str(self.properties(n)),
                            "--throughput", str(rate), "--record-size", str(record_size),
                            "--replica-directory-id", DIR_IDS[n - 1]]

    def committed_leader(self, min_epoch: int):
        best = None
        for n in self.procs:
            text = (self.work / f"node-{n}.err").read_text(errors="replace")
            for m in self.HW.finditer(text):
                epoch = int(m.group(1))
                if epoch >= min_epoch and (best is None or epoch > best[1]):
                    best = (n, epoch)
        return best

    def results(self, leader: int) -> dict:
        text = (self.work / f"node-{leader}.out").read_text(errors="replace")
        found = self.STATS.findall(text)
        if not found:
            raise RuntimeError(f"no statistics line from Kafka node {leader}")
        bps, p75, p99, p999 = (float(x) for x in found[-1])
        return {"p50": None, "p75": p75, "p99": p99, "p999": p999, "records_per_sec": None, "bytes_per_sec": bps}


def throughput_run(cluster: Cluster, rate: int, size: int, duration: float, controller_binary: Path) -> dict:
    shutil.rmtree(cluster.work, ignore_errors=True)
    cluster.work.mkdir(parents=True)
    cluster.format()
    cluster.start_all(rate, size)
    try:
        def leader():
            cluster.check_alive()
            return cluster.committed_leader(0)
        node, epoch = wait_for(f"a {cluster.name} leader", leader, 300)
        start_to_leader = time.monotonic() - cluster.started_at
        t0_ms = time.time() * 1000
        time.sleep(duration)
        t1_ms = time.time() * 1000
        cluster.check_alive()
        result = cluster.results(node)
        if result.get("records_per_sec") is None:
            result["records_per_sec"] = result["bytes_per_sec"] / size
        usage = cluster.usage()
        result["leader"] = node
        result["rss_leader"], result["cpu_leader"] = usage[node]
        followers = [usage[n] for n in usage if n != node]
        result["rss_follower"] = max(u[0] for u in followers)
        result["cpu_follower"] = max(u[1] for u in followers)
        result["start_to_leader_s"] = start_to_leader
        cluster.stop_all()
        partition = next(cluster.dir(node).glob("*-0"))
        result["log_records_per_sec"] = log_rate(controller_binary, partition, epoch, t0_ms, t1_ms)
        return result
    finally:
        cluster.stop_all()


def failover_run(cluster: Cluster, rounds: int, rate: int, size: int) -> list[float]:
    shutil.rmtree(cluster.work, ignore_errors=True)
    cluster.work.mkdir(parents=True)
    cluster.format()
    cluster.start_all(rate, size)
    times = []
    try:
        node, epoch = wait_for(f"a {cluster.name} leader", lambda: cluster.committed_leader(0), 300)
        for i in range(rounds):
            time.sleep(2)  # let the followers catch up with the workload
            t0 = time.monotonic()
            cluster.kill(node)
            new, new_epoch = wait_for(f"a new {cluster.name} leader", lambda: cluster.committed_leader(epoch + 1), 60, 0.005)
            times.append((time.monotonic() - t0) * 1000)
            log(f"{cluster.name}: failover {i + 1}: node {node} killed, node {new} leads epoch {new_epoch} "
                f"after {times[-1]:.0f} ms")
            cluster.start(node, rate, size)  # back as a follower for the next round
            node, epoch = new, new_epoch
        return times
    finally:
        cluster.stop_all()


def fmt(x, digits=1) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--controller", type=Path, required=True, help="the release kraft-controller binary")
    ap.add_argument("--kafka-classpath-file", type=Path, required=True)
    ap.add_argument("--log4j", type=Path, default=Path(__file__).with_name("log4j2.yaml"))
    ap.add_argument("--kafka-heap", default="-Xmx512m")
    ap.add_argument("--rates", default="1000,5000,20000")
    ap.add_argument("--record-size", type=int, default=256)
    ap.add_argument("--duration", type=float, default=40,
                    help="seconds measured per rate and system (at least 35: Kafka's rate meter reads low for its first 30 s window)")
    ap.add_argument("--failovers", type=int, default=5)
    ap.add_argument("--failover-rate", type=int, default=1000)
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None, help="also write the raw results here")
    args = ap.parse_args()

    work = args.workdir or Path(tempfile.mkdtemp(prefix="kraftwerk-bench."))
    work.mkdir(parents=True, exist_ok=True)
    classpath = args.kafka_classpath_file.read_text().strip()
    ours = Ours(work / "ours", args.controller.resolve())
    kafka = Kafka(work / "kafka", classpath, args.log4j.resolve(), args.kafka_heap)
    systems = [ours, kafka]
    began = time.monotonic()

    log(f"work dir {work}; disk fsync floor")
    floor = fsync_floor(work)
    results: dict = {"fsync_ms": floor, "rates": {}, "failover_ms": {}}
    for rate in (int(r) for r in args.rates.split(",")):
        for system in systems:
            log(f"{system.name}: {rate} records/s of {args.record_size} B for {args.duration:.0f} s")
            r = throughput_run(system, rate, args.record_size, args.duration, args.controller.resolve())
            results["rates"].setdefault(rate, {})[system.name] = r
            log(f"  {r}")
    for system in systems:
        log(f"{system.name}: {args.failovers} failovers")
        results["failover_ms"][system.name] = failover_run(system, args.failovers, args.failover_rate,
                                                           args.record_size)

    rows = []
    head = ["system", "rate/s", "log rec/s", "self-reported/s", "p50 ms", "p75 ms", "p99 ms", "p99.9 ms",
            "RSS MiB ldr/fol", "CPU s ldr/fol", "start→leader s"]
    for rate, by_system in results["rates"].items():
        for name, r in by_system.items():
            rows.append([name, str(rate), fmt(r["log_records_per_sec"], 0), fmt(r["records_per_sec"], 0), fmt(r["p50"]), fmt(r["p75"]),
                         fmt(r["p99"]), fmt(r["p999"]),
                         f"{r['rss_leader']:.0f}/{r['rss_follower']:.0f}",
                         f"{r['cpu_leader']:.1f}/{r['cpu_follower']:.1f}",
                         fmt(r["start_to_leader_s"], 2)])
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(head)]
    line = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"
    print(line(head))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in rows:
        print(line(row))
    print()
    for name, times in results["failover_ms"].items():
        print(f"failover ({name}): kill -9 of the leader to a new leader's first commit: "
              f"median {statistics.median(times):.0f} ms of {len(times)} ({', '.join(f'{t:.0f}' for t in times)})")
    print(f"disk fsync floor (256 B append + fsync, 500 times): p50 {floor['p50']:.2f} ms, "
          f"p99 {floor['p99']:.2f} ms, p99.9 {floor['p999']:.2f} ms")
    print(f"total {time.monotonic() - began:.0f} s; work dir {work}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
