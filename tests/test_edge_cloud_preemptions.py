"""examples/a-online/preemptions.py: Fig. 9's preemptions counted in each unit.

Hand-made events.csv rows give every unit by hand; a tiny replay checks that the counts of
a real event log agree with its summary (chunks) and with the job-level pause it holds.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpusched.cli import app
from tests.test_edge_cloud import cluster_toml, job, write_case

_PATH = Path(__file__).parent.parent / "examples" / "a-online" / "preemptions.py"
_spec = importlib.util.spec_from_file_location("a_online_preemptions", _PATH)
assert _spec is not None and _spec.loader is not None
pre = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = pre
_spec.loader.exec_module(pre)


def ev(t: float, kind: str, chunk: str, gpus: str = "") -> dict[str, str]:
    return {"time_s": str(t), "event": kind, "job_id": chunk, "gpus": gpus, "detail": ""}


PARENT = {c: c.split("/")[0] for c in ("A/0", "A/1", "B/0", "E/0", "C/0", "C/1", "C/2", "D/0")}


def test_each_unit_by_hand():
    """A (2 chunks on workers 0 and 1), B (worker 2) and E (worker 4) run from 0. At 5 all
    four chunks are paused; C takes workers 0, 1 and 4, nobody takes B's worker 2. A/0
    resumes on worker 3 at 7 and is paused again at 9, when D takes worker 3.

    chunks: 5 preempt rows; pauses: (A, 5), (B, 5), (E, 5), (A, 9) = 4; triggers: C at 5
    (one job, three workers), B's own at 5 (untaken) and D at 9 = 3; decisions: 5 and 9;
    jobs: A, B, E."""
    rows = [
        ev(0, "arrive", "A/0"),
        ev(0, "start", "A/0", "0"),
        ev(0, "start", "A/1", "1"),
        ev(0, "start", "B/0", "2"),
        ev(0, "start", "E/0", "4"),
        ev(5, "preempt", "A/0"),
        ev(5, "preempt", "A/1"),
        ev(5, "preempt", "B/0"),
        ev(5, "preempt", "E/0"),
        ev(5, "start", "C/0", "0"),
        ev(5, "start", "C/1", "1"),
        ev(5, "start", "C/2", "4"),
        ev(7, "start", "A/0", "3"),
        ev(8, "finish", "C/0"),
        ev(8, "start", "B/0", "0"),  # not at the time of a preemption: no trigger
        ev(9, "preempt", "A/0"),
        ev(9, "start", "D/0", "3"),
    ]
    got = pre.count(rows, PARENT)
    assert got == {
        "chunks": 5,
        "pauses": 4,
        "triggers": 3,
        "decisions": 2,
        "jobs": 3,
        "untaken": 1,
    }


def test_a_worker_taken_later_is_not_a_trigger_of_its_taker():
    rows = [ev(0, "start", "A/0", "0"), ev(5, "preempt", "A/0"), ev(6, "start", "C/0", "0")]
    got = pre.count(rows, PARENT)
    assert (got["triggers"], got["untaken"]) == (1, 1)  # A's own pause at 5, not C at 6


def test_a_preemption_without_a_start_is_refused():
    with pytest.raises(ValueError, match="A/0 preempted at 5"):
        pre.count([ev(5, "preempt", "A/0")], PARENT)


def test_a_replayed_job_level_pause_is_one_pause_of_two_chunks(tmp_path):
    """One edge server of 2 workers, no cloud. L (2 chunks of 20 slots) arrives at 0 and
    runs on both (k = 2); S (2 chunks of 3 slots) arrives at 5: SRTF pauses L whole and S
    takes both workers. Two chunk preemptions, one pause, one trigger (S), one decision."""
    toml = cluster_toml([(0, {"a": 2}, 2)], None)
    trace, cluster = write_case(tmp_path, [job("L", 0, 2, "a", 20), job("S", 5, 2, "a", 3)], toml)
    out = tmp_path / "run"
    args = ["replay", trace, "-c", cluster, "-P", "srtf", "-o", str(out), "--events"]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    got = pre.count_run(out)  # also checks chunks against the summary's n_preemptions
    assert {k: got[k] for k in ("chunks", "pauses", "triggers", "decisions", "jobs")} == {
        "chunks": 2,
        "pauses": 1,
        "triggers": 1,
        "decisions": 1,
        "jobs": 1,
    }
    assert got["untaken"] == 0


def test_the_paper_order_counts_seeds_and_takes_unchanged_policies_from_base():
    """SRTF < A_online < A_online-E per seed; a variant that runs only SRTF is compared
    with the same seed's base A_online and A_online-E."""
    got = {
        ("base", "a-online"): {"1": {"u": 5.0}, "2": {"u": 5.0}},
        ("base", "a-online-e"): {"1": {"u": 9.0}, "2": {"u": 9.0}},
        ("base", "srtf"): {"1": {"u": 7.0}, "2": {"u": 4.0}},
        ("workers", "srtf"): {"1": {"u": 1.0}, "2": {"u": 5.0}},  # seed 2: a tie is not <
    }
    assert pre.in_order(got, "base", "u") == "1/2"
    assert pre.in_order(got, "workers", "u") == "1/2"
    got[("workers", "srtf")]["2"] = {"u": 4.9}
    assert pre.in_order(got, "workers", "u") == "2/2"
