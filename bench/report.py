"""The table `make bench` prints and writes (issue 23): one line per system
per row (record size, append linger, rate), each row marked "not comparable"
when the two systems did different work, then under it, per row, where our
commit latency goes stage by stage, then the saturation search, the
failovers and the disk's fsync floor.

Owns the comparability rule and the layout; runs nothing.
"""

from __future__ import annotations

import statistics

# Two systems did the same work when their log records/s and their log bytes
# per record each differ by at most this share (of the larger).
WORK_TOLERANCE = 0.05


def differs(a: float | None, b: float | None) -> float | None:
    """|a - b| / max(a, b); None when either is missing."""
    if a is None or b is None or max(a, b) <= 0:
        return None
    return abs(a - b) / max(a, b)


def comparability(by_system: dict) -> tuple[bool, str]:
    """Whether the systems of one row did equal work, and why not: log
    records/s (from the leader's log on disk, the same count for both) and
    log bytes per record must each agree within 5 %."""
    results = list(by_system.values())
    failed = [name for name, r in by_system.items() if "error" in r]
    if failed:
        return False, f"run failed: {', '.join(failed)}"
    if len(results) < 2:
        return True, ""
    a, b = results[0], results[1]
    why = []
    d = differs(a["log_records_per_sec"], b["log_records_per_sec"])
    if d is None or d > WORK_TOLERANCE:
        why.append(f"log rec/s differ by {'?' if d is None else f'{d:.0%}'}")
    d = differs(a["log_bytes_per_record"], b["log_bytes_per_record"])
    if d is None or d > WORK_TOLERANCE:
        why.append(f"log B/rec differ by {'?' if d is None else f'{d:.0%}'}")
    return not why, "; ".join(why)


def fmt(x, digits=1) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def gc_cell(gc: dict | None) -> str:
    """`count/total/max` of the leader's GC pauses in the window; `-` for ours."""
    return "-" if gc is None else f"{gc['count']}/{gc['total_ms']:.0f}/{gc['max_ms']:.0f}"


def linger_name(linger) -> str:
    return "25 (default)" if linger is None else str(linger)


def rows_table(results: dict) -> list[str]:
    """The main table as Markdown lines."""
    fsync_p99 = results["fsync_ms"]["p99"]
    head = ["B/rec", "linger ms", "rate/s", "system", "log rec/s", "log B/rec", "self-reported/s", "p50 ms",
            "p75 ms", "p99 ms", "p99.9 ms", "p99 / fsync p99", "ldr CPU µs/rec", "RSS MiB ldr/fol",
            "CPU s ldr/fol", "ldr GC n/Σ/max ms", "start→leader s", "work"]
    rows = []
    for row in results["rows"]:
        for name, r in row["systems"].items():
            if "error" in r:
                rows.append([str(row["record_size"]), linger_name(row["linger_ms"]), str(row["rate"]), name]
                            + ["-"] * (len(head) - 5) + [f"ERROR: {r['error'].splitlines()[0][:120]}"])
                continue
            p99 = r["p99"]
            rows.append([str(row["record_size"]), linger_name(row["linger_ms"]), str(row["rate"]), name,
                         fmt(r["log_records_per_sec"], 0), fmt(r["log_bytes_per_record"], 0),
                         fmt(r["records_per_sec"], 0), fmt(r["p50"]), fmt(r["p75"]), fmt(p99), fmt(r["p999"]),
                         "-" if p99 is None or fsync_p99 <= 0 else f"{p99 / fsync_p99:.1f}×",
                         fmt(r["cpu_us_per_record"]),
                         f"{r['rss_leader']:.0f}/{r['rss_follower']:.0f}",
                         f"{r['cpu_leader']:.1f}/{r['cpu_follower']:.1f}",
                         gc_cell(r.get("gc_leader")),
                         fmt(r["start_to_leader_s"], 2),
                         "equal" if row["comparable"] else f"NOT COMPARABLE ({row['why']})"])
        if "floor" in row:
            rows.append(floor_cells(row, fsync_p99, len(head)))
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(head)]

    def line(cells):
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"

    return [line(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)]


FLOOR_NAME = "floor (no Raft)"


def floor_cells(row: dict, fsync_p99: float, width: int) -> list[str]:
    """The replication floor's line under a row's systems: its latencies,
    their ratio to the fsync p99 and its leader's CPU per record; `-` where
    a column means a controller's (log, RSS, start, GC)."""
    f = row["floor"]
    cells = [str(row["record_size"]), linger_name(row["linger_ms"]), str(row["rate"]), FLOOR_NAME]
    if "error" in f:
        return cells + ["-"] * (width - 5) + [f"ERROR: {f['error'].splitlines()[0][:120]}"]
    p99 = f["p99"]
    return cells + ["-", "-", "-", fmt(f["p50"]), fmt(f["p75"]), fmt(p99), fmt(f["p999"]),
                    "-" if fsync_p99 <= 0 else f"{p99 / fsync_p99:.1f}×", fmt(f["cpu_us_per_record"]),
                    "-", "-", "-", "-", "bare replication"]


def floor_lines(results: dict) -> list[str]:
    """Ours against the floor of the same row: p99 and the leader's CPU per record, as ratios."""
    out = []
    for row in results["rows"]:
        f, o = row.get("floor"), row["systems"].get("kraft-controller")
        if not f or "error" in f or not o or "error" in o:
            continue

        def ratio(key: str, digits: int) -> str:
            mine, bare = o.get(key), f.get(key)
            return "-" if mine is None or not bare else f"{mine / bare:.{digits}f}×"

        p99, cpu = ratio("p99", 1), ratio("cpu_us_per_record", 2)
        out.append(f"{row['record_size']} B, linger {linger_name(row['linger_ms'])}, {row['rate']}/s: "
                   f"p99 {p99}, leader CPU per record {cpu}")
    if not out:
        return []
    return ["kraft-controller against the replication floor of the same row (ours / floor): " + "; ".join(out)]


# What each stage of ours measures (controller/src/server/stages.rs), for the table's legend.
STAGE_LEGEND = {
    "leader_flush": "append → the leader's fsync covering the batch returned (also when after the commit)",
    "fetch_sent": "append → the first Fetch response carrying it handed to a follower's connection",
    "follower_ack_first": "append → the first follower's next Fetch past it reached the leader's loop "
                          "(with 3 voters: the majority)",
    "follower_ack_last": "append → the last follower's (counted only when before the commit)",
    "follower_round_trip": "that follower: response sent → its next Fetch (its append + fsync + request + queueing)",
    "high_watermark_wait": "a majority held it (leader flush, follower acks) → commit",
    "commit": "append → high watermark past the batch (per batch; the row's figures are per record)",
}


def stage_table(stages: list[dict]) -> list[str]:
    """One run's stage breakdown as Markdown lines: stage, batches, p50/p99/p99.9/max ms."""
    head = ["stage", "batches", "p50 ms", "p99 ms", "p99.9 ms", "max ms", "what"]
    rows = [[s["stage"], str(s["count"]), fmt(s["p50_ms"], 2), fmt(s["p99_ms"], 2), fmt(s["p999_ms"], 2),
             fmt(s["max_ms"], 2), STAGE_LEGEND.get(s["stage"], "")] for s in stages]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(head)]

    def line(cells):
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"

    return [line(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)]


def stage_tables(results: dict) -> list[str]:
    """Under the main table: for each row a system reported stages for (ours), its breakdown."""
    out = []
    for row in results["rows"]:
        for name, r in row["systems"].items():
            if not r.get("stages"):
                continue
            out += ["", f"Where the commit latency goes: {name}, {row['record_size']} B, linger "
                        f"{linger_name(row['linger_ms'])} ms, {row['rate']} records/s "
                        f"(load average {r.get('loadavg', '?')}):", "", *stage_table(r["stages"])]
    return out


def saturation_lines(results: dict) -> list[str]:
    out = []
    for size, by_system in results["saturation"].items():
        for name, s in by_system.items():
            if s.get("skipped"):
                out.append(f"saturation, {size} B records, {name}: not searched ({s['skipped']})")
                continue
            best = s["highest_sustained"]
            probes = ", ".join(f"{p['rate']}{'' if p['sustained'] else '✗'}{' (failed)' if 'error' in p else ''}"
                               for p in s["probes"])
            where = ("none sustained" if best is None else
                     f"{'≥ ' if s['capped'] else ''}{best} records/s" + (" (the search's cap)" if s["capped"] else ""))
            out.append(f"saturation, {size} B records, linger {linger_name(s['linger_ms'])} ms, {name}: "
                       f"highest sustained {where}; probes {probes} (✗ = not sustained)")
    return out


def notes(results: dict) -> list[str]:
    out = []
    if results["meta"]["kafka_version"].startswith("4.1."):
        out.append("note: Kafka 4.1.2's TestRaftServer ignores --throughput and --record-size and always writes "
                   "20000 records/s of 256 B (javap -c kafka.tools.TestRaftServer: `sipush 20000`, `sipush 256` "
                   "before the RaftWorkloadGenerator's constructor); its rows at any other rate or size are "
                   "marked NOT COMPARABLE. Kafka 4.4.0 passes both flags through.")
    out.append("note: a row's work is equal when both systems' log rec/s (counted from the leader's log on disk "
               "over the window) and log B/rec each agree within 5 %.")
    out.append("note: Kafka's p75/p99/p99.9 come from its own histogram (0.25 ms buckets up to 250 ms, so 249.0 "
               "means 250 ms or more; no p50); ours from every committed record.")
    if any("floor" in row for row in results["rows"]):
        out.append(f"note: {FLOOR_NAME}: kraft-replication-floor, three processes replicating the row's batches "
                   "(one per millisecond, paced as ours) with a file, a loopback socket and fsync each: the "
                   "leader's fsync after the row's linger, in parallel with one follower's receive, append, fsync "
                   "and answer; a batch commits when two of the three have it. No Raft, no Kafka protocol: a "
                   "controller's distance to it is what the controller adds to the bare replication here.")
    out.append("note: ldr GC n/Σ/max ms: the stop-the-world pauses Kafka's leader JVM logged (-Xlog:gc) inside "
               "the window: how many, their sum and the longest; set beside its p99 it says whether GC explains it "
               "(--kafka-heap changes the heap).")
    return out


def text(results: dict) -> str:
    """The whole report, Markdown."""
    lines = rows_table(results)
    lines += stage_tables(results)
    lines.append("")
    meta = results["meta"]
    items = [f"run: {meta.get('started_utc', '?')}, Kafka {meta['kafka_version']} TestRaftServer, "
             f"{meta.get('duration_s', '?')} s per row and system, controller {meta.get('controller', '?')}"]
    if "/debug/" in str(meta.get("controller", "")):
        items.append("**a DEBUG build of kraft-controller: its figures mean nothing** (release: make bench)")
    for skipped in results.get("skipped_rows", []):
        items.append(f"row skipped: {skipped['rate']}/s of {skipped['record_size']} B, linger "
                     f"{linger_name(skipped['linger_ms'])} ms (more than --max-mib-per-sec)")
    items += saturation_lines(results)
    for name, times in results["failover_ms"].items():
        if times:
            items.append(f"failover ({name}): kill -9 of the leader to a new leader's first commit: "
                         f"median {statistics.median(times):.0f} ms of {len(times)} "
                         f"({', '.join(f'{t:.0f}' for t in times)})")
    for name, error in results.get("failover_errors", {}).items():
        items.append(f"failover ({name}): FAILED: {error.splitlines()[0][:200]}")
    items += floor_lines(results)
    f = results["fsync_ms"]
    items.append(f"disk fsync floor (256 B append + fsync, 500 times): p50 {f['p50']:.2f} ms, "
                 f"p99 {f['p99']:.2f} ms, p99.9 {f['p999']:.2f} ms")
    items += notes(results)
    lines += [f"- {item}" for item in items]  # a Markdown list: one line each where it is published
    return "\n".join(lines) + "\n"
