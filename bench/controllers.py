"""Three KRaft controllers on loopback, ours (`kraft-controller run`) or
Apache Kafka's (`kafka.Kafka` with process.roles=controller), formatted with
one cluster id and a dynamic quorum of three initial voters: the start-up
shared by topics.py (which adds a broker) and brokers.py (which adds
simulated brokers).

Owns formatting, starting, finding the leader and killing the controllers;
decides nothing about what a run measures. Python 3.11, standard library only.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from common import free_ports

ROOT = Path(__file__).resolve().parent.parent
RUN_CLASS = ROOT / "tests/kafka/kafka-run-class"
SERVER_LOG4J = ROOT / "tests/kafka/log4j2-server.yaml"
CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qk"
DIR_IDS = ["LaBaIMiMRmy8YSD1cAd8Ew", "q6CGIHGkTStroizn5hrLMg", "Ww7qv0dqTt2yo2vBmEyd3A"]


def kafka_env(version: str, heap: str) -> dict:
    """The environment of `tests/kafka/kafka-run-class` for Kafka `version`
    with `heap` (KAFKA_HEAP_OPTS) and the servers' log4j2 configuration."""
    env = dict(os.environ)
    env.update(KAFKA_VERSION=version, KAFKA_HEAP_OPTS=heap, KAFKA_LOG4J_CONFIG=str(SERVER_LOG4J))
    return env


class Controllers:
    """Three controllers of `kind` ("ours" or "kafka") in `work`: nodes 1-3,
    each with its log in `work/c<i>.log` and its metadata log dir `work/c<i>`.
    `extra` is appended to every controller's properties; `spare_ports`
    more free ports are picked with theirs (in `self.spare_ports`) for a
    caller's own servers, so that none collides with a controller's.
    `release_version` (e.g. "4.4-IV2") is the metadata.version both kinds
    are formatted with; None leaves each tool's default (ours 4.1-IV1,
    Kafka 4.4.0's 4.4-IV2)."""

    def __init__(self, kind: str, work: Path, controller: Path, version: str, extra: str = "",
                 spare_ports: int = 0, release_version: str | None = None):
        self.kind, self.work, self.controller, self.version, self.extra = kind, work, controller, version, extra
        self.release_version = release_version
        ports = free_ports(6 + spare_ports)
        self.cports, self.http, self.spare_ports = ports[:3], ports[3:6], ports[6:]
        self.bootstrap = ",".join(f"127.0.0.1:{p}" for p in self.cports)
        self.initial = ",".join(f"{i}@127.0.0.1:{p}:{d}" for i, p, d in zip((1, 2, 3), self.cports, DIR_IDS))
        self.procs: dict[int, subprocess.Popen] = {}

    def props(self, name: str, text: str) -> Path:
        """Writes `work/<name>.properties`: `text` plus log.dirs and
        metadata.log.dir `work/<name>`."""
        path = self.work / f"{name}.properties"
        path.write_text(text + f"log.dirs={self.work / name}\nmetadata.log.dir={self.work / name}\n")
        return path

    def start(self) -> None:
        """Formats and starts the three controllers (returns without waiting for a leader)."""
        for i, port, http in zip((1, 2, 3), self.cports, self.http):
            # Ours serves /metrics on kraftwerk.http.listener (default 127.0.0.1:0, a port the OS picks).
            http_line = f"kraftwerk.http.listener=127.0.0.1:{http}\n" if self.kind == "ours" else ""
            cfg = self.props(
                f"c{i}",
                f"process.roles=controller\nnode.id={i}\ncontroller.listener.names=CONTROLLER\n"
                f"listeners=CONTROLLER://127.0.0.1:{port}\nlistener.security.protocol.map=CONTROLLER:PLAINTEXT\n"
                f"controller.quorum.bootstrap.servers={self.bootstrap}\n{http_line}{self.extra}",
            )
            fmt = ["format", "--config", str(cfg), "--cluster-id", CLUSTER_ID, "--initial-controllers", self.initial]
            if self.release_version:
                fmt += ["--release-version", self.release_version]
            out = open(self.work / f"c{i}.log", "w")
            if self.kind == "ours":
                subprocess.run([self.controller, *fmt], check=True, capture_output=True)
                self.procs[i] = subprocess.Popen([self.controller, "run", "--config", cfg], stdout=out, stderr=out)
            else:
                env = kafka_env(self.version, "-Xmx512m")
                subprocess.run([RUN_CLASS, "kafka.tools.StorageTool", *fmt], check=True, capture_output=True, env=env)
                self.procs[i] = subprocess.Popen([RUN_CLASS, "kafka.Kafka", cfg], stdout=out, stderr=out, env=env)

    def check_running(self) -> None:
        """Raises RuntimeError when a controller has exited."""
        for i, p in self.procs.items():
            if p.poll() is not None:
                raise RuntimeError(f"{self.kind}: controller {i} exited ({p.returncode}); see {self.work}")

    def leader(self) -> int | None:
        """The leader's node id as `kraft-controller quorum describe` reports it, or None."""
        for port in self.cports:
            r = subprocess.run([self.controller, "quorum", "--bootstrap-controller", f"127.0.0.1:{port}",
                                "--timeout-ms", "2000", "describe", "--status"], capture_output=True, text=True)
            for line in r.stdout.splitlines():
                if line.startswith("LeaderId:") and line.split(":")[1].strip() not in ("", "-1"):
                    return int(line.split(":")[1])
        return None

    def stop(self) -> None:
        for p in self.procs.values():
            p.kill()
            p.wait()
