#!/usr/bin/env python3
"""The checks of samples.py against made-up recordings: each must pass a good
one and fail each kind of bad one (a check that cannot fail proves nothing).

  python3 tests/e2e/test_samples.py     (`make test-e2e` runs it first)
"""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def pod(uid, ready=True, deleting=False, revision="r1"):
    return {"uid": uid, "ready": ready, "deleting": deleting, "revision": revision}


def view(leader, epoch, state="follower"):
    return {"leader": leader, "epoch": epoch, "state": state}


def run(cmd, samples, *args):
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for i, s in enumerate(samples):
            f.write(json.dumps({"t": float(i), "volumes": {}, **s}) + "\n")
    try:
        out = subprocess.run(
            [sys.executable, os.path.join(HERE, "samples.py"), cmd, f.name, *args],
            capture_output=True,
            text=True,
        )
    finally:
        os.unlink(f.name)
    return out.returncode, out.stdout + out.stderr


def roll(order, leader=2, overlap=False, resigning=False):
    """A recording of a 3-pod roll restarting `order`, the leader `leader`;
    `resigning`: the sample just before the leader's restart already sees it
    shutting down (no agreed leader)."""
    uids = {"0": "a0", "1": "a1", "2": "a2"}
    rev = {"0": "r1", "1": "r1", "2": "r1"}

    def sample(down=()):
        pods = {o: pod(uids[o], o not in down, False, rev[o]) for o in uids}
        views = {o: view(leader, 5, "leader" if int(o) == leader else "follower")
                 for o in uids if o not in down}
        return {"pods": pods, "views": views}

    samples = [sample(), sample()]
    for n, o in enumerate(order):
        if resigning and int(o) == leader:
            shutdown = sample()
            shutdown["views"] = {k: view(-1, 6) for k in shutdown["views"]}
            samples.append(shutdown)
        gone = dict(sample(down=[o]))
        gone["pods"] = dict(gone["pods"])
        gone["pods"][o] = pod(uids[o], False, True, rev[o])
        if overlap and n == 1:
            gone["pods"][order[0]] = pod(uids[order[0]], False, False, "r2")
        samples.append(gone)
        uids[o] = "b" + o
        rev[o] = "r2"
        samples.append(sample(down=[o]))
        samples.append(sample())
    return samples


def one_quorum(second_leader=None):
    views = {"0": view(0, 1, "leader"), "1": view(0, 1), "2": view(0, 1)}
    samples = []
    for _ in range(12):
        s = {"pods": {}, "views": json.loads(json.dumps(views)),
             "volumes": {"data-q-0": "C", "data-q-1": "C", "data-q-2": "C"}}
        if second_leader is not None:
            s["views"]["2"] = view(second_leader, 1, "leader")
        samples.append(s)
    return samples


def expect(ok, result, what):
    code, out = result
    if (code == 0) != ok:
        print(f"FAIL: {what}: exit {code}\n{out}")
        sys.exit(1)
    print(f"ok: {what}")


expect(True, run("check-roll", roll(["0", "1", "2"], leader=2), "3"),
       "a roll of followers then the leader passes")
expect(False, run("check-roll", roll(["2", "0", "1"], leader=2), "3"),
       "a roll that restarts the leader first fails")
expect(True, run("check-roll", roll(["0", "1", "2"], leader=2, resigning=True), "3"),
       "a roll whose last sample before the leader's restart meets it resigning passes")
expect(False, run("check-roll", roll(["2", "0", "1"], leader=2, resigning=True), "3"),
       "a roll that restarts the leader first fails, even seen resigning")
expect(False, run("check-roll", roll(["0", "2", "1"], leader=2, resigning=True), "3"),
       "a roll that restarts the leader second fails, even seen resigning")
expect(False, run("check-roll", roll(["0", "1", "2"], leader=2, overlap=True), "3"),
       "a roll with two pods down at once fails")
expect(False, run("check-roll", roll(["0", "1"], leader=2), "3"),
       "a roll that skips a pod fails")
expect(True, run("check-one-quorum", one_quorum(), "C", "3"),
       "three controllers of one quorum pass")
expect(False, run("check-one-quorum", one_quorum(second_leader=2), "C", "3"),
       "a second leader in the same epoch fails")
expect(False, run("check-one-quorum", one_quorum(), "OTHER", "3"),
       "a volume of another cluster id fails")
