#!/usr/bin/env python3
"""Topic churn side by side (issue 17): 1,000 topics x 3 partitions created and
deleted through one Kafka broker, on three of our controllers and on three of
Kafka's own, in one run. Kafka's Admin client does the work
(bench/TopicsBench.java, run by Java's source launcher); this script starts
the servers, samples the controllers' RSS (VmRSS, every 0.25 s) and prints one
table. Python 3.11, standard library only; helpers shared with bench/bench.py.

    python3 bench/topics.py --controller target/release/kraft-controller \\
        --kafka-version 4.4.0 [--topics 1000 --partitions 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.dont_write_bytecode = True  # importing common.py leaves no __pycache__ in the tree
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RssSampler, log, proc_rss_mib, wait_for  # noqa: E402

from controllers import CLUSTER_ID, ROOT, RUN_CLASS, Controllers, kafka_env  # noqa: E402

BROKER_ID = 11


class System(Controllers):
    """Three controllers (ours or Kafka's, bench/controllers.py) and one Kafka broker in `work`."""

    def __init__(self, kind: str, work: Path, controller: Path, version: str):
        super().__init__(kind, work, controller, version, spare_ports=1)
        self.bport = self.spare_ports[0]

    def start(self) -> None:
        super().start()
        bcfg = self.props(
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
            self.check_running()
            if self.broker.poll() is not None:
                raise RuntimeError(f"{self.kind}: broker exited ({self.broker.returncode}); see {self.work}")
            return True if "Transitioning from RECOVERY to RUNNING" in self.blog.read_text() else None

        wait_for("the broker to be RUNNING", running, 180, 0.25)

    def stop(self) -> None:
        broker = getattr(self, "broker", None)  # absent when start() failed before it
        if broker is not None:
            broker.kill()
            broker.wait()
        super().stop()


def run(kind: str, args, work: Path) -> dict:
    system = System(kind, work, args.controller, args.kafka_version)
    t0 = time.monotonic()
    try:
        system.start()
        started = time.monotonic() - t0
        leader = wait_for("a controller leader", system.leader, 60, 0.5)
        pid = system.procs[leader].pid
        cp = (Path(os.environ.get("KRAFTWERK_CACHE", Path.home() / ".cache/kraftwerk"))
              / f"kafka-{args.kafka_version}.classpath").read_text().strip()
        log(f"{kind}: {args.topics} topics x {args.partitions} partitions through broker {BROKER_ID}")
        with RssSampler(pid) as rss:
            r = subprocess.run(["java", "-Xmx512m", "-cp", cp, str(ROOT / "bench/TopicsBench.java"),
                                f"127.0.0.1:{system.bport}", str(args.topics), str(args.partitions), "1",
                                str(args.batch)], capture_output=True, text=True, timeout=1800)
        if r.returncode != 0:
            raise RuntimeError(f"TopicsBench failed on {kind}:\n{r.stderr[-3000:]}")
        figures = json.loads(r.stdout.strip().splitlines()[-1])
        figures.update(system=kind, start_s=started, leader=leader, rss_idle_mib=rss.first,
                       rss_peak_mib=rss.peak, rss_end_mib=proc_rss_mib(pid))
        return figures
    finally:
        system.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--controller", type=Path, required=True)
    ap.add_argument("--kafka-version", default="4.4.0")
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
