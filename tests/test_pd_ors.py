"""PD-ORS and OASiS as policies (Alg. 1 over the primal-dual machinery), through the engine.

The algorithms themselves (prices, theta, the DP against brute force, the rounding) are
tested in tests/test_primal_dual.py; here: admission and rejection, the admitted schedule
run slot by slot, OASiS's disjoint machines, determinism, and a property test that every
admitted job finishes by the horizon (schedules plan at least the samples eq. 1 trains)
while no resource is over-committed and rejected jobs never run.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusched.core.registry import load_policy_class, make_policy
from gpusched.core.state import FINISHED, REJECTED
from tests.test_ledger import engine, ps_trace


def policy(name: str, seed: int = 0, **params):
    return make_policy(load_policy_class(name), params, seed)


def test_admits_a_job_that_fits_and_runs_its_schedule():
    pol = policy("pd-ors")
    eng = engine(ps_trace(1, horizon=20, epochs=2), pol, until=20.0)
    res = eng.run()
    assert res.state.job_status[0] == FINISHED
    sched = pol.plans.get(0)
    # the schedule's last slot is t~: the job ends by the end of it
    assert sched is None or res.state.job_finish[0] <= sched.completion + 1 + 1e-9
    assert res.state.job_finish[0] <= 20.0


def test_rejects_what_cannot_finish_by_the_horizon_or_is_worth_nothing():
    # 1e4 epochs: at least 1e9 samples x 1.5e-3 s / 8 workers, far beyond T = 20
    res = engine(ps_trace(1, horizon=20, epochs=10_000), policy("pd-ors"), until=20.0).run()
    assert res.state.job_status[0] == REJECTED
    assert np.isnan(res.state.job_first_start[0])
    # a job of utility 0 has payoff 0 - cost <= 0 (Alg. 1 line 4)
    res = engine(ps_trace(1, horizon=20, utility_priority=0), policy("pd-ors"), until=20.0).run()
    assert res.state.job_status[0] == REJECTED


def test_oasis_keeps_workers_and_ps_apart():
    trace = ps_trace(4, horizon=30, submit=[0, 0, 1, 2], epochs=2, bw_external=1e5)
    eng = engine(trace, policy("oasis"), until=30.0)
    seen = 0
    while eng.step():
        for w, s in eng.ledger.alloc.values():
            assert w[1] == 0 and s[0] == 0  # 2 machines: workers on 0, PSs on 1
            seen += 1
    assert seen > 0
    res = eng.result()
    assert (res.state.job_status == FINISHED).any()


def test_pd_ors_colocates_when_it_is_cheaper():
    eng = engine(ps_trace(1, horizon=20, epochs=2), policy("pd-ors"), until=20.0)
    placed = []
    while eng.step():
        placed += [(w.copy(), s.copy()) for w, s in eng.ledger.alloc.values()]
    assert placed
    # empty cluster, prices at L everywhere: the internal case (one machine) is the cheapest
    assert all(np.flatnonzero(w + s).size == 1 for w, s in placed)


@pytest.mark.parametrize("name", ["pd-ors", "oasis"])
def test_same_seed_same_schedule(name):
    trace = ps_trace(6, horizon=25, submit=[0, 0, 1, 1, 2, 4])
    a = engine(trace, policy(name, seed=3), until=25.0).run().state
    b = engine(trace, policy(name, seed=3), until=25.0).run().state
    assert np.array_equal(a.job_status, b.job_status)
    assert np.array_equal(a.job_finish, b.job_finish, equal_nan=True)


def test_bad_parameters_are_refused():
    from gpusched.errors import PolicyError

    with pytest.raises(PolicyError, match=r"g_delta must be a number in \(0, 1e\+06\]"):
        policy("pd-ors", g_delta=0.0)
    with pytest.raises(PolicyError, match="no horizon"):
        engine(ps_trace(1), policy("pd-ors"))
    # a horizon of 10^7 slots was a MemoryError (29 TiB) in prepare()
    with pytest.raises(PolicyError, match="horizon of 10,000,000 slots on .* shorten the horizon"):
        engine(ps_trace(1, horizon=10_000_000), policy("pd-ors"))
    with pytest.raises(PolicyError, match="bottom must be eq14 or lemma8"):
        policy("pd-ors", bottom="eq13")
    with pytest.raises(PolicyError, match="lemma8 needs opt > 0"):
        policy("pd-ors", bottom="lemma8")
    for bad in ({"L": -1.0}, {"mu": float("nan")}, {"refine": 7}, {"opt": float("inf")}):
        with pytest.raises(PolicyError, match="must be a number in"):
            policy("pd-ors", **bad)
    # granularity=100000 (in its range) was killed for lack of memory in the first slot
    for name in ("pd-ors", "oasis"):
        with pytest.raises(PolicyError, match=r"granularity must be a number in \[0, 10000\]"):
            policy(name, granularity=100_000)
        with pytest.raises(PolicyError, match=r"granularity x 2\^refine must be at most 10,000"):
            policy(name, granularity=5000, refine=2)
    policy("pd-ors", granularity=2500, refine=2)  # 10,000 units: allowed


@pytest.mark.parametrize("name", ["pd-ors", "oasis"])
def test_max_failures_is_bounded(name):
    """max_failures up to 1e9 was accepted and then took time in proportion (about 0.1 s
    per 10^6 failed draws per option); 10^6, 200 times the paper's 5,000, is the most."""
    from gpusched.errors import PolicyError

    for bad in (1_000_001, 10**9):
        with pytest.raises(PolicyError, match=r"max_failures must be a number in \[1, 1e\+06\]"):
            policy(name, max_failures=bad)
    assert policy(name, max_failures=1_000_000).max_failures == 1_000_000


def test_max_failures_range_error_on_the_command_line():
    from tests.helpers import invoke, one_line_error

    r = invoke(
        "replay", "ps-20", "-c", "pd-ors-30", "-P", "pd-ors", "-p", "max_failures=1000000000"
    )
    one_line_error(
        r, "policy 'pd-ors': max_failures must be a number in [1, 1e+06], got 1000000000"
    )


def test_price_parameters():
    # 2 machines of (8 GPUs, 20 vCPUs, 64 GB, 100 GB): sum C = 384; T = 20
    trace = ps_trace(2, horizon=20, epochs=2)
    pol = policy("pd-ors")
    engine(trace, pol, until=20.0)
    eq14 = pol.prices.L
    pol = policy("pd-ors", bottom="lemma8", opt=96.0)
    engine(trace, pol, until=20.0)
    assert pol.prices.L == 96.0 / (2 * 20 * 2 * (8 + 20 + 64 + 100))
    assert pol.prices.L != eq14
    pol = policy("pd-ors", L=0.25)
    engine(trace, pol, until=20.0)
    assert pol.prices.L == 0.25 and (pol.prices.U >= 0.25).all()
    pol = policy("pd-ors", mu=1e9)  # a larger mu than eq. 14 needs: a smaller L
    engine(trace, pol, until=20.0)
    assert 0 < pol.prices.L < eq14


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(1, 8),
    name=st.sampled_from(["pd-ors", "oasis"]),
    epochs=st.integers(1, 40),
    batch=st.integers(1, 16),
)
def test_admitted_jobs_finish_by_the_horizon(seed, n, name, epochs, batch):
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.integers(0, 12, size=n)).astype(float)
    trace = ps_trace(n, submit=submit, horizon=15, epochs=epochs, global_batch=batch)
    res = engine(trace, policy(name, seed=seed), until=15.0).run()
    s = res.state
    rejected = s.job_status == REJECTED
    assert np.isnan(s.job_first_start[rejected]).all()
    assert ((s.job_status == FINISHED) | rejected).all()  # admitted => finished in time
    assert (s.job_finish[~rejected] <= 15.0 + 1e-9).all()


def test_shared_draws_run_through_the_policy(tmp_path) -> None:
    # draws=shared (the ablation's former draws) hands the policy's own generator, made
    # lazily by the registry, to every rounding; the run completes and admits jobs
    from gpusched.experiments.run import build_engine
    from gpusched.io.trace import write_trace
    from gpusched.workloads.pd_ors import pd_ors_workload

    trace = tmp_path / "pd.csv"
    write_trace(pd_ors_workload(1, 30, horizon=20), trace)
    engine, _ = build_engine(str(trace), "pd-ors:draws=shared", cluster="pd-ors-100")
    engine.run()
    assert engine.policy.plans or engine.policy.prices.rho.any()
