"""The two systems under test, three voters each on loopback: our
`kraft-controller run --workload-throughput` and Apache Kafka's
`kafka.tools.TestRaftServer` (4.4.0 by default, 4.1.2 on request).

Owns formatting, starting and killing the nodes and reading what each system
says about itself (leader, commit latency, committed rate). Decides nothing
about what a run measures (runs.py) or how rows compare (report.py).
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

from common import free_ports, proc_cpu_s, proc_rss_mib

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"
DIR_IDS = ["Yn6jBgNWRcWUqv7Dz5TlZQ", "bkIhY8PmQGiDnQJRUm2Rjg", "mS3ioBlXSyuHHyHmDiw2OA"]
NODES = [1, 2, 3]
# Kafka 4.1.2's TestRaftServer builds its RaftWorkloadGenerator with these
# constants whatever --throughput and --record-size say (javap -c of
# kafka.tools.TestRaftServer in kafka_2.13-4.1.2.jar: `sipush 20000`, `sipush
# 256`); 4.4.0 passes the flags through (`throughput()`, `recordSize()`).
KAFKA_412_RATE = 20000
KAFKA_412_RECORD_SIZE = 256


class Cluster:
    """Three nodes of one system in `work`; subclasses say how to run them.

    `linger_ms` is `controller.quorum.append.linger.ms` for both systems
    (None: the default, 25 ms); our controller reads the same property (its
    leader's flush waits that long after an append, Kafka's accumulator
    holds the append that long before writing it)."""

    name = ""
    short = ""

    def __init__(self, work: Path, linger_ms: int | None):
        self.work = work
        self.linger_ms = linger_ms
        self.ports = dict(zip(NODES, free_ports(len(NODES))))
        self.procs: dict[int, subprocess.Popen] = {}

    def dir(self, n: int) -> Path:
        return self.work / f"node-{n}"

    def static_voters(self) -> str:
        """`controller.quorum.voters`: both systems run a static 3-voter quorum
        (kraft.version 0), the same Raft path for both."""
        return ",".join(f"{n}@127.0.0.1:{self.ports[n]}" for n in NODES)

    def linger_line(self) -> str:
        return "" if self.linger_ms is None else f"controller.quorum.append.linger.ms={self.linger_ms}\n"

    def start_all(self, rate: int, record_size: int) -> None:
        for n in NODES:
            self.start(n, rate, record_size)

    def start(self, n: int, rate: int, record_size: int) -> None:
        with open(self.work / f"node-{n}.out", "ab") as out, open(self.work / f"node-{n}.err", "ab") as err:
            self.procs[n] = subprocess.Popen(self.command(n, rate, record_size), stdout=out, stderr=err)

    def kill(self, n: int) -> None:
        p = self.procs.pop(n, None)
        if p is not None:
            p.send_signal(signal.SIGKILL)
            p.wait()

    def stop_all(self, last: int | None = None) -> None:
        """kill -9 of every node, `last` (the leader) after the others, so
        that the followers' logs stop growing before the leader's does."""
        for n in sorted(self.procs, key=lambda n: n == last):
            self.kill(n)

    def usage(self) -> dict[int, tuple[float, float]]:
        """node -> (RSS MiB, CPU s) now."""
        return {n: (proc_rss_mib(p.pid), proc_cpu_s(p.pid)) for n, p in self.procs.items()}

    def check_alive(self) -> None:
        for n, p in self.procs.items():
            if p.poll() is not None:
                tail = (self.work / f"node-{n}.err").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"{self.name} node {n} exited with {p.returncode}:\n{tail}")

    def partition_dir(self, n: int) -> Path:
        return next(self.dir(n).glob("*-0"))

    # Subclasses: format(), command(n, rate, size), committed_leader(min_epoch)
    # -> (node, epoch) of a leader that committed in an epoch >= min_epoch, or
    # None; results(leader, size) -> dict with p50/p75/p99/p999 (ms, None when
    # not reported), records_per_sec (committed, self-reported).


class Ours(Cluster):
    name = "kraft-controller"
    short = "ours"

    def __init__(self, work: Path, linger_ms: int | None, binary: Path):
        super().__init__(work, linger_ms)
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
                + self.linger_line()
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

    def results(self, leader: int, record_size: int) -> dict:
        answer = self.get(leader, "/workload")
        if answer is None or answer[0] != 200:
            raise RuntimeError(f"GET /workload on node {leader} failed: {answer}")
        r = json.loads(answer[1])
        return {"p50": r["p50_ms"], "p75": r["p75_ms"], "p99": r["p99_ms"], "p999": r["p999_ms"],
                "max": r["max_ms"], "records_per_sec": r["records_per_sec"],
                "appended": r["appended"], "committed": r["committed"],
                # Where the commit latency goes, per batch (issue 23); absent from older binaries.
                "stages": r.get("stages", []), "stages_dropped": r.get("stages_dropped", 0)}


class Kafka(Cluster):
    STATS = re.compile(
        r"Throughput \(bytes/second\): ([\d.]+), Latency \(ms\): ([\d.]+) p75 ([\d.]+) p99 ([\d.]+) p999")
    HW = re.compile(r"High watermark set to .* for the first time for epoch (\d+) based on")

    def __init__(self, work: Path, linger_ms: int | None, version: str, classpath: str, log4j: Path,
                 heap: str):
        super().__init__(work, linger_ms)
        self.version = version
        self.name = f"Kafka {version} TestRaftServer"
        self.short = f"kafka-{version}"
        self.java = [shutil.which("java") or "java", heap, f"-Dlog4j2.configurationFile={log4j}",
                     "-cp", classpath]

    def honours_workload_flags(self) -> bool:
        """False for 4.1.x, whose TestRaftServer ignores --throughput and
        --record-size (20 000 records/s of 256 B, always)."""
        return not self.version.startswith("4.1.")

    def properties(self, n: int) -> Path:
        return self.work / f"kafka-{n}.properties"

    def format(self) -> None:
        for n in NODES:
            self.properties(n).write_text(
                f"process.roles=controller\nnode.id={n}\ncontroller.listener.names=CONTROLLER\n"
                f"listeners=CONTROLLER://127.0.0.1:{self.ports[n]}\n"
                f"controller.quorum.voters={self.static_voters()}\n"
                f"log.dirs={self.dir(n)}\nmetadata.log.dir={self.dir(n)}\n"
                + self.linger_line()
            )
            subprocess.run(
                self.java + ["kafka.tools.StorageTool", "format", "--config", str(self.properties(n)),
                             "--cluster-id", CLUSTER_ID],
                check=True, stdout=subprocess.DEVNULL,
            )

    def gc_log(self, n: int) -> Path:
        return self.work / f"gc-{n}.log"

    def command(self, n: int, rate: int, record_size: int) -> list:
        # Every collection with its pause, wall-clock stamped, so that the
        # pauses inside a measured window can be counted (gc_pauses).
        gc = f"-Xlog:gc:file={self.gc_log(n)}:utctime"
        return self.java[:1] + [gc] + self.java[1:] + ["kafka.tools.TestRaftServer", "--config", str(self.properties(n)),
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

    GC_PAUSE = re.compile(r"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})([+-]\d{4})\].*\bPause\b.* ([\d.]+)ms$")

    def gc_pauses(self, n: int, t0_ms: float, t1_ms: float) -> dict:
        """The stop-the-world pauses node `n`'s JVM logged (`-Xlog:gc`) that
        ended between wall-clock times `t0_ms` and `t1_ms`: count, total and
        longest (ms). Evidence for or against GC behind Kafka's commit p99."""
        from datetime import datetime

        pauses = []
        try:
            lines = self.gc_log(n).read_text(errors="replace").splitlines()
        except OSError:
            lines = []
        for line in lines:
            m = self.GC_PAUSE.match(line)
            if not m:
                continue
            at = datetime.strptime(m.group(1) + m.group(2), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp() * 1000
            if t0_ms <= at < t1_ms:
                pauses.append(float(m.group(3)))
        return {"count": len(pauses), "total_ms": sum(pauses), "max_ms": max(pauses, default=0.0)}

    def results(self, leader: int, record_size: int) -> dict:
        """Kafka's last statistics line (its own windowed meter and
        histogram: 0.25 ms buckets up to 250 ms, no p50)."""
        text = (self.work / f"node-{leader}.out").read_text(errors="replace")
        found = self.STATS.findall(text)
        if not found:
            raise RuntimeError(f"no statistics line from Kafka node {leader}")
        bps, p75, p99, p999 = (float(x) for x in found[-1])
        size = record_size if self.honours_workload_flags() else KAFKA_412_RECORD_SIZE
        return {"p50": None, "p75": p75, "p99": p99, "p999": p999, "max": None,
                "records_per_sec": bps / size, "bytes_per_sec": bps}
