"""Elastic gangs and rates that change with progress (docs/architecture.md).

A performance model that declares ``gang_range`` lets a Start name any GPU count in the
job's range; a re-allocation (Preempt + Start in one decision) with no save time costs the
job's load time exactly once; a model with ``progress_rate`` re-rates a holder at the first
decision point at which its remaining work reaches the level the model named. Hand-computed
cases, then the engine against ``tests/naive.py::simulate_elastic`` on random workloads.
Fixed gangs are unaffected (their golden schedules, tests/test_golden.py, stand).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpusched.core.engine import Engine
from gpusched.core.jobs import prepare_jobs
from gpusched.core.policy import Cycles, Decision, Preempt, Start
from gpusched.errors import PolicyError
from gpusched.io.cluster import ClusterSpec
from gpusched.io.trace import Trace
from gpusched.results.metrics import summarize

sys.path.insert(0, str(Path(__file__).parent))
from naive import simulate_elastic  # noqa: E402


class StagedPerf:
    """Rate ``K x speed[j][q]`` on ``K`` GPUs in stage ``q`` (see ``simulate_elastic``)."""

    def __init__(self, work, hi, speed):
        self.work = np.asarray(work, float)
        self.hi = np.asarray(hi, np.int64)
        self.speed = speed
        self.calls: list[tuple[int, int, bool]] = []

    def gang_range(self):
        return np.ones_like(self.hi), self.hi

    def _level(self, j, q):
        s = len(self.speed[j])
        return self.work[j] * (1 - (q + 1) / s) if q + 1 < s else -math.inf

    def progress_rate(self, j, gpus, config, remaining, started):
        q = 0
        while remaining <= self._level(j, q) + 1e-6:
            q += 1
        self.calls.append((j, len(gpus), started))
        return len(gpus) * self.speed[j][q], self._level(j, q)


class ElasticPerf:
    """Elastic gangs whose rate (``K x speed[j][0]``) is fixed for a stint: no milestones."""

    def __init__(self, hi, speed):
        self.hi = np.asarray(hi, np.int64)
        self.speed = speed

    def gang_range(self):
        return np.ones_like(self.hi), self.hi

    def rate(self, j, gpus, config=None):
        return len(gpus) * self.speed[j][0]


class Script:
    """Starts and preemptions at given times: ``plan[t] = [("start", job, gpus) |
    ("preempt", job), ...]``."""

    name = "script"
    knows_duration = False
    needs_predictor = False
    work_conserving = False

    def __init__(self, plan):
        self.plan = plan

    def decide(self, view, now):
        acts = []
        for what in self.plan.get(now, []):
            if what[0] == "start":
                acts.append(Start(what[1], np.asarray(what[2], np.int32)))
            else:
                acts.append(Preempt(what[1]))
        later = [t for t in self.plan if t > now]
        return Decision(actions=acts, wake_at=min(later) if later else None)


class RoundRobin:
    """The scripted policy of ``simulate_elastic``."""

    name = "round-robin"
    knows_duration = False
    needs_predictor = False
    work_conserving = False

    def __init__(self, hi, interval):
        self.hi, self.interval = hi, interval
        self._cycles = Cycles(interval)

    def decide(self, view, now):
        if not self._cycles.due(now):
            return Decision(wake_at=self._cycles.next)
        holder = view.gpu_job[:, 0]
        active = np.union1d(view.queued, view.running).tolist()
        have = {j: int(np.count_nonzero(holder == j)) for j in active}
        want = dict.fromkeys(active, 0)
        left, grew = view.n_gpus, True
        while left > 0 and grew:
            grew = False
            for j in active:
                if left > 0 and want[j] < self.hi[j]:
                    want[j] += 1
                    left -= 1
                    grew = True
        changed = [j for j in active if want[j] != have[j]]
        acts = [Preempt(j) for j in changed if have[j]]
        free = holder < 0
        for j in changed:
            free |= holder == j
        for j in changed:
            if want[j]:
                gpus = np.flatnonzero(free)[: want[j]]
                free[gpus] = False
                acts.append(Start(j, gpus.astype(np.int32)))
        return Decision(actions=acts, wake_at=self._cycles.next)


def _engine(jobs, n_gpus, perf, policy, load, slot=1.0, events=True, per_server=None):
    n = len(jobs)
    trace = Trace(
        job_id=[f"j{i}" for i in range(n)],
        submit_time=[j[0] for j in jobs],
        num_gpus=[1] * n,
        duration=[j[1] for j in jobs],
        iterations=[np.nan] * n,
        model=[""] * n,
        source="t",
    )
    per = per_server or n_gpus
    cluster = ClusterSpec.homogeneous(n_gpus // per, per)
    table = prepare_jobs(trace, cluster)
    return Engine(
        table,
        cluster,
        policy,
        slot_s=slot,
        perf=perf,
        load_s=np.asarray(load, float),
        save_s=np.zeros(n),
        events=events,
    )


def _start_sizes(res, n):
    ev = res.extra["events"]
    out: list[list[int]] = [[] for _ in range(n)]
    for e, j, g in zip(ev["event"], ev["job_id"], ev["gpus"], strict=True):
        if e == "start":
            out[int(j[1:])].append(len(g.split()) if "-" not in g else _count(g))
    return out


def _count(text):
    total = 0
    for part in text.split():
        lo, _, hi = part.partition("-")
        total += int(hi or lo) - int(lo) + 1
    return total


def test_reallocation_charges_the_restart_once():
    # 1 job of 600 s of work at rate K on K GPUs, load 30 s: 2 GPUs at t=0, 4 at t=60
    perf = StagedPerf([600.0], [4], [[1.0]])
    plan = {0.0: [("start", 0, [0, 1])], 60.0: [("preempt", 0), ("start", 0, [0, 1, 2, 3])]}
    res = _engine([(0.0, 600.0)], 4, perf, Script(plan), [30.0]).run()
    st = res.state
    # [0, 30) load, [30, 60) 2 x 30 = 60 s of work, [60, 90) load, then 540 / 4 = 135 s
    assert st.job_finish[0] == pytest.approx(90 + 540 / 4)
    assert st.job_load_spent_s[0] == pytest.approx(60.0)  # two loads, each exactly once
    assert st.job_n_preempt[0] == 1 and st.job_n_futile[0] == 0
    assert st.job_wait_s[0] == pytest.approx(0.0)
    assert st.job_executed[0] == pytest.approx(30 + 135)
    assert st.job_attained[0] == pytest.approx(2 * 30 + 4 * 135)  # GPU-s at each size
    held = res.extra["held_gpu_s"][0]
    assert held == pytest.approx(2 * 60 + 4 * (30 + 135))
    s = summarize(res)
    assert s["gpu_utilization"] == pytest.approx(held / (4 * st.job_finish[0]))
    assert _start_sizes(res, 1) == [[2, 4]]
    assert [(j, k, started) for j, k, started in perf.calls] == [(0, 2, True), (0, 4, True)]


def test_reallocation_while_loading_is_futile():
    perf = StagedPerf([600.0], [4], [[1.0]])
    plan = {
        0.0: [("start", 0, [0, 1])],
        60.0: [("preempt", 0), ("start", 0, [0, 1, 2, 3])],
        70.0: [("preempt", 0), ("start", 0, [0])],  # 10 s into the second load
    }
    st = _engine([(0.0, 600.0)], 4, perf, Script(plan), [30.0]).run().state
    assert st.job_n_futile[0] == 1 and st.job_futile_s[0] == pytest.approx(10.0)
    assert st.job_load_spent_s[0] == pytest.approx(30 + 10 + 30)
    assert st.job_finish[0] == pytest.approx(100 + 540 / 1)


def test_elastic_sizes_are_checked():
    perf = StagedPerf([600.0], [2], [[1.0]])
    plan = {0.0: [("start", 0, [0, 1, 2])]}
    with pytest.raises(PolicyError, match="needs 1 to 2 GPU indices"):
        _engine([(0.0, 600.0)], 4, perf, Script(plan), [0.0]).run()


def test_fixed_gangs_keep_their_size():
    plan = {0.0: [("start", 0, [0, 1])]}
    trace = Trace(["a"], [0.0], [1], [10.0], [np.nan], [""], source="t")
    cluster = ClusterSpec.homogeneous(1, 4)
    eng = Engine(prepare_jobs(trace, cluster), cluster, Script(plan))
    with pytest.raises(PolicyError, match="needs exactly 1 GPU indices"):
        eng.run()


def test_rate_changes_at_the_milestone():
    # 100 s of work, rate 1 then 4 from remaining 50 on: the milestone at t=50 (a slot
    # boundary) re-rates there; with slot 7 the decision point is t=56 (6 s more at rate 1)
    for slot, t_rerate in ((1.0, 50.0), (7.0, 56.0)):
        perf = StagedPerf([100.0], [1], [[1.0, 4.0]])
        plan = {0.0: [("start", 0, [0])]}
        st = _engine([(0.0, 100.0)], 1, perf, Script(plan), [0.0], slot=slot).run().state
        left = 100.0 - t_rerate
        assert st.job_finish[0] == pytest.approx(t_rerate + left / 4)
        assert perf.calls == [(0, 1, True), (0, 1, False)]


def test_no_progress_rate_no_milestones():
    perf = ElasticPerf([1], [[1.0, 4.0]])
    plan = {0.0: [("start", 0, [0])]}
    st = _engine([(0.0, 100.0)], 1, perf, Script(plan), [0.0]).run().state
    assert st.job_finish[0] == pytest.approx(100.0)


@st.composite
def workloads(draw):
    n = draw(st.integers(1, 5))
    submits = sorted(draw(st.lists(st.integers(0, 300), min_size=n, max_size=n)))
    jobs = [(float(s), float(draw(st.integers(20, 2000)))) for s in submits]
    hi = [draw(st.integers(1, 4)) for _ in range(n)]
    speed = [
        [draw(st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.0])) for _ in range(draw(st.integers(1, 4)))]
        for _ in range(n)
    ]
    load = [float(draw(st.sampled_from([0, 0, 15, 30, 45]))) for _ in range(n)]
    slot = draw(st.sampled_from([1.0, 5.0]))
    interval = draw(st.sampled_from([20.0, 60.0]))
    n_gpus = draw(st.sampled_from([2, 4]))
    return jobs, hi, speed, load, slot, interval, n_gpus


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads())
def test_engine_matches_naive(case):
    jobs, hi, speed, load, slot, interval, n_gpus = case
    hi = [min(h, n_gpus) for h in hi]
    want = simulate_elastic(jobs, n_gpus, hi, speed, load, slot, interval)
    perf = StagedPerf([w for _, w in jobs], hi, speed)
    res = _engine(jobs, n_gpus, perf, RoundRobin(hi, interval), load, slot).run()
    st = res.state
    sizes = _start_sizes(res, len(jobs))
    for j, w in enumerate(want):
        assert st.job_first_start[j] == pytest.approx(w["first_start"], abs=1e-6)
        assert st.job_finish[j] == pytest.approx(w["finish"], abs=1e-6)
        assert st.job_n_preempt[j] == w["n_preempt"]
        assert st.job_n_futile[j] == w["n_futile"]
        assert st.job_load_spent_s[j] == pytest.approx(w["load"], abs=1e-6)
        assert st.job_futile_s[j] == pytest.approx(w["futile"], abs=1e-6)
        assert sizes[j] == w["gpus"]
