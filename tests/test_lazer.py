"""Lazer (Alg. 1-2 of the Lazer paper): hand-checked schedules, the deferral, the predictor's F.

A stub predictor with a fixed X replaces the Bayesian optimiser where a test needs a known
deferral (``policy.predictor`` is the documented hook: ``suggest(c)``, ``observe(x, c, f)``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpusched.algorithms.bayesopt import Suggestion
from gpusched.core.engine import Engine
from gpusched.core.jobs import prepare_jobs
from gpusched.core.registry import load_policy_class, make_policy
from gpusched.errors import ParamError, PolicyError
from gpusched.io.cluster import ClusterSpec
from gpusched.workloads.synth import synth_trace
from tests.helpers import make_trace

# Lazer paper, Sec. 3.2: j1 runs; j2 (shorter) arrives and starts loading; j3 (shorter
# still) arrives during j2's load. 1 GPU, slot 1, 10 s loads; j1 saves for 0 s (so that
# j2 starts loading at once under srtf), j2 and j3 for 5 s.
HAND = [(0, 1, 100), (20, 1, 50), (25, 1, 10)]
HAND_LOAD = [10.0, 10.0, 10.0]
HAND_SAVE = [0.0, 5.0, 5.0]


class FixedX:
    """A predictor that always suggests ``x`` (or ``x[i]`` at its i-th call, the last one
    after) as a bootstrap sample and records outcomes."""

    def __init__(self, x: float, clock=None) -> None:
        self.x = x
        self.clock = clock
        self.suggested: list[np.ndarray] = []
        self.observed: list[tuple[float, float, float]] = []  # (time, x, f)
        self.contexts: list[np.ndarray] = []

    def suggest(self, c) -> Suggestion:
        self.suggested.append(np.asarray(c))
        x = self.x if np.isscalar(self.x) else self.x[min(len(self.suggested), len(self.x)) - 1]
        return Suggestion(float(x), "bootstrap", math.nan)

    def observe(self, x, c, f) -> None:
        self.observed.append((self.clock(), x, f))
        self.contexts.append(np.expm1(c))  # back to seconds


class NoPrediction:
    """A predictor a test expects never to be asked."""

    def suggest(self, c):
        raise AssertionError("the deferral predictor was asked for X")


def _engine(
    rows,
    policy="lazer",
    *,
    gpus=1,
    servers=1,
    load=None,
    save=None,
    params=None,
    predictor=None,
    seed=0,
    **cluster_kw,
):
    cluster = ClusterSpec.homogeneous(servers, gpus, **cluster_kw)
    jobs = prepare_jobs(make_trace(rows), cluster)
    pol = make_policy(load_policy_class(policy), params or {}, seed)
    if predictor is not None:
        pol.predictor = predictor
    n = len(rows)
    eng = Engine(
        jobs,
        cluster,
        pol,
        mode="python",
        load_s=np.asarray(load if load is not None else [0.0] * n, dtype=float),
        save_s=np.asarray(save if save is not None else [0.0] * n, dtype=float),
    )
    if isinstance(predictor, FixedX):
        predictor.clock = lambda: eng.now
    return eng


def _observed(eng):
    """The stub's outcomes, once every sample still held is reported (outcomes are applied
    lazily, before the next suggestion; a test's run may have none after its samples)."""
    st = eng.state
    eng.policy._outcomes.report(eng.policy.predictor, st.job_submit, st.job_work, math.inf)
    return [o[1:] for o in eng.policy.predictor.observed]


def _schedule(res):
    s = res.state
    return [
        (float(a), float(b), int(c))
        for a, b, c in zip(s.job_first_start, s.job_finish, s.job_n_preempt, strict=True)
    ]


def test_srtf_counts_the_futile_preemption_of_the_hand_scenario():
    # t=20: j1 (r=90) preempted, releases at once; j2 loads 20-30. t=25: j3 (r=10)
    # preempts j2 mid-load: futile, exactly its 5 s of load wasted.
    res = _engine(HAND, "srtf", load=HAND_LOAD, save=HAND_SAVE).run()
    assert res.state.job_n_futile.tolist() == [0, 1, 0]
    assert res.state.job_futile_s.tolist() == [0.0, 5.0, 0.0]


def test_lazer_deferral_covering_the_window_avoids_the_futile_preemption():
    # X = 10. t=20: j2 (r=50) < j1 (r=90): J_r = {j1}; X > 0: j2 to DWQ, j1 to DRQ, timer
    #       at 30. t=25: j3 arrives; RQ minus DRQ is empty: no J_r, j3 waits in WQ.
    # t=30: timer: j1 (r=80) still longer than j2: preempted (no save), j2 loads 30-40,
    #       trains 40-90. t=90: j2 done: WQ by remaining: j3 (10) fits, loads 90-100,
    #       trains to 110. t=110: j1 (r=80) loads 110-120, trains to 200.
    stub = FixedX(10.0)
    eng = _engine(HAND, load=HAND_LOAD, save=HAND_SAVE, predictor=stub)
    res = eng.run()
    assert res.state.job_n_futile.tolist() == [0, 0, 0]
    assert _schedule(res) == [(0.0, 200.0, 1), (30.0, 90.0, 0), (90.0, 110.0, 0)]
    s = res.state  # W + L + T + P = JCT, j2: waited 20-30, loaded 30-40, trained 40-90
    assert (s.job_wait_s[1], s.job_load_spent_s[1], s.job_executed[1]) == (10.0, 10.0, 50.0)
    # asked once (j3's arrival found no J_r): c = (mean gap of arrivals 0 and 20 in the
    # past hour, T'_j2, l_j2, p_j1)
    assert len(stub.suggested) == 1
    assert np.allclose(np.expm1(stub.suggested[0]), [20.0, 50.0, 10.0, 0.0])
    # F: j3 (10 < 50) arrived 5 s after the decision, inside (p, p + l] = (0, 10]: F = 5,
    # f = |10 - 5|
    assert _observed(eng) == [(10.0, 5.0)]
    assert np.allclose(stub.contexts[0], [20.0, 50.0, 10.0, 0.0])


@pytest.mark.parametrize(("x", "futile"), [(0.0, 1), (4.0, 1), (5.0, 0), (10.0, 0), (60.0, 0)])
def test_only_a_deferral_of_at_least_f_avoids_it(x, futile):
    # F = 5 (j3 arrives 5 s after j2). X = 4: the timer at 24 starts j2 (loads 24-34);
    # j3 at 25 finds j2 loading and, deferred by 4 itself, preempts it at 29 (futile).
    # X = 5: the timer and j3's arrival share the decision point 25; arrivals come first,
    # so j3 still finds j1 in DRQ and waits.
    stub = FixedX(x)
    eng = _engine(HAND, load=HAND_LOAD, save=HAND_SAVE, predictor=stub)
    res = eng.run()
    assert int(res.state.job_n_futile.sum()) == futile
    assert _observed(eng)[0][1] == abs(x - 5.0)


def test_max_defer_zero_preempts_at_once_like_srtf_on_arrival():
    srtf = _engine(HAND, "srtf", load=HAND_LOAD, save=HAND_SAVE).run()
    lazer = _engine(HAND, load=HAND_LOAD, save=HAND_SAVE, params={"max_defer": 0.0}).run()
    assert (
        _schedule(lazer) == _schedule(srtf) == [(0.0, 205.0, 1), (20.0, 105.0, 1), (25.0, 45.0, 0)]
    )
    assert lazer.state.job_n_futile.tolist() == [0, 1, 0]


def test_an_outcome_is_reported_once_the_load_window_and_the_deferral_have_passed():
    from gpusched.algorithms.deferral import Outcomes, Sample

    stub = FixedX(0.0, clock=lambda: 0.0)
    out = Outcomes()
    submit, dur = np.array([0.0, 20.0, 25.0]), np.array([100.0, 50.0, 10.0])
    for x in (4.0, 12.0):  # due at 20 + max(X, p + l) = 30 and 32
        out.add(Sample(x, np.zeros(4), 20.0, 0.0, 10.0, 50.0))
    out.report(stub, submit, dur, 29.0)
    assert stub.observed == []
    out.report(stub, submit, dur, 30.0)
    assert [o[1:] for o in stub.observed] == [(4.0, 1.0)]  # F = 5 (j3 at 25)
    out.report(stub, submit, dur, 40.0)
    assert [o[1:] for o in stub.observed] == [(4.0, 1.0), (12.0, 7.0)]


def test_outcomes_are_applied_before_the_next_suggestion():
    # two HAND motifs 1000 s apart: the first sample (due at 30) is reported when the
    # second prediction (at 1020) is made, not before
    rows = HAND + [(1000 + t, g, d) for t, g, d in HAND]
    stub = FixedX(4.0)
    _engine(rows, load=HAND_LOAD * 2, save=HAND_SAVE * 2, predictor=stub).run()
    assert stub.observed[0] == (1020.0, 4.0, 1.0)


def test_pause_and_save_delays_the_start_even_when_gpus_are_shared():
    # 1 GPU that could hold 2 jobs; j1 trains from 0 and saves 5 s when preempted at 20;
    # j2 starts when the save ends (the engine would let it share the GPU at 20).
    for capacity in (1, 2):
        res = _engine(
            [(0, 1, 100), (20, 1, 10)],
            load=[0.0, 0.0],
            save=[5.0, 5.0],
            params={"max_defer": 0.0},
            gpu_capacity=capacity,
        ).run()
        assert _schedule(res) == [(0.0, 115.0, 1), (25.0, 35.0, 0)]


def test_p_in_the_context_and_the_window_is_the_save_really_paid():
    # j1 trains from 0 and saves 5 s: p = 5, so F's window is (5, 15] after t0 = 20;
    # j3 at 25 (offset 5) is not in it: F = 0 and f = X.
    stub = FixedX(12.0)
    eng = _engine(HAND, load=HAND_LOAD, save=[5.0, 5.0, 5.0], predictor=stub)
    eng.run()
    assert np.allclose(np.expm1(stub.suggested[0]), [20.0, 50.0, 10.0, 5.0])
    assert _observed(eng)[0] == (12.0, 12.0)


def test_f_is_the_load_the_futile_preemption_would_waste():
    # j1 trains from 0 and saves 5 s; j3 arrives 8 s after the decision at 20: inside
    # (p, p + l] = (5, 15], so loading j2 at once (20 + 5 = 25) would lose 28 - 25 = 3 s
    # of load to it: F = Delta - p = 3, f = |X - 3|.
    stub = FixedX(2.0)
    rows = [(0, 1, 100), (20, 1, 50), (28, 1, 10)]
    eng = _engine(rows, load=HAND_LOAD, save=[5.0] * 3, predictor=stub)
    eng.run()
    assert _observed(eng)[0] == (2.0, 1.0)


def test_mean_inter_arrival_is_the_window_with_one_arrival_in_the_hour():
    stub = FixedX(1.0)
    _engine([(0, 1, 10_000), (5000, 1, 100)], predictor=stub).run()
    assert np.expm1(stub.suggested[0])[0] == pytest.approx(3600.0)


def test_idle_gpus_count_first_and_the_longest_jobs_are_taken():
    # 1 server x 4 GPUs, no deferral. A (0, 2 GPUs, 100 s) on GPUs 0-1, B (0, 1, 80) on
    # GPU 2, GPU 3 idle. C (10, 3 GPUs, 30): idle 1 + A's 2 = 3 GPUs: J_r = {A} only
    # (counting from 0, as Alg. 2 is typeset, would take B too). C runs 10-40 on GPUs 3,
    # 0, 1. t=40: C done: A (r=90) fits the 3 idle GPUs: 40-130. B runs 0-80 untouched.
    res = _engine([(0, 2, 100), (0, 1, 80), (10, 3, 30)], gpus=4, params={"max_defer": 0.0}).run()
    assert _schedule(res) == [(0.0, 130.0, 1), (0.0, 80.0, 0), (10.0, 40.0, 0)]


def test_a_job_that_fits_the_idle_gpus_starts_without_prediction():
    res = _engine([(0, 1, 100), (5, 1, 10)], gpus=2, predictor=NoPrediction()).run()
    assert _schedule(res) == [(0.0, 100.0, 0), (5.0, 15.0, 0)]


def test_longer_jobs_wait_in_wq_and_start_at_completions_shortest_first():
    # 1 x 2 GPUs. A (0, 2 GPUs, 50) runs. B (1, 2, 100), C (2, 1, 60), D (3, 1, 70) are
    # all longer than A: no J_r, WQ. t=50: WQ by remaining: C (60) and D (70) take the 2
    # GPUs, B (100) does not fit. t=110: C done, 1 GPU: B waits. t=120: B runs to 220.
    res = _engine(
        [(0, 2, 50), (1, 2, 100), (2, 1, 60), (3, 1, 70)], gpus=2, predictor=NoPrediction()
    ).run()
    assert _schedule(res) == [(0.0, 50.0, 0), (120.0, 220.0, 0), (50.0, 110.0, 0), (50.0, 120.0, 0)]


def _random_run(seed: int, **params):
    cluster = ClusterSpec.homogeneous(2, 4)
    jobs = prepare_jobs(synth_trace(250, 11, load=1.5, n_gpus_cluster=cluster.n_gpus), cluster)
    n = len(jobs)
    rng = np.random.default_rng(4)
    pol = make_policy(load_policy_class("lazer"), params, seed)
    eng = Engine(
        jobs,
        cluster,
        pol,
        mode="python",
        load_s=rng.uniform(0, 60, n),
        save_s=rng.uniform(0, 30, n),
    )
    return eng.run(), pol


def test_random_workload_runs_through_every_stage():
    res, pol = _random_run(0, min_updates=12, ei_stop=1.0)
    s = res.state
    assert (s.job_finish >= s.job_submit).all()
    jct = s.job_finish - s.job_submit
    parts = s.job_wait_s + s.job_load_spent_s + s.job_executed + s.job_save_spent_s
    assert np.allclose(parts, jct, rtol=1e-9, atol=1e-6)
    assert pol.n_deferred > 0 and pol.predictor.n_updates >= 12
    assert pol.predictor.stage == "exploitation"
    assert "exploitation" in pol.status_line(None, 0.0)


def test_same_seed_same_schedule():
    a, _ = _random_run(3, min_updates=12, ei_stop=1.0)
    b, _ = _random_run(3, min_updates=12, ei_stop=1.0)
    for field in ("job_first_start", "job_finish", "job_n_preempt", "job_futile_s"):
        assert getattr(a.state, field).tobytes() == getattr(b.state, field).tobytes()


@pytest.mark.parametrize(
    "param",
    [
        "max_defer=-1",
        "max_defer=inf",
        "max_defer=nan",
        "max_defer=1e9",
        "bootstrap=0",
        "starts=0",
        "ei_stop=-0.1",
        "ei_stop=nan",
        "window=0",
        "window=-5",
        "min_updates=-1",
        "loading_in_rq=maybe",
        "loading_in_rq=2",
    ],
)
def test_bad_parameters_are_refused(param):
    from gpusched.core.policy import parse_params

    cls = load_policy_class("lazer")
    with pytest.raises(ParamError, match="policy 'lazer'"):
        cls(**parse_params(cls, [param]))


def test_a_cluster_without_spreading_is_refused():
    with pytest.raises(PolicyError, match="allow_spread"):
        _engine([(0, 1, 10)], allow_spread=False)


# --- the hand-made case of docs/lazer.md ("A deferral that avoids a futile preemption") ---
# 1 GPU, every load 100 s, every save 8 s. j1 (submitted at 0, 10,000,000 s) trains; per
# motif k (B = 2000 k): j2 arrives at B + 1000 (60 s), j3 at B + 1058 (40 s). Loading j2
# at once would load it over (1008, 1108]; j3 at 1058 would take it mid-load, wasting
# F = 58 - 8 = 50 s (eq. 2, 4).
MOTIF = [(0, 1, 10_000_000)]
MOTIF_TIMES = [(1000, 1, 60), (1058, 1, 40)]


def _motifs(k: int) -> list[tuple]:
    return MOTIF + [(2000 * m + t, g, d) for m in range(k) for (t, g, d) in MOTIF_TIMES]


def _jct(res):
    s = res.state
    return (s.job_finish - s.job_submit).tolist()


def test_hand_case_without_deferral_wastes_fifty_seconds():
    # 1000: J_r = {j1}, save 1000-1008, j2 loads 1008-1108. 1058: j3 (40 < 60) takes the
    # loading j2 (no save): 50 s futile; j3 loads 1058-1158, trains to 1198. 1198: j2
    # loads to 1298, trains to 1358. 1358: j1 reloads to 1458 and trains the rest.
    rows = _motifs(1)
    res = _engine(rows, load=[100.0] * 3, save=[8.0] * 3, params={"max_defer": 0.0}).run()
    assert _jct(res) == [10_000_558.0, 358.0, 140.0]
    assert res.state.job_futile_s.tolist() == [0.0, 50.0, 0.0]


@pytest.mark.parametrize(
    ("x", "jct", "futile"),
    [
        ((50.0, 0.0), [10_000_508.0, 218.0, 300.0], 0.0),
        ((51.0, 0.0), [10_000_508.0, 219.0, 301.0], 0.0),
        ((45.0, 0.0), [10_000_513.0, 358.0, 140.0], 5.0),
    ],
)
def test_hand_case_deferral_of_f_avoids_it(x, jct, futile):
    # X = 50: j2 to DWQ, j1 to DRQ (keeps training). 1050: J_r2 = {j1}, save 1050-1058.
    # 1058: j2's promised start comes first (j2 taken); j3 finds no candidate (j1
    # saving, j2 taken): WQ. j2 loads 1058-1158, trains to 1218; j3 loads 1218-1318,
    # trains to 1358; j1 reloads 1358-1458 with 50 s more trained (it trained 100-1050).
    # X = 45 < F: j1 saves 1045-1053, j2 loads from 1053, j3 (X = 0 for it) takes it at
    # 1058: 5 s wasted; j3 loads 1058-1158, trains to 1198; j2 loads 1198-1298, trains
    # to 1358; j1 reloads 1358-1458 having trained 100-1045.
    stub = FixedX(x)
    eng = _engine(_motifs(1), load=[100.0] * 3, save=[8.0] * 3, predictor=stub)
    res = eng.run()
    assert _jct(res) == jct
    assert float(res.state.job_futile_s.sum()) == futile
    assert _observed(eng)[0] == (x[0], abs(x[0] - 50.0))  # F = 50, not 58


def test_hand_case_the_optimiser_learns_a_deferral_in_the_window():
    """BO with the paper's settings on 160 motifs: once it exploits, it defers by X in
    [F, 58) = [50, 58) (the deferrals that avoid the futile preemption; 58 s is j3's
    arrival), so the last motifs waste no load; max_defer = 0 wastes 50 s in each."""
    rows = _motifs(160)
    n = len(rows)
    kw = {"load": [100.0] * n, "save": [8.0] * n}
    res0 = _engine(rows, params={"max_defer": 0.0}, **kw).run()
    eng = _engine(rows, seed=1, **kw)
    res = eng.run()
    pol = eng.policy
    assert pol.predictor.stage == "exploitation"
    xs = np.asarray(pol.xs[-20:])  # the last 20 motifs: exploitation
    assert ((xs >= 50.0) & (xs < 58.0)).all(), xs
    assert res.state.job_futile_s[-40:].sum() == 0.0
    assert res0.state.job_futile_s.tolist() == [0.0] + [50.0, 0.0] * 160
    assert float(res.state.job_futile_s.sum()) < 0.2 * float(res0.state.job_futile_s.sum())
    assert sum(_jct(res)) < sum(_jct(res0))
    again = _engine(rows, seed=1, **kw).run()
    assert again.state.job_finish.tobytes() == res.state.job_finish.tobytes()


def test_j3s_own_prediction_sees_f_zero():
    # j3 (40 s) arrives while j2 loads under X = 0: J_r = {j2} (loading, p = 0); no later
    # arrival is shorter than 40 s: F = 0
    stub = FixedX(0.0)
    eng = _engine(_motifs(1), load=[100.0] * 3, save=[8.0] * 3, predictor=stub)
    eng.run()
    assert [o[1] for o in _observed(eng)] == [50.0, 0.0]
    assert np.allclose(stub.contexts[1][1:], [40.0, 100.0, 0.0])


def test_loading_jobs_out_of_rq_are_never_preempted():
    # loading_in_rq=false: j3 at 1058 finds j2 loading (not a candidate) and j1 saving:
    # WQ. j2 loads 1008-1108, trains to 1168; j3 loads 1168-1268, trains to 1308; j1
    # reloads 1308-1408.
    rows = _motifs(1)
    res = _engine(
        rows, load=[100.0] * 3, save=[8.0] * 3, params={"max_defer": 0.0, "loading_in_rq": False}
    ).run()
    assert _jct(res) == [10_000_508.0, 168.0, 250.0]
    assert res.state.job_n_futile.sum() == 0
