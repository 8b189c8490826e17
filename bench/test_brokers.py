"""Tests of brokers.py's decisions that need no process: which simulated
brokers a metadata log (as `kraft-controller dump-log` prints it) leaves
unfenced, and the CPU share.

    python3 -m unittest discover -s bench -p 'test_*.py'

Nothing here is timed or runs a system. Standard library only.
"""

from __future__ import annotations

import sys
import unittest
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
from brokers import cpu_share, unfenced_brokers  # noqa: E402


def register(broker: int, offset: int) -> str:
    # As dump-log printed Kafka 4.4.0's record in a run (features shortened).
    return (f"  offset={offset} REGISTER_BROKER_RECORD(0) version=4 broker_id={broker} "
            f"incarnation_id=sLAAAAAAAAAAAAAAAAAAaA broker_epoch={offset} "
            f"endpoints=[PLAINTEXT://127.0.0.1:19104 (security_protocol=0)] features=[metadata.version:7-33] "
            f"rack= fenced=true in_controlled_shutdown=false log_dirs=[0dEAAAAAAAAAAAAAAAAAaA]")


def change(broker: int, offset: int, fenced: int) -> str:
    return (f"  offset={offset} BROKER_REGISTRATION_CHANGE_RECORD(17) version=0 broker_id={broker} "
            f"broker_epoch=14 fenced={fenced} in_controlled_shutdown=0 log_dirs=[]")


class Unfenced(unittest.TestCase):
    def test_a_registered_broker_is_unfenced_only_by_a_change_record_with_fenced_minus_one(self):
        lines = [register(104, 14), register(101, 15), change(104, 20, -1)]
        self.assertEqual(unfenced_brokers(lines), {104})

    def test_a_broker_that_registers_again_after_being_unfenced_counts_as_fenced(self):
        lines = [register(104, 14), change(104, 20, -1), register(104, 30)]
        self.assertEqual(unfenced_brokers(lines), set())

    def test_a_change_record_with_fenced_zero_leaves_the_state_and_one_fences(self):
        lines = [register(1, 1), register(2, 2), register(3, 3), change(1, 4, -1), change(2, 5, 0),
                 change(1, 6, 0), change(3, 7, -1), change(3, 8, 1)]
        self.assertEqual(unfenced_brokers(lines), {1})

    def test_the_unfence_and_fence_records_of_old_metadata_versions_count(self):
        lines = [register(7, 1), "  offset=2 UNFENCE_BROKER_RECORD(8) version=0 broker_id=7 broker_epoch=1",
                 register(8, 3), "  offset=4 UNFENCE_BROKER_RECORD(8) version=0 broker_id=8 broker_epoch=3",
                 "  offset=5 FENCE_BROKER_RECORD(7) version=0 broker_id=8 broker_epoch=3"]
        self.assertEqual(unfenced_brokers(lines), {7})


class Cpu(unittest.TestCase):
    def test_cpu_share_is_percent_of_one_core(self):
        self.assertAlmostEqual(cpu_share(3.0, 60.0), 5.0)
        self.assertNotEqual(cpu_share(1.0, 0.0), cpu_share(1.0, 0.0))  # NaN for no wall time


if __name__ == "__main__":
    unittest.main()
