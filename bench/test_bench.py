"""Tests of the benchmark's decisions that need no process: when a row's work
is equal, when a rate is sustained, and where the saturation search ends.

    python3 -m unittest discover -s bench -p 'test_*.py'

Nothing here is timed or runs a system. Standard library only.
"""

from __future__ import annotations

import os
import sys
import tempfile
import unittest
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402
import common  # noqa: E402
from publish import PublishError, replace_block  # noqa: E402
from report import comparability, text  # noqa: E402
from runs import saturation_search, sustained  # noqa: E402


def result(rec_s: float, bytes_per_rec: float) -> dict:
    return {"log_records_per_sec": rec_s, "log_bytes_per_record": bytes_per_rec}


def probe_with_capacity(capacity: int, calls: list):
    """A system that replicates up to `capacity` records/s."""

    def probe(rate: int) -> dict:
        calls.append(rate)
        r = {"offered_per_sec": rate, "leader_half_per_sec": rate, "follower_half_per_sec": min(rate, capacity)}
        r["sustained"] = sustained(r)
        return r

    return probe


class Comparability(unittest.TestCase):
    def test_a_row_whose_systems_wrote_within_five_percent_of_each_other_is_comparable(self):
        ok, why = comparability({"a": result(20000, 264), "b": result(19200, 262)})
        self.assertTrue(ok, why)

    def test_kafka_412_writing_twenty_times_the_rate_asked_makes_the_row_not_comparable(self):
        ok, why = comparability({"ours": result(1000, 264), "kafka": result(19991, 264)})
        self.assertFalse(ok)
        self.assertIn("log rec/s differ by 95%", why)

    def test_records_of_256_bytes_against_4_kib_make_the_row_not_comparable(self):
        ok, why = comparability({"ours": result(20000, 4104), "kafka": result(20000, 264)})
        self.assertFalse(ok)
        self.assertIn("log B/rec", why)

    def test_a_system_that_wrote_nothing_makes_the_row_not_comparable(self):
        ok, _ = comparability({"ours": result(20000, 264), "kafka": result(0, None)})
        self.assertFalse(ok)


class Saturation(unittest.TestCase):
    def test_a_follower_falling_more_than_five_percent_behind_the_offered_rate_is_not_sustained(self):
        self.assertFalse(sustained({"offered_per_sec": 1000, "leader_half_per_sec": 1000,
                                    "follower_half_per_sec": 940}))
        self.assertTrue(sustained({"offered_per_sec": 1000, "leader_half_per_sec": 1000,
                                   "follower_half_per_sec": 960}))

    def test_a_leader_that_cannot_append_at_the_offered_rate_is_not_sustained(self):
        self.assertFalse(sustained({"offered_per_sec": 1000, "leader_half_per_sec": 900,
                                    "follower_half_per_sec": 900}))

    def test_the_search_doubles_then_bisects_to_within_five_percent_of_the_capacity(self):
        calls: list = []
        s = saturation_search(probe_with_capacity(100_000, calls), 20000, 1_000_000, 1000, 6)
        self.assertEqual(calls[:4], [20000, 40000, 80000, 160000])
        self.assertLessEqual(s["highest_sustained"], 100_000 / 0.95)
        self.assertGreaterEqual(s["highest_sustained"], 95_000)
        self.assertFalse(s["capped"])

    def test_the_search_halves_when_the_start_rate_is_not_sustained(self):
        calls: list = []
        s = saturation_search(probe_with_capacity(3000, calls), 20000, 1_000_000, 1000, 0)
        self.assertEqual(calls, [20000, 10000, 5000, 2500])
        self.assertEqual(s["highest_sustained"], 2500)

    def test_the_search_reports_its_cap_when_the_cap_itself_is_sustained(self):
        s = saturation_search(probe_with_capacity(10**9, []), 20000, 50000, 1000, 3)
        self.assertEqual(s["highest_sustained"], 50000)
        self.assertTrue(s["capped"])

    def test_a_probe_whose_quorum_never_commits_counts_as_not_sustained(self):
        def no_leader(*_args):
            raise TimeoutError("timed out after 60 s waiting for a kraft-controller leader")

        real, bench.throughput_run = bench.throughput_run, no_leader
        try:
            r = bench.probe(None, 40000, 256, 20, Path("kraft-controller"))
        finally:
            bench.throughput_run = real
        self.assertFalse(r["sustained"])
        self.assertIn("timed out", r["error"])

    def test_the_search_reports_none_when_even_the_minimum_rate_is_not_sustained(self):
        s = saturation_search(probe_with_capacity(10, []), 4000, 1_000_000, 1000, 3)
        self.assertIsNone(s["highest_sustained"])


class StageTable(unittest.TestCase):
    RESULTS = {
        "meta": {"kafka_version": "4.4.0"}, "fsync_ms": {"p50": 0.1, "p99": 0.28, "p999": 0.5},
        "saturation": {}, "failover_ms": {},
        "rows": [{"record_size": 256, "linger_ms": 0, "rate": 20000, "comparable": True, "why": "",
                  "systems": {"kraft-controller": {
                      "p50": 1.0, "p75": 2.0, "p99": 7.2, "p999": 13.7, "records_per_sec": 20000,
                      "log_records_per_sec": 20000, "log_bytes_per_record": 264, "cpu_us_per_record": 1.0,
                      "rss_leader": 20, "rss_follower": 20, "cpu_leader": 1.0, "cpu_follower": 1.0,
                      "start_to_leader_s": 1.0, "loadavg": "1.50 1.20 1.00",
                      "stages": [{"stage": "leader_flush", "count": 4000, "p50_ms": 0.31, "p99_ms": 0.9,
                                  "p999_ms": 2.0, "max_ms": 3.0},
                                 {"stage": "commit", "count": 4000, "p50_ms": 1.2, "p99_ms": 7.0,
                                  "p999_ms": 13.0, "max_ms": 20.0}]}}}],
    }

    def test_the_stage_breakdown_of_a_row_is_printed_under_the_table_with_its_load_average(self):
        report = text(self.RESULTS)
        self.assertIn("Where the commit latency goes: kraft-controller, 256 B, linger 0 ms, 20000 records/s "
                      "(load average 1.50 1.20 1.00):", report)
        line = next(x for x in report.splitlines() if x.startswith("| leader_flush"))
        self.assertEqual([c.strip() for c in line.split("|")[1:6]], ["leader_flush", "4000", "0.31", "0.90", "2.00"])
        self.assertLess(report.index("| kraft-controller"), report.index("| leader_flush"))

    FLOOR = {"p50": 0.4, "p75": 0.45, "p99": 1.2, "p999": 3.0, "max": 9.0, "records": 800000, "batches": 40000,
             "cpu_us_per_record": 0.5, "loadavg": "1.00 1.00 1.00"}

    def test_the_floor_of_a_row_is_a_line_under_its_systems_and_ours_is_set_against_it(self):
        results = {**self.RESULTS, "rows": [{**self.RESULTS["rows"][0], "floor": self.FLOOR}]}
        report = text(results)
        line = next(x for x in report.splitlines() if x.startswith("| 256") and "floor (no Raft)" in x)
        cells = [c.strip() for c in line.split("|")[1:-1]]
        self.assertEqual(cells[7:12], ["0.4", "0.5", "1.2", "3.0", "4.3×"])  # p50, p75, p99, p99.9, p99 / 0.28
        self.assertEqual(cells[12], "0.5")
        ours = next(x for x in report.splitlines() if x.startswith("| 256") and "kraft-controller" in x)
        self.assertLess(report.index(ours), report.index(line))
        self.assertIn("256 B, linger 0, 20000/s: p99 6.0×, leader CPU per record 2.00×", report)

    def test_a_failed_floor_is_said_and_left_out_of_the_ratios(self):
        results = {**self.RESULTS, "rows": [{**self.RESULTS["rows"][0], "floor": {"error": "exit 1\nmore"}}]}
        report = text(results)
        self.assertIn("ERROR: exit 1", report)
        self.assertNotIn("against the replication floor", report)

    def test_a_missing_figure_of_ours_is_a_dash_in_the_floor_ratios(self):
        ours = {**self.RESULTS["rows"][0]["systems"]["kraft-controller"], "p99": None}
        results = {**self.RESULTS, "rows": [{**self.RESULTS["rows"][0], "floor": self.FLOOR,
                                             "systems": {"kraft-controller": ours}}]}
        self.assertIn("20000/s: p99 -, leader CPU per record 2.00×", text(results))

    def test_a_row_without_stages_prints_no_breakdown(self):
        results = {**self.RESULTS, "rows": [{**self.RESULTS["rows"][0], "systems": {
            "kraft-controller": {**self.RESULTS["rows"][0]["systems"]["kraft-controller"], "stages": []}}}]}
        self.assertNotIn("Where the commit latency goes", text(results))


class FloorRun(unittest.TestCase):
    """bench.floor_run against stand-ins for the binary: its failures become a row's error."""

    def run_fake(self, script: str) -> tuple[dict | Exception, Path]:
        with tempfile.TemporaryDirectory() as tmp:
            fake = Path(tmp) / "floor"
            fake.write_text("#!/bin/sh\nmkdir -p \"$2\"\n" + script)
            fake.chmod(0o755)
            work = Path(tmp) / "work"
            try:
                result: dict | Exception = bench.floor_run(fake, work, 1000, 256, None, 0.1)
            except RuntimeError as e:
                result = e
            return result, work

    def test_a_report_is_read_and_its_directory_removed(self):
        r, work = self.run_fake('echo \'{"p50_ms": 0.4, "p75_ms": 0.5, "p99_ms": 1.2, "p999_ms": 3, '
                                '"max_ms": 9, "records": 100, "batches": 100, "cpu_us_per_record": 90.5}\'\n')
        self.assertEqual((r["p99"], r["cpu_us_per_record"]), (1.2, 90.5))
        self.assertFalse(work.exists())

    def test_a_failed_run_says_the_tools_last_error_line(self):
        r, _ = self.run_fake("echo 'kraft-replication-floor: follower 1 exited' >&2\nexit 1\n")
        self.assertIsInstance(r, RuntimeError)
        self.assertIn("follower 1 exited", str(r))

    def test_a_run_without_a_report_is_an_error(self):
        r, _ = self.run_fake("echo hello\n")
        self.assertIsInstance(r, RuntimeError)
        self.assertIn("no report", str(r))


class Rss(unittest.TestCase):
    def test_the_rss_peak_leaves_out_the_samples_of_a_process_gone(self):
        sampler = common.RssSampler(os.getpid())
        sampler.samples = [float("nan"), 5.0, 3.0, float("nan")]
        self.assertEqual(sampler.peak, 5.0)
        sampler.samples = [float("nan")]
        self.assertNotEqual(sampler.peak, sampler.peak)  # NaN: no sample at all


class Publish(unittest.TestCase):
    DOC = "# B\n\nintro\n<!-- bench:latest:begin -->\nold table\n<!-- bench:latest:end -->\n\nrest\n"

    def test_publishing_replaces_only_the_text_between_the_markers(self):
        doc = replace_block(self.DOC, "| new | table |\n")
        self.assertEqual(doc, "# B\n\nintro\n<!-- bench:latest:begin -->\n| new | table |\n"
                              "<!-- bench:latest:end -->\n\nrest\n")

    def test_publishing_twice_gives_the_same_document(self):
        once = replace_block(self.DOC, "t\n")
        self.assertEqual(replace_block(once, "t\n"), once)

    def test_a_document_without_the_markers_is_refused(self):
        with self.assertRaises(PublishError):
            replace_block("# B\nno markers\n", "t")


if __name__ == "__main__":
    unittest.main()
