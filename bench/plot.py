#!/usr/bin/env python3
"""Pictures of one `make bench` run (issue 23), drawn next to its results.json:

- latency-cdf.svg: append-to-commit latency per system, one panel per row
  (record size x append linger x rate), the points each system reports
  (ours: p50, p75, p99, p99.9, max; Kafka: p75, p99, p99.9) on a "nines" axis;
- saturation.svg: per record size, the best follower's replicated records/s
  and the commit p99 against the offered rate for every probe of the
  saturation search, the highest sustained rate marked.

    python bench/plot.py target/bench/latest/results.json

bench/publish.py copies them to bench/plots/, which BENCHMARKS.md embeds.
Needs matplotlib (bench/install-plot-deps.sh puts it in a cached venv); draws
nothing else, copies nothing and runs nothing.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# Deterministic SVG: no date, fixed ids, so a re-run with equal figures is an equal file.
plt.rcParams.update({"svg.hashsalt": "kraftwerk-bench", "svg.fonttype": "none"})
METADATA = {"Date": None}
QUANTILES = [("p50", 0.50), ("p75", 0.75), ("p99", 0.99), ("p999", 0.999)]
MAX_AT = 0.9999  # where a reported maximum is drawn on the nines axis
KAFKA_HISTOGRAM_TOP_MS = 250.0


def nines(q: float) -> float:
    """0.9 -> 1, 0.99 -> 2, 0.999 -> 3: the y position of quantile q."""
    return -math.log10(1 - q)


def points(r: dict) -> list[tuple[float, float]]:
    """(latency ms, nines) of the percentiles a system reported."""
    pts = [(r[k], nines(q)) for k, q in QUANTILES if r.get(k) is not None and r[k] > 0]
    if r.get("max"):
        pts.append((r["max"], nines(MAX_AT)))
    return pts


def linger_name(linger) -> str:
    return "25 (default)" if linger is None else str(linger)


def latency_cdf(results: dict, path: Path) -> None:
    rows = results["rows"]
    if not rows:
        return
    groups = sorted({(r["record_size"], r["linger_ms"] if r["linger_ms"] is not None else -1) for r in rows})
    rates = sorted({r["rate"] for r in rows})
    fig, axes = plt.subplots(len(groups), len(rates), figsize=(4.2 * len(rates), 3.2 * len(groups)),
                             squeeze=False, sharey=True)
    for ax in axes.flat:
        ax.set_visible(False)
    for row in rows:
        key = (row["record_size"], row["linger_ms"] if row["linger_ms"] is not None else -1)
        ax = axes[groups.index(key)][rates.index(row["rate"])]
        ax.set_visible(True)
        for name, r in row["systems"].items():
            pts = points(r)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
            if name.startswith("Kafka"):
                ax.axvline(KAFKA_HISTOGRAM_TOP_MS, color="grey", linestyle=":", linewidth=0.8)
        ax.axvline(results["fsync_ms"]["p99"], color="black", linestyle="--", linewidth=0.8)
        title = f"{row['record_size']} B, linger {linger_name(row['linger_ms'])} ms, {row['rate']}/s"
        ax.set_title(title if row["comparable"] else title + "\nNOT COMPARABLE", fontsize=9,
                     color="black" if row["comparable"] else "red")
        ax.set_xscale("log")
        ax.set_xlabel("append-to-commit latency, ms")
        ax.set_yticks([nines(q) for _, q in QUANTILES] + [nines(MAX_AT)],
                      ["50%", "75%", "99%", "99.9%", "max"])
        ax.grid(True, which="both", linewidth=0.3)
        ax.legend(fontsize=7, loc="upper left")
    fig.suptitle("Commit latency\n(dashed: disk fsync p99 of the same run; dotted: top of Kafka's histogram)",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, metadata=METADATA)
    plt.close(fig)


def saturation(results: dict, path: Path) -> None:
    searched = {size: by for size, by in results["saturation"].items()
                if any("probes" in s for s in by.values())}
    if not searched:
        return
    fig, axes = plt.subplots(2, len(searched), figsize=(5.5 * len(searched), 7), squeeze=False)
    for col, (size, by_system) in enumerate(sorted(searched.items(), key=lambda kv: int(kv[0]))):
        top, bottom = axes[0][col], axes[1][col]
        for name, s in by_system.items():
            if "probes" not in s:
                continue
            probes = sorted(s["probes"], key=lambda p: p["rate"])
            x = [p["rate"] for p in probes]
            line, = top.plot(x, [p["follower_half_per_sec"] for p in probes], marker="o", label=name)
            p99 = [(p["rate"], p["p99"]) for p in probes if p.get("p99")]
            if p99:
                bottom.plot([a for a, _ in p99], [b for _, b in p99], marker="o", color=line.get_color(), label=name)
            if s.get("highest_sustained"):
                for ax in (top, bottom):
                    ax.axvline(s["highest_sustained"], color=line.get_color(), linestyle="--", linewidth=0.8)
        lo = min(p["rate"] for s in by_system.values() for p in s.get("probes", []))
        hi = max(p["rate"] for s in by_system.values() for p in s.get("probes", []))
        top.plot([lo, hi], [lo, hi], color="grey", linestyle=":", linewidth=0.8, label="offered")
        top.set_title(f"{size} B records: replicated vs offered (dashed: highest sustained)", fontsize=9)
        top.set_ylabel("best follower's log, records/s")
        bottom.set_ylabel("commit p99, ms")
        for ax in (top, bottom):
            ax.set_xscale("log")
            ax.set_xlabel("offered, records/s")
            ax.grid(True, which="both", linewidth=0.3)
            ax.legend(fontsize=7)
        top.set_yscale("log")
        bottom.set_yscale("log")
    fig.tight_layout()
    fig.savefig(path, metadata=METADATA)
    plt.close(fig)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", type=Path, help="results.json of bench/bench.py")
    args = ap.parse_args()
    results = json.loads(args.results.read_text())
    out = args.results.resolve().parent
    written = []
    for name, draw in (("latency-cdf.svg", latency_cdf), ("saturation.svg", saturation)):
        draw(results, out / name)
        if (out / name).exists():
            written.append(out / name)
    for p in written:
        print(f"wrote {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
