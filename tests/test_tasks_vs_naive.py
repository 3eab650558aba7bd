"""Jobs made of data chunks: the engine against the naive reference.

``tests/naive.py::simulate_tasks`` simulates chunk jobs from the edge-cloud model alone;
``tests/chunk_policy.py`` plays the same rule through the engine's actions (Start,
Dispatch, Preempt, HostPS). Over random small edge-cloud instances (a few jobs of 1-5
chunks, 1-3 worker types, 1-3 edge servers with random transmission delays; no cloud, an
unbounded one or a bounded one of typed workers; parallel or serial shipping per server;
with and without migration of preempted chunks; slots of 0.5-2 s) both must give every
chunk the same worker, first start, finish, training time, transfer time, preemption and
migration count, every job the same JCT and zeta_j, and the run the same communication
time and preemption total.

The comparison found three engine bugs, fixed since and kept as the regression tests at
the end: a job's PS was given back at the finish of the chunk a step handled last rather
than the last to finish; a Start and a Preempt of one job in one decision queued it twice
(writing past the end of the kernel's queue); and the end-of-run invariants assumed
constant rates, which zeta_j re-rating breaks.
"""

from __future__ import annotations

import csv
import math
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusched.core.engine import Engine
from gpusched.core.jobs import JobTable
from gpusched.core.policy import Decision, Preempt, Start
from gpusched.experiments.run import replay
from gpusched.io.cluster import ClusterSpec
from gpusched.results.metrics import job_records, summarize
from tests.naive import simulate_tasks

POLICY = str(Path(__file__).with_name("chunk_policy.py"))
COLUMNS = [
    "job_id",
    "submit_time",
    "num_gpus",
    "chunks",
    "batches",
    "epochs",
    "worker_type",
    "batch_time",
    "update_time",
    "grad_mb",
    "bw_mbps",
    "unit_s",
]


def cluster_toml(
    servers: list[tuple[float, list[tuple[str, int]], int]],
    cloud: float | None,
    cloud_workers: list[tuple[str, int]] | None = None,
    serial: tuple[bool, ...] = (),
):
    """Edge servers as (delay s, [(type, count)], PS slots), then the cloud unless None:
    unbounded, or bounded to ``cloud_workers`` (with PS slots without limit); ``serial``
    per server (edge servers, then the cloud): ``ship = "serial"``."""
    out = ['[cluster]\nname = "ec"\n']

    def ship(i: int) -> str:
        return 'ship = "serial"\n' if i < len(serial) and serial[i] else ""

    for i, (delay, workers, ps) in enumerate(servers):
        table = ", ".join(f"{k} = {v}" for k, v in workers)
        out.append(
            f'[[servers]]\ncount = 1\ngpus = 1\ngpu_type = "g"\ntier = "edge"\n'
            f"delay_s = {delay}\nworkers = {{ {table} }}\nps = {ps}\n" + ship(i)
        )
    if cloud is not None:
        if cloud_workers is None:
            kind = "unbounded = true\n"
        else:
            table = ", ".join(f"{k} = {v}" for k, v in cloud_workers)
            kind = f'workers = {{ {table} }}\nps = "unbounded"\n'
        out.append(
            f'[[servers]]\ncount = 1\ngpus = 0\ngpu_type = "c"\ntier = "cloud"\n'
            f"delay_s = {cloud}\n" + kind + ship(len(servers))
        )
    return "\n".join(out)


def run_both(
    jobs,
    servers,
    cloud,
    slot,
    preempt,
    edge_queue,
    per_job=0,
    *,
    cloud_workers=None,
    serial=(),
    migrate=False,
):
    """The engine's run (through gpusched.experiments.run.replay) and the naive one."""
    rows = [
        {
            "job_id": f"j{i}",
            "submit_time": j["submit"],
            "num_gpus": 1,
            "worker_type": j["type"],
            **{c: j[c] for c in COLUMNS[3:] if c != "worker_type"},
        }
        for i, j in enumerate(jobs)
    ]
    with tempfile.TemporaryDirectory() as d:
        trace, cluster = Path(d) / "t.csv", Path(d) / "c.toml"
        with trace.open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=COLUMNS)
            w.writeheader()
            w.writerows(rows)
        cluster.write_text(cluster_toml(servers, cloud, cloud_workers, serial))
        params = [
            f"preempt={preempt}",
            f"edge_queue={edge_queue}",
            f"per_job={per_job}",
            f"migrate={migrate}",
        ]
        _, res = replay(str(trace), POLICY, cluster=str(cluster), params=params, slot_s=slot)
    edge = [(delay, workers) for delay, workers, _ in servers]
    ref = simulate_tasks(
        jobs,
        edge,
        cloud,
        slot,
        preempt=preempt,
        edge_queue=edge_queue,
        per_job=per_job,
        cloud_workers=cloud_workers,
        serial=serial,
        migrate=migrate,
    )
    return res, ref


def check_same(res, ref) -> None:
    s = res.state
    info = res.extra["tasks"]
    assert info["worker"].tolist() == ref["worker"]
    assert s.job_n_preempt.tolist() == ref["n_preempt"]
    assert s.job_first_start.tolist() == pytest.approx(ref["start"], rel=1e-9, abs=1e-9)
    assert s.job_finish.tolist() == pytest.approx(ref["finish"], rel=1e-9, abs=1e-9)
    assert s.job_executed.tolist() == pytest.approx(ref["train"], rel=1e-9, abs=1e-9)
    assert job_records(res)["jct"].tolist() == pytest.approx(ref["jct"], rel=1e-9)
    assert info["zeta"].tolist() == ref["zeta"]
    assert info["transfer_s"].tolist() == pytest.approx(ref["transfer"], rel=1e-9, abs=1e-9)
    assert info["n_migrations"].tolist() == ref["n_migrations"]
    assert info["ps_held_s"] == pytest.approx(ref["ps_held_s"], rel=1e-9, abs=1e-9)
    summary = summarize(res)
    assert summary["total_comm_s"] == pytest.approx(ref["comm_s"], rel=1e-9, abs=1e-6)
    assert summary["n_preemptions"] == sum(ref["n_preempt"])


@st.composite
def instances(draw):
    types = ["a", "b", "c"][: draw(st.integers(1, 3))]
    cloud = draw(st.one_of(st.none(), st.sampled_from([0.0, 1.0, 1.5, 3.0])))
    servers = []
    for _ in range(draw(st.integers(1, 3))):
        counts = [(k, draw(st.integers(0, 2))) for k in types]
        workers = [(k, c) for k, c in counts if c] or [(types[0], 1)]
        n = sum(c for _, c in workers)
        # without a cloud every running job needs an edge PS slot: one per worker at least
        ps = draw(st.integers(0, n + 1) if cloud is not None else st.integers(n, n + 1))
        servers.append((draw(st.sampled_from([0.0, 0.5, 1.0, 2.5])), workers, ps))
    present = sorted({k for _, workers, _ in servers for k, _ in workers})
    jobs = []
    t = 0.0
    for _ in range(draw(st.integers(1, 4))):
        t += draw(st.sampled_from([0.0, 0.5, 1.0, 3.0]))
        jobs.append(
            {
                "submit": t,
                "chunks": draw(st.integers(1, 5)),
                "type": draw(st.sampled_from(present)),
                "batches": draw(st.integers(1, 3)),
                "epochs": draw(st.integers(1, 2)),
                "batch_time": draw(st.integers(1, 6)),
                "update_time": draw(st.integers(0, 2)),
                "grad_mb": draw(st.sampled_from([0.0, 62.5, 125.0, 300.0])),
                "bw_mbps": 1000.0,
                "unit_s": draw(st.sampled_from([1.0, 2.0])),
            }
        )
    slot = draw(st.sampled_from([1.0, 0.5, 2.0]))
    cloud_workers = None
    if cloud is not None and draw(st.booleans()):  # a bounded cloud of typed workers
        counts = [(k, draw(st.integers(0, 2))) for k in present]
        cloud_workers = [(k, c) for k, c in counts if c] or [(present[0], 1)]
    serial = tuple(draw(st.booleans()) for _ in range(len(servers) + 1))
    return jobs, servers, cloud, slot, cloud_workers, serial


@settings(max_examples=80, deadline=None)
@given(
    case=instances(),
    preempt=st.booleans(),
    edge_queue=st.integers(1, 3),
    per_job=st.integers(0, 2),
    migrate=st.booleans(),
)
def test_chunk_jobs_match_the_naive_simulator(case, preempt, edge_queue, per_job, migrate):
    jobs, servers, cloud, slot, cloud_workers, serial = case
    res, ref = run_both(
        jobs,
        servers,
        cloud,
        slot,
        preempt,
        edge_queue,
        per_job,
        cloud_workers=cloud_workers,
        serial=serial,
        migrate=migrate,
    )
    check_same(res, ref)


@st.composite
def migrating_instances(draw):
    """One worker type on 2-3 edge servers and short jobs arriving over a few slots: about
    a fifth of these instances move a preempted chunk (the general ones rarely do)."""
    servers = [
        (draw(st.sampled_from([0.0, 0.5, 1.0, 2.5])), [("a", draw(st.integers(1, 2)))], 2)
        for _ in range(draw(st.integers(2, 3)))
    ]
    jobs = []
    t = 0.0
    for _ in range(draw(st.integers(3, 6))):
        t += draw(st.sampled_from([0.0, 1.0, 2.0, 4.0]))
        jobs.append(
            {
                "submit": t,
                "chunks": draw(st.integers(1, 3)),
                "type": "a",
                "batches": 1,
                "epochs": draw(st.integers(1, 2)),
                "batch_time": draw(st.integers(1, 12)),
                "update_time": 0,
                "grad_mb": draw(st.sampled_from([0.0, 62.5])),
                "bw_mbps": 1000.0,
                "unit_s": 1.0,
            }
        )
    serial = tuple(draw(st.booleans()) for _ in range(len(servers)))
    return jobs, servers, serial, draw(st.sampled_from([1.0, 0.5]))


@settings(max_examples=50, deadline=None)
@given(case=migrating_instances())
def test_moving_preempted_chunks_matches_the_naive_simulator(case):
    jobs, servers, serial, slot = case
    res, ref = run_both(jobs, servers, None, slot, True, 1, serial=serial, migrate=True)
    check_same(res, ref)


# --- hand-checked cases of the reference itself ------------------------------------------


def chunk_job(submit: float, chunks: int, slots: float, kind: str = "a", comm: float = 0.0):
    """A job whose chunk trains ``slots`` slots wholly in the cloud (E = B = 1, G = 0) and
    ``slots + comm`` otherwise (grad_mb chosen for ``comm``)."""
    return {
        "submit": submit,
        "chunks": chunks,
        "type": kind,
        "batches": 1,
        "epochs": 1,
        "batch_time": slots,
        "update_time": 0,
        "grad_mb": comm * 1000 / 16,
        "bw_mbps": 1000.0,
        "unit_s": 1.0,
    }


def test_naive_ships_data_then_runs_fifo_on_the_least_loaded_worker():
    """Two workers of type a on one server (delay 1). Job x (3 chunks of 4 s) at 0: chunks
    0 and 1 start at once on workers 0 and 1 (holding them while their data ships, 0-1)
    and end at 5; chunk 2 goes to worker 0 (both hold one; lowest index), ready at 1, and
    starts when worker 0 frees, at 5: it ends at 9."""
    ref = simulate_tasks([chunk_job(0, 3, 4)], [(1.0, [("a", 2)])], None, 1.0)
    assert ref["worker"] == [0, 1, 0]
    assert ref["start"] == [0.0, 0.0, 5.0]
    assert ref["finish"] == [5.0, 5.0, 9.0]
    assert ref["jct"] == [9.0]
    assert ref["ps_held_s"] == 9.0  # x holds a worker from 0 to 9


def test_naive_slows_cloud_chunks_once_the_job_reaches_the_edge():
    """One worker (delay 0), a cloud (delay 2), edge_queue 1. Job y (4 s, comm 4) holds the
    worker 0-8 (zeta 0: 8 s, 4 of them communication). Job z (2 chunks of 6 s, comm 6) at
    1: the worker has 1 chunk placed, so both chunks go to their cloud workers (1 + k),
    ship 1-3 and train at rate 1 (z is wholly in the cloud, zeta 1): both end at 9."""
    jobs = [chunk_job(0, 1, 4, comm=4), chunk_job(1, 2, 6, comm=6)]
    ref = simulate_tasks(jobs, [(0.0, [("a", 1)])], 2.0, 1.0, edge_queue=1)
    assert ref["worker"] == [0, 1 + 1, 1 + 2]
    assert ref["finish"] == [8.0, 9.0, 9.0]
    assert ref["zeta"] == [0, 1]
    assert ref["comm_s"] == 4.0


def test_naive_runs_the_cloud_chunk_of_a_job_on_the_edge_at_edge_speed():
    """As above with edge_queue 2: z's chunk 0 joins y's worker (1 placed < 2), so z is no
    longer wholly in the cloud (zeta 0), and its chunk 1 (2 placed) goes to the cloud,
    where it ships 1-3 and trains at eq. 1's edge speed, 6 s of work in 12 s: ends at 15.
    Chunk 0 waits for y (ends at 8), then trains 12 s: ends at 20."""
    jobs = [chunk_job(0, 1, 4, comm=4), chunk_job(1, 2, 6, comm=6)]
    ref = simulate_tasks(jobs, [(0.0, [("a", 1)])], 2.0, 1.0, edge_queue=2)
    assert ref["worker"] == [0, 0, 1 + 2]
    assert ref["zeta"] == [0, 0]
    assert ref["finish"] == [8.0, 20.0, 15.0]


def test_naive_slows_a_cloud_chunk_down_when_its_job_reaches_the_edge():
    """One worker (delay 0), a cloud (delay 0), one chunk per job and decision. Job y
    (1 s, comm 1) holds the worker 0-2. Job z (2 chunks of 6 s, comm 6) at 1: chunk 0 goes
    to the cloud (the worker has y) and trains at rate 1 (1/6 of it by 2); at 2 chunk 1
    takes the freed worker, z is no longer wholly in the cloud, and chunk 0 trains its
    other 5/6 at eq. 1's edge speed, 12 s per chunk: 10 s, ending at 12; chunk 1 at 14."""
    jobs = [chunk_job(0, 1, 1, comm=1), chunk_job(1, 2, 6, comm=6)]
    ref = simulate_tasks(jobs, [(0.0, [("a", 1)])], 0.0, 1.0, edge_queue=1, per_job=1)
    assert ref["worker"] == [0, 1 + 1, 0]
    assert ref["zeta"] == [0, 0]
    assert ref["finish"] == pytest.approx([2.0, 12.0, 14.0], rel=1e-12)
    assert ref["jct"] == pytest.approx([2.0, 13.0], rel=1e-12)
    assert ref["comm_s"] == pytest.approx(1.0 + 5.0 + 6.0, rel=1e-12)


def test_naive_preempts_a_longer_chunk_and_resumes_it_on_its_worker():
    """One worker, delay 0. L (20 s) at 0, S (3 s) at 5 with preempt: S is placed on the
    worker (ready at once) and has less work: L is preempted at 5, S runs 5-8, L resumes
    at 8 on the same worker and ends at 23."""
    jobs = [chunk_job(0, 1, 20), chunk_job(5, 1, 3)]
    ref = simulate_tasks(jobs, [(0.0, [("a", 1)])], None, 1.0, preempt=True)
    assert ref["n_preempt"] == [1, 0]
    assert ref["finish"] == [23.0, 8.0]
    assert ref["worker"] == [0, 0]
    assert math.isclose(ref["ps_held_s"], 20.0 + 3.0)


def test_naive_queues_chunks_on_a_bounded_cloud_and_ships_serially():
    """One edge worker (delay 0) and a cloud 2 s away, edge_queue 1. Job y (10 s) holds the
    worker 0-10. Job z (2 chunks of 6 s, comm 6) at 1 goes to the cloud (zeta 1: 6 s per
    chunk). Unbounded: both chunks ship 1-3 and train 3-9 (JCT 8). Bounded to one worker:
    chunk 1 waits on it (ready at 3) until chunk 0 ends at 9, then trains 9-15 (JCT 14).
    Unbounded with serial shipping to the cloud: chunk 1 arrives at 5, trains 5-11 (JCT
    10; it shipped 4 s)."""
    jobs = [chunk_job(0, 1, 10), chunk_job(1, 2, 6, comm=6)]
    edge = [(0.0, [("a", 1)])]
    free = simulate_tasks(jobs, edge, 2.0, 1.0)
    assert free["finish"] == pytest.approx([10.0, 9.0, 9.0]) and free["jct"][1] == 8.0
    one = simulate_tasks(jobs, edge, 2.0, 1.0, cloud_workers=[("a", 1)])
    assert one["worker"] == [0, 1, 1]
    assert one["finish"] == pytest.approx([10.0, 9.0, 15.0]) and one["jct"][1] == 14.0
    assert one["zeta"] == [0, 1]
    serial = simulate_tasks(jobs, edge, 2.0, 1.0, serial=(False, True))
    assert serial["finish"] == pytest.approx([10.0, 9.0, 11.0]) and serial["jct"][1] == 10.0
    assert serial["transfer"] == [0.0, 2.0, 4.0]
    for kw in ({"cloud_workers": [("a", 1)]}, {"serial": (False, True)}):
        res, ref = run_both(jobs, [(0.0, [("a", 1)], 1)], 2.0, 1.0, False, 1, **kw)
        check_same(res, ref)


def test_naive_moves_a_preempted_chunk_to_a_freed_worker():
    """Two servers (delay 1) of one worker each. L (40 s) and M (10 s) at 0 take workers 0
    and 1 (shipping 0-1); S (30 s) at 2 joins worker 0 (ready at 3) and preempts L at 3
    (L trained 2 s). M ends at 11. Pinned, L waits for worker 0 until S ends at 33 and ends
    at 33 + 38 = 71. Moving, L takes worker 1 at 11, ships again 11-12 and ends at 50."""
    jobs = [chunk_job(0, 1, 40), chunk_job(0, 1, 10), chunk_job(2, 1, 30)]
    edge = [(1.0, [("a", 1)]), (1.0, [("a", 1)])]
    pinned = simulate_tasks(jobs, edge, None, 1.0, preempt=True)
    assert pinned["finish"] == [71.0, 11.0, 33.0] and pinned["n_migrations"] == [0, 0, 0]
    moved = simulate_tasks(jobs, edge, None, 1.0, preempt=True, migrate=True)
    assert moved["finish"] == [50.0, 11.0, 33.0] and moved["worker"] == [1, 1, 0]
    assert moved["n_migrations"] == [1, 0, 0] and moved["transfer"] == [2.0, 1.0, 1.0]
    servers = [(1.0, [("a", 1)], 1), (1.0, [("a", 1)], 1)]
    for migrate in (False, True):
        res, ref = run_both(jobs, servers, None, 1.0, True, 1, migrate=migrate)
        check_same(res, ref)
    assert summarize(res)["n_migrations"] == 1 and summarize(res)["migrate_s"] == 1.0


# --- what the comparison found in the engine ------------------------------------------


def test_a_job_keeps_its_ps_until_its_last_holding_chunk_ends():
    """Server 0 (delay 0) has 2 workers, server 1 (delay 1) one; slot 2 s. Job x's 3 chunks
    of 1 s start at 0 on workers 0, 1, 2: chunks 0 and 1 train 0-1, chunk 2 ships 0-1 and
    trains 1-2. x holds a worker over [0, 2), so its PS is held 2 s (eq. 2e); the engine
    gives it back at 1 (chunk 1's finish: the step handles chunks 0, 2, 1 in that order)."""
    servers = [(0.0, [("a", 2)], 2), (1.0, [("a", 1)], 1)]
    res, ref = run_both([chunk_job(0, 3, 1)], servers, None, 2.0, False, 1)
    check_same(res, ref)  # everything else agrees
    assert ref["finish"] == [1.0, 1.0, 2.0] and ref["ps_held_s"] == 2.0
    assert res.extra["tasks"]["ps_held_s"] == 2.0


def test_an_edge_placement_after_the_cloud_does_not_break_the_invariants():
    """The hand-checked case of test_naive_slows_a_cloud_chunk_down_when_its_job_reaches_the_edge
    through the engine: z's cloud chunk trains 1 s at rate 1 and
    10 s at 1/2, so executed (11 s) x its last rate (1/2) is not its work (6 s)."""
    jobs = [chunk_job(0, 1, 1, comm=1), chunk_job(1, 2, 6, comm=6)]
    res, ref = run_both(jobs, [(0.0, [("a", 1)], 1)], 0.0, 1.0, False, 1, 1)
    check_same(res, ref)
    assert res.state.job_finish.tolist() == pytest.approx([2.0, 12.0, 14.0], rel=1e-12)


class StartThenPreempt:
    """Starts job 0 on GPU 0 and preempts it in the same decision."""

    name = "start-then-preempt"
    knows_duration = False
    work_conserving = False
    needs_predictor = False

    def decide(self, view, now):
        return Decision(actions=[Start(0, np.asarray([0], dtype=np.int32)), Preempt(0)])


def test_a_job_started_and_preempted_in_one_decision_is_queued_once():
    """Found by the chunk comparison (a chunk started on its worker, then preempted there by
    a shorter one dispatched in the same decision); the smallest case is two gang jobs on
    one GPU, b arriving later so that the queue has room for the extra entry."""
    table = JobTable(
        job_id=np.array(["a", "b"], dtype=object),
        submit_s=np.array([0.0, 5.0]),
        n_gpus=np.array([1, 1], dtype=np.int32),
        work_s=np.array([2.0, 1.0]),
        row=np.arange(2),
    )
    engine = Engine(table, ClusterSpec.homogeneous(1, 1, name="one"), StartThenPreempt())
    engine.step()  # t = 0: a starts, then is preempted: queued again, once
    assert engine.state.job_n_preempt.tolist() == [1, 0]
    assert engine.snapshot().queued.tolist() == [0]
