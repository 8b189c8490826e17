"""Helpers shared by the benchmark scripts (bench.py, topics.py): process
figures from /proc, free ports, bounded waits, the disk's fsync floor, and the
one measure of work both systems are held to, counted from a log on disk.

Owns no process and decides nothing about what a run is; Python 3.11 standard
library only.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")
# Kafka's RecordBatch header (DefaultRecordBatch.RECORD_BATCH_OVERHEAD), bytes:
# subtracted from a batch's size to get the bytes of its records.
RECORD_BATCH_OVERHEAD = 61


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def proc_rss_mib(pid: int) -> float:
    """`VmRSS` of `pid` in MiB; NaN when the process is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


class RssSampler:
    """Samples `pid`'s `VmRSS` every 0.25 s on a thread while in a `with`
    block; `peak` is the highest sample in MiB (the first is taken at entry)."""

    def __init__(self, pid: int):
        self.pid, self.samples = pid, [proc_rss_mib(pid)]
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._done.wait(0.25):
            self.samples.append(proc_rss_mib(self.pid))

    def __enter__(self) -> "RssSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join()

    @property
    def first(self) -> float:
        return self.samples[0]

    @property
    def peak(self) -> float:
        """The highest sample, NaN samples (the process gone) left out."""
        return max((x for x in self.samples if x == x), default=float("nan"))


def proc_cpu_s(pid: int) -> float:
    """`utime + stime` of `pid` in seconds; NaN when the process is gone."""
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
    """Polls `fn` until it returns something other than None, at most `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = fn()
        if value is not None:
            return value
        time.sleep(interval_s)
    raise TimeoutError(f"timed out after {timeout_s:.0f} s waiting for {what}")


BATCH = re.compile(
    r"^batch base_offset=\d+ last_offset=\d+ count=(\d+) epoch=(\d+) control=(\w+) "
    r"crc=\S+ size=(\d+) position=\d+ timestamp=(\d+)$")


def log_stats(controller: Path, partition_dir: Path, epoch: int, t0_ms: float, t1_ms: float) -> dict:
    """What a log on disk holds of the leader's appends in `epoch` between
    wall-clock times `t0_ms` and `t1_ms`, read by `kraft-controller dump-log`
    (which reads Kafka's segments as well as ours): the same measure for both
    systems, independent of what each one reports about itself. Data batches
    only; a batch counts when its timestamp (the leader's append time, which a
    follower's copy keeps) is inside the window.

    Returns `records_per_sec` and `bytes_per_record` (the batches' bytes less
    their 61-byte headers, per record: the value plus Kafka's per-record
    framing, a few bytes), plus the raw `records` and `batches`."""
    records = batches = size = 0
    with subprocess.Popen([controller, "dump-log", partition_dir], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True) as p:
        assert p.stdout is not None
        for line in p.stdout:
            m = BATCH.match(line)
            if m and m.group(3) == "false" and int(m.group(2)) == epoch and t0_ms <= int(m.group(5)) < t1_ms:
                records += int(m.group(1))
                batches += 1
                size += int(m.group(4))
    seconds = (t1_ms - t0_ms) / 1000
    return {
        "records": records,
        "batches": batches,
        "records_per_sec": records / seconds if seconds > 0 else 0.0,
        "bytes_per_record": (size - RECORD_BATCH_OVERHEAD * batches) / records if records else None,
    }


def fsync_floor(directory: Path, count: int = 500) -> dict:
    """The disk's own fsync latency (ms): append 256 bytes and fsync, `count` times."""
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

    def pick(q: float) -> float:
        return samples[min(len(samples) - 1, max(0, int(q / 100 * len(samples) + 0.999) - 1))]

    return {"p50": pick(50), "p99": pick(99), "p999": pick(99.9)}
