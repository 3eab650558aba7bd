"""The dorm baseline: Dorm's utilisation-fairness MILP for parameter-server jobs.

A split worked out by hand on two machines (with and without the fairness bound, and the
round-robin placement of the result), the MILP against brute-force enumeration on small
random instances (fairness bounds met whenever they can be, utilisation then maximal, the
adjustment cap kept), the adjustment cap across the decisions of a run, end-to-end runs
through the engine (which checks the resource ledger after every decision) and
determinism.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusched.algorithms.dorm_milp import (
    ADJUST_WEIGHT,
    FAIRNESS_WEIGHT,
    _count_terms,
    solve_counts,
)
from gpusched.core.ledger import capacities
from gpusched.core.registry import load_policy_class, make_policy
from gpusched.core.state import FINISHED, REJECTED
from gpusched.errors import ParamError
from gpusched.io.cluster import parse_cluster
from gpusched.results.metrics import policy_notes
from tests.test_ledger import CLUSTER, engine, ps_trace

CAP = capacities(parse_cluster(CLUSTER))  # 2 machines x (8 GPUs, 20 CPUs, 64 GB, 100 GB)
TOTAL = CAP.sum(axis=0)  # (16, 40, 128, 200)


def trace(cols: dict[str, list], submit: list[float]):
    """A PS trace whose columns in ``cols`` differ per job (the rest from BASE)."""
    t = ps_trace(len(submit), submit=submit)
    for k, vals in cols.items():
        t.extra[k] = np.array([str(v) for v in vals], dtype=object)
    return t


class Recorder:
    """Wraps a dorm policy; logs each decision's Allocates and the jobs running before."""

    name = "dorm"
    knows_duration = False
    needs_predictor = False
    work_conserving = False
    places_roles = True

    def __init__(self, **params):
        self.inner = make_policy(load_policy_class("dorm"), params, 0)
        self.log: list[tuple[float, set[int], list[tuple[int, list[int], list[int]]]]] = []

    def prepare(self, jobs, cluster):
        self.inner.prepare(jobs, cluster)

    def decide(self, view, now):
        before = set(view.running.tolist())
        d = self.inner.decide(view, now)
        acts = [(a.job, a.workers.tolist(), a.ps.tolist()) for a in d.actions]
        self.log.append((now, before, acts))
        return d


# --- by hand ----------------------------------------------------------------------------

# Job A: worker (1 GPU, 2 CPU, 4 GB, 5 GB), F = 16. Job B: worker (0, 2, 1, 1), F = 8.
# Both: PS (0, 2, 4, 5), gamma = 2, so p = ceil(n / 2). CPUs bind: 2 (n + p) per job, 40
# in all, so n_A + p_A + n_B + p_B <= 20. Utilisation per worker (sum of demand / total):
# A 1/16 + 2/40 + 4/128 + 5/200 = 0.16875, B 2/40 + 1/128 + 1/200 = 0.0628; per PS both
# 0.10625. Without fairness every CPU goes to A: n_A = 13, p_A = 7 (14 workers would need
# 21 CPU pairs). With fairness 0.1 each job's CPU share (CPUs are both jobs' dominant
# resource: A's worker + half a PS is (1, 3, 6, 7.5) / total = (.0625, .075, .047, .0375))
# must be >= 0.9 * min(1/2, share at F) = 0.45, i.e. n + p >= 9: B gets n_B = 6 (6 + 3), the
# least that meets it; A the rest, 11 CPU pairs: n_A = 7 (7 + 4).
PS = {"ps_ratio": [2, 2], "ps_gpus": [0, 0], "ps_cpus": [2, 2], "ps_mem_gb": [4, 4]}
HAND = {
    **PS,
    "ps_storage_gb": [5, 5],
    "global_batch": [16, 8],
    "worker_gpus": [1, 0],
    "worker_cpus": [2, 2],
    "worker_mem_gb": [4, 1],
    "worker_storage_gb": [5, 1],
}


def test_milp_split_by_hand():
    w = np.array([[1, 2, 4, 5], [0, 2, 1, 1]], dtype=float)
    p = np.array([[0, 2, 4, 5]] * 2, dtype=float)
    args = (w, p, np.array([2.0, 2.0]), np.array([16, 8]), TOTAL, np.zeros(2, int))
    kw = {"max_adjust": 2, "time_limit_s": 10.0, "node_limit": 1000}
    fair = solve_counts(*args, np.zeros(2, bool), slack=0.1, **kw)
    unfair = solve_counts(*args, np.zeros(2, bool), slack=1.0, **kw)
    assert (fair.workers.tolist(), fair.ps.tolist()) == ([7, 6], [4, 3])
    assert (unfair.workers.tolist(), unfair.ps.tolist()) == ([13, 0], [7, 0])
    assert (fair.status, unfair.status) == ("optimal", "optimal")


def running_counts(worker, max_workers, current, *, slack, max_adjust) -> list[int]:
    """Workers per job from the MILP, every job running with PSs of no demand (gamma 2)."""
    k = len(current)
    got = solve_counts(
        np.array(worker, dtype=float),
        np.zeros((k, 4)),
        np.full(k, 2.0),
        np.array(max_workers),
        TOTAL,
        np.array(current),
        np.ones(k, bool),
        slack=slack,
        max_adjust=max_adjust,
        time_limit_s=10.0,
        node_limit=1000,
    )
    assert got.status == "optimal"
    return got.workers.tolist()


# Utilisation per worker (sum of demand / TOTAL): (1, 2, 4, 5) 0.16875, (0, 2, 1, 1)
# 0.0628, (0, 1, 1, 1) 0.0378.
@pytest.mark.parametrize(
    ("max_adjust", "expected"), [(0, [1, 1, 1]), (1, [4, 1, 1]), (2, [4, 4, 1]), (3, [4, 4, 4])]
)
def test_at_most_max_adjust_running_jobs_grow_the_most_useful_first(max_adjust, expected):
    # no fairness; all three at F = 4 fit (16 of 40 CPUs), so each wants to grow from 1
    w = [[1, 2, 4, 5], [0, 2, 1, 1], [0, 1, 1, 1]]
    got = running_counts(w, [4, 4, 4], [1, 1, 1], slack=1.0, max_adjust=max_adjust)
    assert got == expected


@pytest.mark.parametrize(("max_adjust", "expected"), [(1, [8, 8]), (2, [8, 12])])
def test_resizing_a_running_job_ends_its_shortfall(max_adjust, expected):
    # A: worker (0, 2, 1, 1), F = 8, CPU-dominant (0.05 a worker): bound 0.9 min(1/2, 0.4)
    # = 0.36 needs 8 workers; it runs 1 (shortfall 0.31). B: worker (1, 2, 4, 5), F = 16,
    # GPU-dominant (0.0625): bound 0.45 needs 8, which it runs. One resize: A to 8 (ends
    # 0.31 of shortfall) beats B to 16 (+1.35 utilisation). Two: also B, to 12 (CPUs: 16 +
    # 2 n_B <= 40).
    w = [[0, 2, 1, 1], [1, 2, 4, 5]]
    assert running_counts(w, [8, 16], [1, 8], slack=0.1, max_adjust=max_adjust) == expected


def test_engine_places_the_hand_split_round_robin():
    rec = Recorder()
    res = engine(trace(HAND, [0.0, 0.0]), rec, until=5.0).run()
    now, before, acts = rec.log[0]
    assert now == 0.0 and before == set()
    # round-robin from machine 0: A's 7 workers 0,1,0,1,0,1,0 then 4 PSs 1,0,1,0; B's 6
    # workers from machine 1: 1,0,1,0,1,0, 3 PSs 1,0,1 -> 20 CPUs on each machine
    assert acts == [(0, [4, 3], [2, 2]), (1, [3, 3], [1, 2])]
    assert res.timeline["held_cpus"][0] == pytest.approx(40.0)


# --- the MILP against brute force ---------------------------------------------------------


def ceil_ps(n: int, gamma: float) -> int:
    return 0 if n == 0 else math.ceil(n / gamma - 1e-9)


@settings(max_examples=60, deadline=None)
@given(
    k=st.integers(1, 3),
    data=st.data(),
    slack=st.sampled_from([0.0, 0.1, 0.5, 1.0]),
    max_adjust=st.integers(0, 3),
)
def test_milp_matches_brute_force(k, data, slack, max_adjust):
    ints = st.integers(0, 6)
    w = np.array(
        [[data.draw(st.integers(0, 2))] + [data.draw(ints) for _ in range(3)] for _ in range(k)],
        dtype=float,
    )
    p = np.array([[0] + [data.draw(ints) for _ in range(3)] for _ in range(k)], dtype=float)
    w[:, 1] = np.maximum(w[:, 1], 1)  # every worker and PS uses some CPU
    p[:, 1] = np.maximum(p[:, 1], 1)
    gamma = np.array([data.draw(st.sampled_from([1.0, 1.5, 2.0, 3.0])) for _ in range(k)])
    big_f = np.array([data.draw(st.integers(1, 7)) for _ in range(k)])
    cur = np.array([data.draw(st.integers(0, int(f))) for f in big_f])
    # small clusters, so that capacity binds and rounding matters
    cap = np.array(
        [data.draw(st.integers(lo, hi)) for lo, hi in ((1, 8), (2, 24), (2, 40), (2, 40))]
    )

    def held(n):
        return sum(n[i] * w[i] + ceil_ps(n[i], gamma[i]) * p[i] for i in range(k))

    while (held(cur) > cap).any():  # what runs now fits: take workers off the largest
        cur[int(np.argmax(cur))] -= 1
    running = cur > 0
    # the fairness bound, from its definition
    unit = (w + p / gamma[:, None]) / cap
    r = unit.argmax(axis=1)

    def share(i, n):
        return (n * w[i, r[i]] + ceil_ps(n, gamma[i]) * p[i, r[i]]) / cap[r[i]]

    bound = [(1 - slack) * min(1 / k, share(i, int(big_f[i]))) for i in range(k)]

    def util(n):
        return float((held(n) / cap).sum())

    def objective(n):  # the MILP's own: shortfall first, then utilisation, then adjustments
        short = sum(max(0.0, bound[i] - share(i, n[i])) for i in range(k))
        adjusted = int((n != cur)[running].sum())
        return FAIRNESS_WEIGHT * short - util(n) + ADJUST_WEIGHT * adjusted

    feasible = []
    for n in itertools.product(*(range(int(f) + 1) for f in big_f)):
        n = np.array(n)
        if (held(n) <= cap + 1e-9).all() and (n != cur)[running].sum() <= max_adjust:
            feasible.append(objective(n))
    got = solve_counts(  # at the default gap (0): the optimum
        w,
        p,
        gamma,
        big_f,
        cap,
        cur,
        running,
        slack=slack,
        max_adjust=max_adjust,
        time_limit_s=10.0,
        node_limit=10_000,
    )
    assert got.status == "optimal" and got.gap <= 1e-6
    got, got_ps = got.workers, got.ps
    assert got_ps.tolist() == [ceil_ps(got[i], gamma[i]) for i in range(k)]  # eq. 2
    assert (held(got) <= cap + 1e-9).all()
    assert (got != cur)[running].sum() <= max_adjust
    best = min(feasible)
    assert objective(got) == pytest.approx(best, rel=1e-6, abs=1e-7)


@settings(max_examples=200, deadline=None)
@given(
    share_w=st.floats(0.001, 0.2),
    share_p=st.floats(0.0, 0.2),
    gamma=st.sampled_from([1.0, 1.5, 2.0, 3.0, 7.0]),
    big_f=st.integers(0, 40),
    frac=st.floats(0.0, 1.0),
)
def test_the_rounding_cut_holds_at_every_count_and_is_the_steepest(
    share_w, share_p, gamma, big_f, frac
):
    def share(n):
        return share_w * n + share_p * ceil_ps(n, gamma)

    bound = frac * share(big_f)  # the bound is at most the share at F
    _, slope, n2 = _count_terms(
        np.array([share_w]),
        np.array([share_p]),
        np.array([gamma]),
        np.array([big_f]),
        np.array([bound]),
    )
    t, first = float(slope[0]), int(n2[0])
    short = [max(0.0, bound - share(n)) for n in range(big_f + 1)]
    assert all(t * (first - n) <= short[n] + 1e-12 for n in range(big_f + 1))  # valid
    if t > 0:
        assert first == min(n for n in range(big_f + 1) if bound - share(n) <= 0)
        assert any(abs(t * (first - n) - short[n]) < 1e-12 for n in range(first))  # steepest
    else:
        assert first == 0 or bound - share(0) <= 0


@pytest.mark.parametrize("top", [40, 1_100_000])  # one block; the big job in one alone
def test_the_cut_and_the_ps_slack_of_many_jobs_are_each_jobs_own(top):
    rng = np.random.default_rng(7)
    k = 12
    f = rng.integers(0, 60, k)
    f[3] = top
    gamma = rng.choice([1.0, 1.5, 2.0, 3.0, 7.0], k)
    share_w, share_p = rng.uniform(1e-7, 0.05, k), rng.uniform(0.0, 0.05, k)
    bound = rng.uniform(0.0, 0.5, k)
    share_w[3], share_p[3], bound[3] = 0.3 / top, 0.0, 0.2  # its bound needs 2/3 of F
    slack, slope, n2 = _count_terms(share_w, share_p, gamma, f, bound)
    for i in range(k):
        one = slice(i, i + 1)
        alone = _count_terms(share_w[one], share_p[one], gamma[one], f[one], bound[one])
        assert (slope[i], n2[i]) == (alone[1][0], alone[2][0])
        assert slack[i] == alone[0][0]
    assert slope[3] > 0 and n2[3] >= 2 * top // 3  # the big job's cut is there


# --- through the engine ---------------------------------------------------------------------

# F = 4, gamma = 2: a job at F holds 4 + 2 = 6 CPU pairs of 20; three fill 18. A fourth
# job's fair bound (CPU share >= 0.9 * min(1/4, 6/20)) needs 5 pairs: all three must shrink.
ADJUST = {"global_batch": [4] * 6, "ps_ratio": [2] * 6, "worker_cpus": [2] * 6, "ps_cpus": [2] * 6}
ADJUST_SUBMIT = [0.0, 0.0, 0.0, 1.0, 2.0, 3.0]


def adjustments(log):
    return [sum(j in before for j, _, _ in acts) for _, before, acts in log]


def test_adjustment_cap_holds_across_decisions():
    capped = Recorder(max_adjust=1)
    res = engine(trace(ADJUST, ADJUST_SUBMIT), capped).run()
    assert (res.state.job_status == FINISHED).all()
    assert max(adjustments(capped.log)) == 1
    free = Recorder(max_adjust=10)
    engine(trace(ADJUST, ADJUST_SUBMIT), free).run()
    assert max(adjustments(free.log)) >= 3  # the cap binds: uncapped, t=1 resizes 3
    assert adjustments(free.log)[1] == 3 and free.log[1][0] == 1.0
    none = Recorder(max_adjust=0)
    engine(trace(ADJUST, ADJUST_SUBMIT), none).run()
    assert max(adjustments(none.log)) == 0


def test_solves_only_when_the_active_set_changes_or_on_its_timer(monkeypatch):
    clock = {"now": -1.0}
    solved: list[float] = []

    def run(**params):
        solved.clear()
        rec = Recorder(**params)
        names = type(rec.inner).decide.__globals__  # the policy module's namespace
        real = names["solve_counts"]

        def spy(*args, **kw):
            solved.append(clock["now"])
            return real(*args, **kw)

        monkeypatch.setitem(names, "solve_counts", spy)
        decide = rec.decide
        sets = []

        def twice(view, now):  # asked again at once, nothing has changed
            clock["now"] = now
            sets.append((now, frozenset(np.union1d(view.running, view.queued).tolist())))
            first = decide(view, now)
            assert decide(view, now).actions == []
            return first

        rec.decide = twice
        engine(trace(ADJUST, ADJUST_SUBMIT), rec).run()
        return sets, list(solved)

    sets, got = run()
    changed = [t for k, (t, a) in enumerate(sets) if k == 0 or a != sets[k - 1][1]]
    assert got == changed == [t for t, _ in sets]  # once per point: arrivals, finishes
    sets, got = run(period=5.0)
    changed = [t for k, (t, a) in enumerate(sets) if k == 0 or a != sets[k - 1][1]]
    timer = sorted(set(got) - set(changed))
    assert set(changed) <= set(got) and timer  # the timer solved where nothing changed
    for t in timer:  # 5 s or more after the solve before it
        assert t - max(x for x in got if x < t) >= 5.0


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_random_runs_end_to_end(seed):
    rng = np.random.default_rng(seed)
    n = 10
    cols = {
        "global_batch": rng.integers(1, 13, n).tolist(),
        "ps_ratio": rng.choice([1, 2, 4], n).tolist(),
        "worker_gpus": rng.integers(0, 3, n).tolist(),
        "worker_cpus": rng.integers(1, 5, n).tolist(),
        "ps_cpus": rng.integers(1, 4, n).tolist(),
        "epochs": rng.integers(1, 20, n).tolist(),
    }
    submit = np.sort(rng.integers(0, 30, n)).astype(float).tolist()
    res = engine(trace(cols, submit), Recorder(max_adjust=2), until=400.0).run()
    status = res.state.job_status
    assert not (status == REJECTED).any()
    assert (status == FINISHED).sum() >= 1
    for r, name in enumerate(("gpus", "cpus", "mem_gb", "storage_gb")):
        assert (res.timeline[f"held_{name}"] <= TOTAL[r] + 1e-9).all()


def test_deterministic():
    runs = []
    for _ in range(2):
        rec = Recorder(max_adjust=1)
        res = engine(trace(ADJUST, ADJUST_SUBMIT), rec).run()
        runs.append((rec.log, res.state.job_finish.copy()))
    assert runs[0][0] == runs[1][0]
    assert np.array_equal(runs[0][1], runs[1][1])


def test_a_run_says_how_its_milps_ended():
    def run(**params):
        pol = make_policy(load_policy_class("dorm"), params, 0)
        res = engine(trace(ADJUST, ADJUST_SUBMIT), pol, until=100.0).run()
        mine = policy_notes(res)
        lines.append(pol.status_line(None, 0.0))  # the TUI's line at the end
        return res.extra["policy_summary"]["dorm"], mine, res

    lines: list[str] = []
    assert make_policy(load_policy_class("dorm"), {}, 0).status_line(None, 0.0) == (
        "dorm: no MILP solved yet"
    )
    proved, notes, res = run()
    assert proved["milps"] == proved["optimal"] >= 3 and notes == []
    n = proved["milps"]
    assert lines[-1] == f"dorm: {n} MILPs, {n} proved optimal"
    assert (res.timeline["held_cpus"] > 0).any()
    # one node is too few for some of these MILPs: their answers are HiGHS's best so far
    cut, notes, _ = run(node_limit=1)
    assert cut["milps"] == proved["milps"]
    assert cut["node_limit"] >= 1 and cut["optimal"] + cut["node_limit"] == cut["milps"]
    assert cut["largest_gap_at_limit"] > 0 and cut["no_answer"] == 0
    assert len(notes) == 1
    assert notes[0].startswith(f"dorm: {cut['node_limit']} of {cut['milps']} MILPs stopped at")
    assert "node_limit (1) before HiGHS proved its answer optimal" in notes[0]
    assert lines[-1] == (
        f"dorm: {n} MILPs, {cut['optimal']} proved optimal, {cut['node_limit']} at node_limit"
    )
    # no time to find any answer: nothing changes, and the run says it is the clock's
    late, notes, res = run(time_limit=1e-9)
    assert late["time_limit"] == late["no_answer"] == late["milps"] >= 1
    assert late["optimal"] == 0
    assert len(notes) == 2
    assert "stopped at time_limit (1e-09 s): the run depends on this machine's speed" in notes[0]
    assert notes[1].endswith("MILPs ended without an answer; those decisions changed nothing")
    assert (res.timeline["held_cpus"] == 0).all()
    k = late["milps"]
    assert (
        lines[-1] == f"dorm: {k} MILPs, 0 proved optimal, {k} at time_limit, {k} without an answer"
    )


def test_an_unknown_highs_status_is_named_in_the_notes(monkeypatch):
    pol = make_policy(load_policy_class("dorm"), {}, 0)
    names = type(pol).decide.__globals__
    real = names["solve_counts"]
    monkeypatch.setitem(
        names, "solve_counts", lambda *a, **k: real(*a, **k)._replace(status="kInterrupt")
    )
    res = engine(trace(ADJUST, ADJUST_SUBMIT), pol, until=100.0).run()
    got = res.extra["policy_summary"]["dorm"]
    assert got["other"] == got["milps"] >= 1 and got["optimal"] == 0
    assert (
        f"dorm: {got['milps']} of {got['milps']} MILPs ended with HiGHS's status kInterrupt"
        in policy_notes(res)
    )


@pytest.mark.parametrize(
    ("params", "msg"),
    [
        ({"fairness": 1.5}, r"fairness must be a number in \[0, 1\]"),
        ({"max_adjust": -1}, "max_adjust must be"),
        ({"period": -1.0}, "period must be"),
        ({"time_limit": 0.0}, "time_limit must be"),
        ({"node_limit": 0}, "node_limit must be"),
        ({"mip_gap": -0.1}, "mip_gap must be"),
        ({"fairness": math.nan}, "fairness must be"),
        # now + period was now at t = 16 s: the engine refused the wake-up as not later
        ({"period": 1e-15}, r"period must be 0 \(off\) or at least 0.001 s"),
    ],
)
def test_bad_parameters_are_clear_errors(params, msg):
    with pytest.raises(ParamError, match=f"policy 'dorm': {msg}"):
        make_policy(load_policy_class("dorm"), params, 0)
