"""Property tests (hypothesis) applied to every registered policy through one parametrised test.

For random small workloads, at every decision point: no GPU holds more jobs than its
capacity, the busy-GPU count matches the jobs holding GPUs, and a policy that claims
to be work-conserving leaves no queued job that would fit the idle GPUs. At the end:
every job finished exactly once, JCT >= duration, and the same seed gives the same
schedule, bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusched.core.engine import Engine
from gpusched.core.jobs import prepare_jobs
from gpusched.core.registry import load_policy_class, make_policy
from gpusched.core.state import FINISHED, QUEUED
from gpusched.io.cluster import ClusterSpec
from gpusched.results.metrics import job_records
from tests.helpers import GANG_POLICIES, make_trace


@st.composite
def workloads(draw):
    servers = draw(st.integers(1, 3))
    gpus = draw(st.sampled_from([1, 2, 4, 8]))
    n = draw(st.integers(1, 18))
    total = servers * gpus
    rows = []
    t = 0.0
    for _ in range(n):
        t += draw(st.floats(0, 40, allow_nan=False).map(lambda x: round(x, 3)))
        g = draw(st.integers(1, total))
        d = draw(st.floats(0.5, 200, allow_nan=False).map(lambda x: round(x, 3)))
        rows.append((t, g, d))
    slot = draw(st.sampled_from([0.5, 1.0, 3.0, 60.0]))
    return servers, gpus, rows, slot


def _engine(policy, servers, gpus, rows, slot, mode, seed=0, phases=None):
    cluster = ClusterSpec.homogeneous(servers, gpus)
    jobs = prepare_jobs(make_trace(rows), cluster)
    pol = make_policy(load_policy_class(policy), {}, seed)
    load, save = (None, None) if phases is None else phases
    engine = Engine(jobs, cluster, pol, slot_s=slot, mode=mode, load_s=load, save_s=save)
    return engine, pol


@st.composite
def phases(draw, n_max: int = 18):
    """Per-job load and save times, s (some zero), for up to ``n_max`` jobs."""
    times = st.one_of(st.just(0.0), st.floats(0.1, 60, allow_nan=False))
    load = draw(st.lists(times, min_size=n_max, max_size=n_max))
    save = draw(st.lists(times, min_size=n_max, max_size=n_max))
    return np.array(load), np.array(save)


@pytest.mark.parametrize("mode", ["auto", "python"])
@pytest.mark.parametrize("policy", GANG_POLICIES)
@settings(max_examples=40, deadline=None)
@given(w=workloads())
def test_policy_invariants(policy, mode, w):
    servers, gpus, rows, slot = w
    engine, pol = _engine(policy, servers, gpus, rows, slot, mode)
    st_ = engine.state
    while engine.step(1):
        assert st_.gpu_n_jobs.max() <= engine.cluster.gpu_capacity
        held = st_.job_n_gpus[st_.run[: st_.sim_i[2]]].sum()
        assert held == engine.cluster.n_gpus - st_.sim_i[4]
        if getattr(pol, "work_conserving", False):
            queued = np.flatnonzero(st_.job_status == QUEUED)
            idle = engine.cluster.n_gpus - held
            assert not (st_.job_n_gpus[queued] <= idle).any(), "a queued job fits the idle GPUs"
    res = engine.result()
    assert (res.state.job_status == FINISHED).all()
    assert not np.isnan(res.state.job_finish).any()
    jct = res.state.job_finish - res.state.job_submit
    assert (jct >= res.state.job_work - 1e-6).all()


@pytest.mark.parametrize("policy", GANG_POLICIES)
@settings(max_examples=15, deadline=None)
@given(w=workloads(), seed=st.integers(0, 2**16))
def test_same_seed_same_schedule(policy, w, seed):
    servers, gpus, rows, slot = w
    a = _engine(policy, servers, gpus, rows, slot, "auto", seed)[0].run()
    b = _engine(policy, servers, gpus, rows, slot, "auto", seed)[0].run()
    for field in ("job_first_start", "job_finish", "job_n_preempt"):
        assert getattr(a.state, field).tobytes() == getattr(b.state, field).tobytes()


@pytest.mark.parametrize(
    "policy", [p for p in GANG_POLICIES if p in ("fifo", "sjf", "srtf", "tiresias")]
)
@settings(max_examples=40, deadline=None)
@given(w=workloads())
def test_fused_kernel_equals_python_decide(policy, w):
    """The jitted fast path and the readable decide() give the same schedule and timeline."""
    servers, gpus, rows, slot = w
    a = _engine(policy, servers, gpus, rows, slot, "fused")[0].run()
    b = _engine(policy, servers, gpus, rows, slot, "python")[0].run()
    assert a.state.job_finish.tobytes() == b.state.job_finish.tobytes()
    assert a.state.job_first_start.tobytes() == b.state.job_first_start.tobytes()
    assert a.state.job_n_preempt.tobytes() == b.state.job_n_preempt.tobytes()
    assert a.timeline["time_s"].tobytes() == b.timeline["time_s"].tobytes()
    assert a.timeline["busy_gpus"].tobytes() == b.timeline["busy_gpus"].tobytes()


def test_slot_length_moves_average_jct_by_at_most_a_slot():
    """Coarser slots delay decisions, but exact in-slot progress keeps the shift within one slot."""
    from gpusched.experiments.run import replay

    base, _ = replay("synth-500", "srtf", slot_s=1.0)
    for slot in (10.0, 60.0):
        s, _ = replay("synth-500", "srtf", slot_s=slot)
        assert abs(s["avg_jct_s"] - base["avg_jct_s"]) <= slot


@pytest.mark.parametrize("mode", ["auto", "python"])
@pytest.mark.parametrize("policy", GANG_POLICIES)
@settings(max_examples=25, deadline=None)
@given(w=workloads(), ph=phases())
def test_jct_is_wait_load_train_save(policy, mode, w, ph):
    """Lazer eq. 1 for every job under every policy, with load and save phases:
    JCT = W + L + T + P, futile time within load time, no save after a futile preemption."""
    servers, gpus, rows, slot = w
    n = len(rows)
    # rows are in submission order already (times accumulate), so job i has phases[i]
    engine, _ = _engine(policy, servers, gpus, rows, slot, mode, phases=(ph[0][:n], ph[1][:n]))
    res = engine.run()
    s = res.state
    jct = s.job_finish - s.job_submit
    parts = s.job_wait_s + s.job_load_spent_s + s.job_executed + s.job_save_spent_s
    assert np.allclose(parts, jct, rtol=1e-9, atol=1e-6)
    assert (s.job_futile_s <= s.job_load_spent_s + 1e-9).all()
    assert (s.job_n_futile <= s.job_n_preempt).all()
    # a job is charged a save only for preemptions after it trained something
    saves = s.job_n_preempt - s.job_n_futile
    assert (s.job_save_spent_s <= saves * s.job_save_s + 1e-6).all()
    assert np.allclose(s.job_executed * s.job_rate, s.job_work, rtol=1e-9, atol=1e-6)
    rec = job_records(res)  # the same split as jobs.csv reports it
    split = rec["wait_s"] + rec["load_s"] + rec["duration"] + rec["slowdown_s"] + rec["save_s"]
    assert np.allclose(split, rec["jct"], rtol=1e-9, atol=1e-6)


@settings(max_examples=60, deadline=None)
@given(
    w=workloads(),
    ph=phases(),
    starve=st.sampled_from([0.5, 1.0, 2.0, 5.0]),
    thresholds=st.sampled_from(["20", "50,200", "3250,7200"]),
)
def test_fused_tiresias_starvation_equals_python_decide(w, ph, starve, thresholds):
    """Tiresias' starvation rule (-p starve=K) in the kernel gives the Python policy's
    schedule bit for bit, with load and save phases."""
    servers, gpus, rows, slot = w
    n = len(rows)
    cluster = ClusterSpec.homogeneous(servers, gpus)
    params = {"starve": starve, "thresholds": thresholds}
    out = []
    for mode in ("fused", "python"):
        jobs = prepare_jobs(make_trace(rows), cluster)
        pol = make_policy(load_policy_class("tiresias"), params, 0)
        eng = Engine(jobs, cluster, pol, slot_s=slot, mode=mode, load_s=ph[0][:n], save_s=ph[1][:n])
        assert eng.mode == mode
        out.append(eng.run())
    a, b = out
    for f in ("job_finish", "job_first_start", "job_n_preempt", "job_attained"):
        assert getattr(a.state, f).tobytes() == getattr(b.state, f).tobytes(), f
    assert a.timeline["time_s"].tobytes() == b.timeline["time_s"].tobytes()
