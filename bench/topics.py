#!/usr/bin/env python3
"""Topic churn side by side (issue 17): 1,000 topics x 3 partitions created and
deleted through one Kafka broker, on three of our controllers and on three of
Kafka's own, in one run. Kafka's Admin client does the work
(bench/TopicsBench.java, run by Java's source launcher); this script starts
the servers, samples the controllers' RSS (VmRSS, every 0.25 s) and prints one
table. Python 3.11, standard library only; helpers shared with bench/bench.py.

    python3 bench/topics.py --controller target/release/kraft-controller \\
        --kafka-version 4.1.2 [--topics 1000 --partitions 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.dont_write_bytecode = True  # importing common.py leaves no __pycache__ in the tree
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import free_ports, log, proc_rss_mib, wait_for  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RUN_CLASS = ROOT / "tests/kafka/kafka-run-class"
SERVER_LOG4J = ROOT / "tests/kafka/log4j2-server.yaml"
CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qk"
DIR_IDS = ["LaBaIMiMRmy8YSD1cAd8Ew", "q6CGIHGkTStroizn5hrLMg", "Ww7qv0dqTt2yo2vBmEyd3A"]
BROKER_ID = 11


def kafka_env(version: str, heap: str) -> dict:
    env = dict(os.environ)
    env.update(KAFKA_VERSION=version, KAFKA_HEAP_OPTS=heap, KAFKA_LOG4J_CONFIG=str(SERVER_LOG4J))
    return env


class System:
    """Three controllers (ours or Kafka's) and one Kafka broker in `work`."""

    def __init__(self, kind: str, work: Path, controller: Path, version: str):
        self.kind, self.work, self.controller, self.version = kind, work, controller, version
        ports = free_ports(7)
        self.cports, self.bport, self.http = ports[:3], ports[3], ports[4:]
        self.bootstrap = ",".join(f"127.0.0.1:{p}" for p in self.cports)
        self.initial = ",".join(f"{i}@127.0.0.1:{p}:{d}" for i, p, d in zip((1, 2, 3), self.cports, DIR_IDS))
        self.procs: dict[int, subprocess.Popen] = {}

    def _props(self, name: str, text: str) -> Path:
        path = self.work / f"{name}.properties"
        path.write_text(text + f"log.dirs={self.work / name}\nmetadata.log.dir={self.work / name}\n")
        return path

    def start(self) -> None:
        for i, port, http in zip((1, 2, 3), self.cports, self.http):
            # Ours serves /metrics on kraftwerk.http.listener (default 127.0.0.1:0, a port the OS picks).
            http_line = f"kraftwerk.http.listener=127.0.0.1:{http}\n" if self.kind == "ours" else ""
            cfg = self._props(
                f"c{i}",
                f"process.roles=controller\nnode.id={i}\ncontroller.listener.names=CONTROLLER\n"
                f"listeners=CONTROLLER://127.0.0.1:{port}\nlistener.security.protocol.map=CONTROLLER:PLAINTEXT\n"
                f"controller.quorum.bootstrap.servers={self.bootstrap}\n{http_line}",
            )
            fmt = ["format", "--config", str(cfg), "--cluster-id", CLUSTER_ID, "--initial-controllers", self.initial]
            out = open(self.work / f"c{i}.log", "w")
            if self.kind == "ours":
                subprocess.run([self.controller, *fmt], check=True, capture_output=True)
                self.procs[i] = subprocess.Popen([self.controller, "run", "--config", cfg], stdout=out, stderr=out)
            else:
                env = kafka_env(self.version, "-Xmx512m")
                subprocess.run([RUN_CLASS, "kafka.tools.StorageTool", *fmt], check=True, capture_output=True, env=env)
                self.procs[i] = subprocess.Popen([RUN_CLASS, "kafka.Kafka", cfg], stdout=out, stderr=out, env=env)
        bcfg = self._props(
            "broker",
            f"process.roles=broker\nnode.id={BROKER_ID}\nlisteners=PLAINTEXT://127.0.0.1:{self.bport}\n"
            "inter.broker.listener.name=PLAINTEXT\ncontroller.listener.names=CONTROLLER\n"
            "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT\n"
            f"controller.quorum.bootstrap.servers={self.bootstrap}\noffsets.topic.num.partitions=1\n"
            "offsets.topic.replication.factor=1\n",
        )
        env = kafka_env(self.version, "-Xmx768m")
        subprocess.run([RUN_CLASS, "kafka.tools.StorageTool", "format", "--config", str(bcfg), "--cluster-id",
                        CLUSTER_ID], check=True, capture_output=True, env=env)
        self.blog = self.work / "broker.log"
        out = open(self.blog, "w")
        self.broker = subprocess.Popen([RUN_CLASS, "kafka.Kafka", bcfg], stdout=out, stderr=out, env=env)
        def running():
            for i, p in [*self.procs.items(), ("broker", self.broker)]:
                if p.poll() is not None:
                    raise RuntimeError(f"{self.kind}: {i} exited ({p.returncode}); see {self.work}")
            return True if "Transitioning from RECOVERY to RUNNING" in self.blog.read_text() else None

        wait_for("the broker to be RUNNING", running, 180, 0.25)

    def leader(self) -> int | None:
        for port in self.cports:
            r = subprocess.run([self.controller, "quorum", "--bootstrap-controller", f"127.0.0.1:{port}",
                                "--timeout-ms", "2000", "describe", "--status"], capture_output=True, text=True)
            for line in r.stdout.splitlines():
                if line.startswith("LeaderId:") and line.split(":")[1].strip() not in ("", "-1"):
                    return int(line.split(":")[1])
        return None

    def stop(self) -> None:
        for p in [self.broker, *self.procs.values()]:
            p.kill()
            p.wait()


def run(kind: str, args, work: Path) -> dict:
    system = System(kind, work, args.controller, args.kafka_version)
    t0 = time.monotonic()
    try:
        system.start()
        started = time.monotonic() - t0
        leader = wait_for("a controller leader", system.leader, 60, 0.5)
        pid = system.procs[leader].pid
        idle = proc_rss_mib(pid)
        peak = [idle]
        done = threading.Event()

        def sample():
            while not done.wait(0.25):
                peak.append(proc_rss_mib(pid))

        sampler = threading.Thread(target=sample)
        sampler.start()
        cp = (Path(os.environ.get("KRAFTWERK_CACHE", Path.home() / ".cache/kraftwerk"))
              / f"kafka-{args.kafka_version}.classpath").read_text().strip()
        log(f"{kind}: {args.topics} topics x {args.partitions} partitions through broker {BROKER_ID}")
        r = subprocess.run(["java", "-Xmx512m", "-cp", cp, str(ROOT / "bench/TopicsBench.java"),
                            f"127.0.0.1:{system.bport}", str(args.topics), str(args.partitions), "1",
                            str(args.batch)], capture_output=True, text=True, timeout=1800)
        done.set()
        sampler.join()
        if r.returncode != 0:
            raise RuntimeError(f"TopicsBench failed on {kind}:\n{r.stderr[-3000:]}")
        figures = json.loads(r.stdout.strip().splitlines()[-1])
        figures.update(system=kind, start_s=started, leader=leader, rss_idle_mib=idle,
                       rss_peak_mib=max(x for x in peak if x == x), rss_end_mib=proc_rss_mib(pid))
        return figures
    finally:
        system.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--controller", type=Path, required=True)
    ap.add_argument("--kafka-version", default="4.1.2")
    ap.add_argument("--topics", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--batch", type=int, default=100, help="topics per CreateTopics/DeleteTopics request")
    ap.add_argument("--systems", default="ours,kafka", help="which controllers, in order (ours, kafka)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    results = []
    for kind in args.systems.split(","):
        with tempfile.TemporaryDirectory(prefix=f"bench-topics-{kind}-") as work:
            results.append(run(kind, args, Path(work)))
    print(f"\n{args.topics} topics x {args.partitions} partitions (RF 1), one Kafka {args.kafka_version} broker, "
          f"Admin requests of {args.batch} topics")
    print(f"{'controllers':<12} {'create s':>9} {'all led s':>10} {'delete s':>9} {'all gone s':>11} "
          f"{'RSS idle MiB':>13} {'RSS peak MiB':>13} {'RSS end MiB':>12}")
    for r in results:
        print(f"{r['system']:<12} {r['create_ms'] / 1000:>9.1f} {r['all_led_ms'] / 1000:>10.1f} "
              f"{r['delete_ms'] / 1000:>9.1f} {r['all_gone_ms'] / 1000:>11.1f} {r['rss_idle_mib']:>13.0f} "
              f"{r['rss_peak_mib']:>13.0f} {r['rss_end_mib']:>12.0f}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
