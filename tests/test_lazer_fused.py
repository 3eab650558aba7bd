"""Lazer's rule in the kernel (``KEY_LAZER``) against its readable decide() and naive.py.

The kernel runs Alg. 1-2 itself and stops (the code ASK) whenever it needs an X, which the
engine gets from ``policy.answer``; both engine paths and ``tests/naive.py``'s
:func:`simulate_lazer` must give the same schedule. A stub predictor gives X as a fixed
function of the context (T'_new and p), so the naive simulator can compute the same X.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusched.algorithms.bayesopt import Suggestion
from gpusched.core.engine import Engine
from gpusched.core.jobs import prepare_jobs
from gpusched.core.registry import load_policy_class, make_policy
from gpusched.errors import PolicyError
from gpusched.io.cluster import ClusterSpec
from tests.helpers import make_trace
from tests.test_properties import phases, workloads

sys.path.insert(0, str(Path(__file__).parent))
from naive import simulate_lazer  # noqa: E402

TOL = 1e-6  # s


def _x_of(t_new: float, p: float) -> float:
    """The stub's deferral, s: 0 to 20.4 in steps of 1.7 (some below half a slot)."""
    return ((math.floor(t_new) * 7 + math.floor(p) * 3) % 13) * 1.7


class ContextX:
    """A predictor whose X is :func:`_x_of` of the context's T'_new and p."""

    def suggest(self, c) -> Suggestion:
        return Suggestion(
            _x_of(math.expm1(float(c[1])), math.expm1(float(c[3]))), "bootstrap", math.nan
        )

    def observe(self, x, c, f) -> None:
        pass


def _engine(rows, servers, gpus, slot, mode, load, save, params=None, stub=True, seed=0):
    cluster = ClusterSpec.homogeneous(servers, gpus)
    jobs = prepare_jobs(make_trace(rows), cluster)
    pol = make_policy(load_policy_class("lazer"), params or {}, seed)
    if stub and pol.predictor is not None:
        pol.predictor = ContextX()
    n = len(rows)
    eng = Engine(jobs, cluster, pol, slot_s=slot, mode=mode, load_s=load[:n], save_s=save[:n])
    assert eng.mode == mode
    return eng


def _parts(res):
    s = res.state
    return [
        {
            "first_start": float(s.job_first_start[j]),
            "finish": float(s.job_finish[j]),
            "n_preempt": int(s.job_n_preempt[j]),
            "n_futile": int(s.job_n_futile[j]),
            "wait": float(s.job_wait_s[j]),
            "load": float(s.job_load_spent_s[j]),
            "train": float(s.job_executed[j]),
            "save": float(s.job_save_spent_s[j]),
            "futile": float(s.job_futile_s[j]),
        }
        for j in range(len(s.job_submit))
    ]


def _same(got, want, ctx):
    bad = []
    for j, (g, w) in enumerate(zip(got, want, strict=True)):
        ok = g["n_preempt"] == w["n_preempt"] and g["n_futile"] == w["n_futile"]
        for k in ("first_start", "finish", "wait", "load", "train", "save", "futile"):
            ok &= w[k] is not None and abs(g[k] - w[k]) <= TOL
        if not ok:
            bad.append(f"  job {j}: engine {g} != naive {w}")
    assert not bad, ctx + "\n" + "\n".join(bad)


@pytest.mark.parametrize("loading_in_rq", [True, False])
@settings(max_examples=60, deadline=None)
@given(w=workloads(), ph=phases(), deferral=st.booleans())
def test_both_paths_equal_the_naive_simulator(loading_in_rq, w, ph, deferral):
    servers, gpus, rows, slot = w
    n = len(rows)
    load, save = ph[0][:n], ph[1][:n]
    params = {"loading_in_rq": loading_in_rq} | ({} if deferral else {"max_defer": 0.0})
    work = [r[2] for r in rows]

    def x_naive(j, t, p):
        if not deferral:
            return 0.0
        # the policy's context is math.log1p (the C library's): the same round trip here,
        # so that floor() in _x_of sees the same value on both sides
        return _x_of(math.expm1(math.log1p(work[j])), math.expm1(math.log1p(p)))

    want = simulate_lazer(
        rows, [gpus] * servers, slot, x_naive, list(load), list(save), loading_in_rq
    )
    for mode in ("fused", "python"):
        res = _engine(rows, servers, gpus, slot, mode, load, save, params).run()
        _same(_parts(res), want, f"mode={mode} slot={slot} servers={servers}x{gpus}\nrows={rows}")


@settings(max_examples=25, deadline=None)
@given(w=workloads(), ph=phases(), seed=st.integers(0, 3))
def test_kernel_and_decide_give_the_same_run_with_the_optimiser(w, ph, seed):
    """The Bayesian optimiser through every stage: identical schedules and timelines."""
    servers, gpus, rows, slot = w
    out = []
    params = {"bootstrap": 2, "min_updates": 4, "ei_stop": 1.0}
    for mode in ("fused", "python"):
        eng = _engine(rows, servers, gpus, slot, mode, *ph, params=params, stub=False, seed=seed)
        out.append((eng.run(), eng.policy))
    (a, pa), (b, pb) = out
    for field in ("job_finish", "job_first_start", "job_n_preempt", "job_futile_s", "job_wait_s"):
        assert getattr(a.state, field).tobytes() == getattr(b.state, field).tobytes(), field
    for column in ("time_s", "busy_gpus", "queued", "loading_gpus", "saving_gpus"):
        assert a.timeline[column].tobytes() == b.timeline[column].tobytes(), column
    assert pa.xs == pb.xs


def test_hand_case_in_the_kernel():
    """docs/lazer.md's hand case (tests/test_lazer.py) on the fused path, X = 50 then 0."""
    from tests.test_lazer import FixedX, _motifs

    rows = _motifs(1)
    for x, jct in (
        ((50.0, 0.0), [10_000_508.0, 218.0, 300.0]),
        ((0.0,), [10_000_558.0, 358.0, 140.0]),
    ):
        cluster = ClusterSpec.homogeneous(1, 1)
        pol = make_policy(load_policy_class("lazer"), {}, 0)
        pol.predictor = FixedX(x)
        eng = Engine(
            prepare_jobs(make_trace(rows), cluster),
            cluster,
            pol,
            mode="fused",
            load_s=np.full(3, 100.0),
            save_s=np.full(3, 8.0),
        )
        pol.predictor.clock = lambda eng=eng: eng.now
        s = eng.run().state
        assert (s.job_finish - s.job_submit).tolist() == jct


def test_the_rule_asks_only_when_a_preemption_is_at_stake():
    # 2 GPUs: the second job fits the idle GPU (no question); the third finds J_r
    rows = [(0, 1, 100), (1, 1, 100), (2, 1, 10)]
    asked = []

    class Record(ContextX):
        def suggest(self, c):
            asked.append(np.expm1(c))
            return Suggestion(0.0, "bootstrap", math.nan)

    cluster = ClusterSpec.homogeneous(1, 2)
    pol = make_policy(load_policy_class("lazer"), {}, 0)
    pol.predictor = Record()
    Engine(prepare_jobs(make_trace(rows), cluster), cluster, pol, mode="fused").run()
    assert len(asked) == 1 and asked[0][1] == pytest.approx(10.0)


@pytest.mark.parametrize("bad", [math.nan, -1.0, math.inf, "5", None])
def test_a_bad_answer_is_a_policy_error(bad):
    rows = [(0, 1, 100), (2, 1, 10)]
    cluster = ClusterSpec.homogeneous(1, 1)
    pol = make_policy(load_policy_class("lazer"), {}, 0)
    pol.answer = lambda view, now, j, p: bad
    eng = Engine(prepare_jobs(make_trace(rows), cluster), cluster, pol, mode="fused")
    with pytest.raises(PolicyError, match="answer"):
        eng.run()


def test_max_defer_zero_never_asks():
    rows = [(0, 1, 100), (2, 1, 10)]
    cluster = ClusterSpec.homogeneous(1, 1)
    pol = make_policy(load_policy_class("lazer"), {"max_defer": 0.0}, 0)
    pol.answer = None  # would fail if called
    res = Engine(prepare_jobs(make_trace(rows), cluster), cluster, pol, mode="fused").run()
    assert res.state.job_finish.tolist() == [110.0, 12.0]  # j1 trains 0-2, then 12-110
