"""Jobs placed by roles: the resource ledger, Allocate / Reject, the horizon (PD-ORS core).

Hand-checked schedules of eq. 1 through the engine, every refusal the engine owes a
policy, the naive reference (``tests/naive.py::simulate_roles``) against the engine under
fifo-ps, and a property test that no machine resource is ever over-committed and that
rejected jobs never run.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusched.core.engine import Engine
from gpusched.core.jobs import prepare_jobs
from gpusched.core.ledger import Ledger, capacities
from gpusched.core.policy import Allocate, Decision, Reject, Start
from gpusched.core.state import FINISHED, QUEUED, REJECTED
from gpusched.errors import ClusterError, PolicyError, TraceError
from gpusched.io.cluster import parse_cluster
from gpusched.io.trace import Trace
from gpusched.jobmodels.ps import PSJobModel, params_of
from gpusched.results.metrics import job_records, summarize
from tests.naive import simulate_roles

CLUSTER = """
[cluster]
name = "two"
description = "2 machines"
[[servers]]
count = 2
gpus = 8
gpu_type = "V100"
cpus = 20
mem_gb = 64.0
storage_gb = 100.0
"""

BASE = {
    "epochs": 10,
    "samples": 10_000,
    "global_batch": 8,
    "ps_ratio": 2,
    "sample_time": 1e-3,
    "grad_mb": 100,
    "bw_internal": 1e5,
    "bw_external": 1e4,
    "worker_gpus": 1,
    "worker_cpus": 2,
    "worker_mem_gb": 4,
    "worker_storage_gb": 5,
    "ps_gpus": 0,
    "ps_cpus": 2,
    "ps_mem_gb": 4,
    "ps_storage_gb": 5,
    "utility_priority": 10,
    "utility_decay": 0.5,
    "utility_target": 10,
}


def ps_trace(n: int = 3, submit=None, **over) -> Trace:
    submit = list(range(n)) if submit is None else submit
    extra = {k: np.array([str(over.get(k, v))] * n, dtype=object) for k, v in BASE.items()}
    for k, v in over.items():
        if k not in BASE:
            extra[k] = np.array([str(v)] * n, dtype=object)
    return Trace(
        job_id=np.array([f"j{i}" for i in range(n)], dtype=object),
        submit_time=np.asarray(submit, dtype=float),
        num_gpus=np.zeros(n, dtype=np.int32),
        duration=np.full(n, np.nan),
        iterations=np.full(n, np.nan),
        model=np.array([""] * n, dtype=object),
        extra=extra,
        source="ps.csv",
        line=np.arange(2, n + 2),
    )


def engine(trace: Trace, policy, until: float = math.inf) -> Engine:
    cluster = parse_cluster(CLUSTER)
    jobs = prepare_jobs(trace, cluster)
    roles = PSJobModel().roles(jobs, cluster)
    return Engine(jobs, cluster, policy, until_s=until, roles=roles, mode="python")


class Scripted:
    """Plays a fixed list of actions per decision time; records what it saw."""

    name = "scripted"
    knows_duration = False
    work_conserving = False
    needs_predictor = False
    places_roles = True

    def __init__(self, script: dict[float, list], wake: dict[float, float] | None = None):
        self.script = script
        self.wakes = wake or {}
        self.seen: list[float] = []

    def decide(self, view, now):
        self.seen.append(now)
        return Decision(actions=self.script.get(now, []), wake_at=self.wakes.get(now))


def counts(*xs):
    return np.asarray(xs, dtype=np.int64)


def per_sample(p, j, n_w, n_s, internal):
    b = p.b_int[j] if internal else p.b_ext[j]
    return p.tau[j] + (2 * p.grad_mb[j] / n_s) / b / (p.batch[j] / n_w)


# --- eq. 1 by hand ---------------------------------------------------------------------


def test_eq1_colocated_and_spread_by_hand():
    p = params_of(ps_trace(1))
    # tau 1e-3 s, g 100 MB, F 8; 4 workers + 2 PSs on one machine: internal 1e5 MB/s
    # per sample: 1e-3 + (2*100/2)/1e5/(8/4) = 1e-3 + 5e-4; 4 workers -> 4/1.5e-3 samples/s
    assert p.samples_per_s(0, counts(4, 0), counts(2, 0)) == pytest.approx(4 / 1.5e-3)
    # one worker on the other machine: the whole job talks at 1e4 MB/s (Fact 1)
    # per sample: 1e-3 + (2*100/2)/1e4/(8/5) = 1e-3 + 6.25e-3
    assert p.samples_per_s(0, counts(4, 1), counts(2, 0)) == pytest.approx(5 / 7.25e-3)
    # ideal: F = 8 workers at ratio 2 (4 PSs) on one machine: 1e-3 + 400/(1e5*8)
    assert p.ideal_samples_per_s[0] == pytest.approx(8 / 1.5e-3)
    assert p.duration_s[0] == pytest.approx(1e5 * 1.5e-3 / 8)
    assert p.samples_per_s(0, counts(0, 0), counts(1, 0)) == 0.0


def test_allocate_start_resize_pause_finish_exactly():
    trace = ps_trace(1)
    p = params_of(trace)
    v1 = p.samples_per_s(0, counts(4, 0), counts(2, 0))
    v2 = p.samples_per_s(0, counts(2, 2), counts(1, 1))
    script = {
        0.0: [Allocate(0, counts(4, 0), counts(2, 0))],  # co-located
        2.0: [Allocate(0, counts(2, 2), counts(1, 1))],  # spread: slower
        3.0: [Allocate(0, counts(0, 0), counts(0, 0))],  # paused
        5.0: [Allocate(0, counts(4, 0), counts(2, 0))],
    }
    pol = Scripted(script, wake={0.0: 2.0, 2.0: 3.0, 3.0: 5.0})
    res = engine(trace, pol).run()
    left = 1e5 - 2 * v1 - 1 * v2
    assert left > 0
    want = 5.0 + left / v1
    st_ = res.state
    assert st_.job_status[0] == FINISHED
    assert st_.job_finish[0] == pytest.approx(want, rel=1e-12)
    assert st_.job_wait_s[0] == pytest.approx(2.0)  # the pause is waiting
    assert st_.job_n_preempt[0] == 1
    s = summarize(res)
    assert s["n_admitted"] == 1 and s["n_rejected"] == 0
    # resources held: 4 workers (1 GPU each) for 2 s, 2 for 1 s... GPU-s = 4*2 + 4*1 + 4*(want-5)
    gpu_s = 4 * 2 + 4 * 1 + 4 * (want - 5.0)
    assert s["gpu_utilization"] == pytest.approx(gpu_s / (16 * want))
    assert s["total_utility"] == pytest.approx(10 / (1 + math.exp(0.5 * (want - 10))))


def test_reject_is_terminal_and_not_unfinished():
    pol = Scripted({0.0: [Reject(0)], 1.0: [Allocate(1, counts(6, 0), counts(3, 0))]})
    res = engine(ps_trace(2), pol).run()
    assert res.state.job_status[0] == REJECTED
    assert res.state.job_status[1] == FINISHED
    s = summarize(res)
    assert (s["n_rejected"], s["n_unfinished"], s["n_finished"], s["n_admitted"]) == (1, 0, 1, 1)
    assert list(job_records(res)["status"]) == ["rejected", "finished"]


def test_horizon_reports_unfinished():
    pol = Scripted({0.0: [Allocate(0, counts(1, 0), counts(1, 0))]})
    res = engine(ps_trace(1, horizon=3), pol, until=3.0).run()
    s = summarize(res)
    assert s["n_unfinished"] == 1 and s["n_finished"] == 0
    assert s["median_training_slots"] == 3.0  # the horizon T for an unfinished job (Fig. 9)
    assert res.state.job_status[0] != FINISHED


# --- refusals --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "msg"),
    [
        (Allocate(0, counts(5, 4), counts(1, 1)), "9 workers, more than its global batch allows"),
        (Allocate(0, counts(8, 2), counts(0, 0)), "more than its global batch"),
        (Allocate(0, counts(2, 0), counts(0, 0)), "no parameter server"),
        (Allocate(0, counts(0, 0), counts(1, 0)), "no worker"),
        (Allocate(0, counts(7, 0), counts(4, 0)), "would put 22 cpus on machine 0"),
        (Allocate(0, counts(1, 0, 0), counts(1, 0, 0)), "2 integer counts"),
        (Allocate(0, np.array([1.5, 0]), counts(1, 0)), "2 integer counts"),
        (Allocate(0, counts(-1, 2), counts(1, 0)), "negative count"),
        (Allocate(1, counts(1, 0), counts(1, 0)), "before its arrival"),
        (Start(0), "start it with Allocate"),
        (Reject(7), "unknown job index 7"),
    ],
)
def test_bad_actions_are_policy_errors(action, msg):
    pol = Scripted({0.0: [action]})
    with pytest.raises(PolicyError, match=msg):
        engine(ps_trace(2, submit=[0, 5]), pol).run()


def test_reject_after_running_is_refused():
    pol = Scripted(
        {
            0.0: [Allocate(0, counts(1, 0), counts(1, 0))],
            1.0: [Allocate(0, counts(0, 0), counts(0, 0))],
            2.0: [Reject(0)],
        },
        wake={0.0: 1.0, 1.0: 2.0},
    )
    with pytest.raises(PolicyError, match="only a job that never ran"):
        engine(ps_trace(1), pol).run()


def test_gang_policy_on_role_jobs_and_mixed_traces_are_refused():
    from gpusched.core.registry import load_policy_class, make_policy

    fifo = make_policy(load_policy_class("fifo"), {}, 0)
    with pytest.raises(PolicyError, match="placed by roles.*fifo-ps"):
        engine(ps_trace(2), fifo)
    import dataclasses

    mixed = ps_trace(2)
    mixed = dataclasses.replace(
        mixed, num_gpus=np.array([0, 1], dtype=np.int32), duration=np.array([np.nan, 5.0])
    )
    with pytest.raises(TraceError, match="one kind only"):
        engine(mixed, Scripted({}))


def test_role_policy_on_gang_trace_is_refused():
    from gpusched.core.jobs import JobTable
    from gpusched.io.cluster import ClusterSpec

    table = JobTable(
        job_id=np.array(["a"], dtype=object),
        submit_s=np.zeros(1),
        n_gpus=np.ones(1, dtype=np.int32),
        work_s=np.ones(1),
        row=np.arange(1),
    )
    with pytest.raises(PolicyError, match="no job of this trace is placed by roles"):
        Engine(table, ClusterSpec.homogeneous(1, 2), Scripted({}), mode="python")


@pytest.mark.parametrize("name", ["fifo-ps", "drf", "dorm", "pd-ors", "oasis"])
def test_roles_larger_than_every_machine_are_refused(name):
    # machines of 20 vCPUs and 100 GB of storage: a worker of 25 vCPUs, or a PS of 150 GB,
    # fits nowhere and would never run (fifo-ps left it unfinished, blocking the rest)
    from gpusched.core.registry import load_policy_class, make_policy

    pol = make_policy(load_policy_class(name), {}, 0)
    trace = ps_trace(3, worker_cpus=2, horizon=20)
    trace.extra["worker_cpus"] = np.array(["2", "25", "25"], dtype=object)
    with pytest.raises(TraceError) as err:
        engine(trace, pol)
    msg = str(err.value)
    assert msg.startswith("ps.csv:3: column 'worker_cpus': 2 job(s) have a worker that fits")
    assert "'j1' asks 25 cpus (a machine has at most 20" in msg and "\n" not in msg
    trace = ps_trace(2, ps_storage_gb=150, horizon=20)
    with pytest.raises(TraceError, match=r"ps.csv:2: column 'ps_storage_gb': 2 job\(s\) have a"):
        engine(trace, pol)
    engine(ps_trace(2, worker_cpus=20, horizon=20), pol)  # a machine's worth fits


def test_bad_ps_columns_name_file_line_and_column():
    t = ps_trace(2, worker_cpus="-1")
    with pytest.raises(TraceError, match=r"ps.csv:2: column 'worker_cpus': expected a number >= 0"):
        params_of(t)
    t = ps_trace(2, global_batch="2.5")
    with pytest.raises(TraceError, match=r"ps.csv:3: column 'global_batch': expected an integer"):
        params_of(t)
    t = ps_trace(1)
    del t.extra["grad_mb"]
    with pytest.raises(TraceError, match="need the columns grad_mb"):
        params_of(t)


def test_capacities_need_every_resource():
    text = CLUSTER.replace("cpus = 20\n", "")
    with pytest.raises(ClusterError, match="gives no cpus"):
        capacities(parse_cluster(text))


def test_ledger_integrates_and_checks():
    led = Ledger(
        np.array([[4.0, 10.0]]), np.array([[1.0, 2.0]]), np.array([[0.0, 1.0]]), np.array([10])
    )
    assert led.problem(0, counts(4), counts(2)) is None
    assert "would put 5 gpus" in led.problem(0, counts(5), counts(1))
    led.set(0, counts(2), counts(1), 1.0)
    assert led.free.tolist() == [[2.0, 5.0]]
    led.release(0, 4.0)
    assert led.held_s.tolist() == [6.0, 15.0]
    assert led.check() is None and led.free.tolist() == [[4.0, 10.0]]


# --- against the naive reference -------------------------------------------------------


def _naive_jobs(trace: Trace):
    p = params_of(trace)
    return [
        {
            "submit": float(trace.submit_time[j]),
            "V": float(p.work_samples[j]),
            "tau": float(p.tau[j]),
            "g": float(p.grad_mb[j]),
            "F": int(p.batch[j]),
            "gamma": float(p.gamma[j]),
            "b_int": float(p.b_int[j]),
            "b_ext": float(p.b_ext[j]),
            "worker": p.worker[j].tolist(),
            "ps": p.ps[j].tolist(),
        }
        for j in range(len(trace))
    ]


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 8),
    gaps=st.lists(st.integers(0, 4), min_size=8, max_size=8),
    workers=st.integers(1, 10),
    batch=st.integers(1, 12),
    gamma=st.integers(1, 4),
    cpus=st.integers(1, 6),
)
def test_fifo_ps_matches_naive(n, gaps, workers, batch, gamma, cpus):
    from gpusched.core.registry import load_policy_class, make_policy

    submit = np.cumsum(gaps[:n]).astype(float)
    trace = ps_trace(n, submit=submit, global_batch=batch, ps_ratio=gamma, worker_cpus=cpus)
    pol = make_policy(load_policy_class("fifo-ps"), {"workers": workers}, 0)
    horizon = 200.0
    res = engine(trace, pol, until=horizon).run()
    cap = capacities(parse_cluster(CLUSTER)).tolist()
    ref = simulate_roles(_naive_jobs(trace), cap, workers, horizon)
    st_ = res.state
    for j in range(n):
        if ref["start"][j] is None:
            assert math.isnan(st_.job_first_start[j])
        else:
            assert st_.job_first_start[j] == ref["start"][j]
        if ref["finish"][j] is None:
            assert st_.job_status[j] != FINISHED
        else:
            assert st_.job_finish[j] == pytest.approx(ref["finish"][j], rel=1e-9)


# --- property: no resource over-committed, rejected jobs never run -----------------------


class Random:
    """Random Allocate / Reject actions that the ledger allows (it asks view.ledger)."""

    name = "random-roles"
    knows_duration = False
    work_conserving = False
    needs_predictor = False
    places_roles = True

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)

    def decide(self, view, now):
        led = view.ledger
        free = led.free
        acts = []
        for j in np.concatenate([view.queued, view.running]).tolist():
            roll = self.rng.random()
            if roll < 0.1 and view.job_status[j] == QUEUED and np.isnan(view.job_first_start[j]):
                acts.append(Reject(j))
                continue
            w = self.rng.integers(0, 3, size=led.n_machines)
            s = self.rng.integers(0, 2, size=led.n_machines)
            if w.sum() == 0 or s.sum() == 0:
                w[:] = 0
                s[:] = 0
            old_w, old_s = led.allocation(j)
            d = np.outer(w, led.worker[j]) + np.outer(s, led.ps[j])
            d_old = np.outer(old_w, led.worker[j]) + np.outer(old_s, led.ps[j])
            if w.sum() <= led.max_workers[j] and (free + d_old - d >= -1e-9).all():
                acts.append(Allocate(j, w, s))
                free = free + d_old - d
        return Decision(actions=acts, wake_at=now + 1)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 10))
def test_random_role_policy_never_overcommits(seed, n):
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.integers(0, 10, size=n)).astype(float)
    res = engine(ps_trace(n, submit=submit), Random(seed), until=60.0).run()
    # the engine checked the ledger after every decision; recheck from the timeline
    tl = res.timeline
    cap = capacities(parse_cluster(CLUSTER)).sum(axis=0)
    for r, name in enumerate(("gpus", "cpus", "mem_gb", "storage_gb")):
        assert (tl[f"held_{name}"] <= cap[r] + 1e-9).all()
    rejected = res.state.job_status == REJECTED
    assert np.isnan(res.state.job_first_start[rejected]).all()
    assert (res.state.job_executed[rejected] == 0).all()
