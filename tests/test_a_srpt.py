"""A-SRPT (Alg. 1) and its baselines on pipeline jobs: hand-worked schedules, invariants."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusched.algorithms.virtual_srpt import VirtualSRPT
from gpusched.core.engine import Engine
from gpusched.core.jobs import prepare_jobs
from gpusched.core.policy import parse_params
from gpusched.core.registry import load_policy_class, make_policy
from gpusched.core.state import FINISHED
from gpusched.io.cluster import ClusterSpec
from gpusched.io.trace import Trace
from gpusched.jobmodels.catalogue import load_catalogue
from gpusched.jobmodels.heavy_edge import alpha_min_estimate
from gpusched.jobmodels.pipeline_jobs import PipelineJobs, PipelinePerf, resolve_config
from gpusched.results.metrics import job_records, summarize
from gpusched.workloads.annotate import annotate_trace
from tests.helpers import make_trace

A_SRPT_FAMILY = [
    "a-srpt",
    "a-srpt-perfect",
    "spjf",
    "spwf",
    "wcs-duration",
    "wcs-workload",
    "wcs-subtime",
]
CAT = load_catalogue()


def _cluster(servers: int = 2, gpus: int = 4) -> ClusterSpec:
    return ClusterSpec.homogeneous(servers, gpus, nic_gbps=10.0, intra_gbyte_s=300.0)


def _engine(
    trace: Trace, cluster: ClusterSpec, policy: str, params: list[str] | None = None, seed: int = 0
):
    cls = load_policy_class(policy)
    pol = make_policy(cls, parse_params(cls, params or []), seed)
    jobs = prepare_jobs(trace, cluster)
    return Engine(jobs, cluster, pol, mode="python", perf=PipelinePerf(jobs, cluster, CAT))


def test_virtual_srpt_order_by_hand():
    # Single unit-speed machine, preemptive SRPT (instance A~1):
    #   job  arrives  size
    #    0     0      10
    #    1     2       3
    #    2     3       1
    #    3     4       0    (unseen group: predicted 0 iterations)
    # t=0-2 job 0 runs (left 8); t=2 job 1 arrives (3 < 8) and runs; t=3 job 1 has 2 left,
    # job 2 (1) preempts it and completes at 4; job 3 arrives at 4 with size 0 and completes
    # at 4 (after job 2: completion before arrival at equal times); job 1 runs 4-6; job 0 6-14.
    v = VirtualSRPT(np.array([0.0, 2.0, 3.0, 4.0]), np.array([10.0, 3.0, 1.0, 0.0]))
    assert v.advance(3.5) == []
    assert v.next_completion() == pytest.approx(4.0)
    assert v.advance(4.0) == [2, 3]
    assert v.next_completion() == pytest.approx(6.0)
    assert v.advance(100.0) == [1, 0]
    np.testing.assert_allclose(v.completion, [14.0, 6.0, 4.0, 4.0])


def _trace(rows, models=None, configs=None, iterations=None) -> Trace:
    configs = configs or [""] * len(rows)
    return make_trace(rows, models=models, iterations=iterations, extra={"config": configs})


def test_golden_unannotated_order():
    # 2 servers x 4 GPUs (G = 8), unannotated jobs (alpha = 1, rate 1), oracle predictions.
    # Virtual sizes g/G * duration: j0 8/8*10 = 10, j1 4/8*4 = 2, j2 2/8*2 = 0.5, j3 1/8*20 = 2.5.
    # A~1: j0 runs 0-1; j2 (0.5) 1-1.5; j1 (2) 1.5-3.5; j3 (2.5) 3.5-6; j0 (9 left) 6-15.
    # Real cluster (1 s slots, a decision at each virtual completion rounded up to a slot):
    #   t=2  j2 pending -> starts (2 GPUs, least-available server 0), runs 2-4
    #   t=4  j1 pending -> starts (4 GPUs), runs 4-8
    #   t=6  j3 pending -> starts (1 GPU), runs 6-26
    #   t=15 j0 pending, needs 8 GPUs, 7 idle -> head of line waits (Alg. 1 line 25)
    #   t=26 j3 done -> j0 starts, runs 26-36
    trace = _trace([(0, 8, 10), (1, 4, 4), (1, 2, 2), (2, 1, 20)])
    res = _engine(trace, _cluster(), "a-srpt", ["predictor=oracle"]).run()
    np.testing.assert_allclose(res.state.job_first_start, [26, 4, 2, 6])
    np.testing.assert_allclose(res.state.job_finish, [36, 8, 4, 26])
    assert (res.state.job_n_preempt == 0).all()  # non-preemptive on the real cluster


def _delay_trace():
    # X: BERT-large as a 4-stage pipeline "1+1+1+1" (alpha_max / alpha_min = 3.0 on 4-GPU
    # servers, 10 Gbit/s, 300 GB/s: communication-heavy), 40 s of ideal work.
    spec = resolve_config(CAT, "BERT-large", (1, 1, 1, 1)).spec()
    a = alpha_min_estimate(spec, 10.0, 300.0, 4)
    rows = [(0, 3, 8), (4, 2, 20), (0, 4, 40)]
    return _trace(
        rows,
        models=["", "", "BERT-large"],
        configs=["", "", "1+1+1+1"],
        iterations=np.array([np.nan, np.nan, 40.0 / a]),
    )


def test_golden_delay_of_communication_heavy_job():
    # 2 x 4 GPUs, oracle, tau = 1. Sizes in A~1: b0 3/8*8 = 3, b1 2/8*20 = 5, X 4/8*40 = 20.
    # A~1: b0 0-3; X 3-4 (19 left); b1 arrives at 4 (5 < 19) 4-9; X 9-28.
    # Real:
    #   t=3  b0 starts on server 0 (GPUs 0-2), runs 3-11        idle per server [1, 4]
    #   t=9  b1 starts least-available: 1 GPU on each server     idle [0, 3]
    #   t=11 b0 done                                              idle [3, 3]
    #   t=28 X pending; most-available gives 3+1 GPUs, alpha/alpha_min = 2.0 > 1.5 ->
    #        wait (kappa = that alpha) until 28 + tau * 20 = 48 (lines 15-16)
    #   t=29 b1 done, idle [4, 4]: X on one server, alpha = alpha_min < kappa -> starts
    #        (line 19), runs 40 s at rate 1: 29-69
    trace = _delay_trace()
    res = _engine(trace, _cluster(), "a-srpt", ["predictor=oracle", "tau=1"]).run()
    # job index = submission order: 0 = b0, 1 = X (submitted at 0), 2 = b1 (at 4)
    np.testing.assert_allclose(res.state.job_first_start, [3, 29, 9])
    np.testing.assert_allclose(res.state.job_finish, [11, 69, 29])


def test_golden_no_delay_when_tau_is_zero():
    # Same, tau = 0 (the paper's testbed setting): X starts at 28 on 3+1 GPUs at rate
    # alpha_min / alpha(3+1) and takes 40 * alpha(3+1) / alpha_min s.
    trace = _delay_trace()
    cluster = _cluster()
    eng = _engine(trace, cluster, "a-srpt", ["predictor=oracle", "tau=0"])
    res = eng.run()
    pj = PipelineJobs(eng.jobs, cluster, CAT)
    ratio = pj.mapping(1, np.array([3, 1]))[0] / pj.alpha_min[1]  # job 1 = X
    assert 1.5 < ratio < 3.0
    assert res.state.job_first_start[1] == 28
    assert res.state.job_finish[1] == pytest.approx(
        28 + 40 * ratio, abs=1.0
    )  # finish within its slot


def test_perfect_is_oracle_and_registered():
    cls = load_policy_class("a-srpt-perfect")
    assert cls.name == "a-srpt-perfect"
    assert "predictor" not in parse_params.__globals__["policy_params"](cls)
    trace = _delay_trace()
    a = _engine(trace, _cluster(), "a-srpt-perfect").run()
    b = _engine(trace, _cluster(), "a-srpt", ["predictor=oracle"]).run()
    assert a.state.job_finish.tobytes() == b.state.job_finish.tobytes()


def test_baselines_orders_by_hand():
    # 1 server x 4 GPUs, unannotated, oracle predictions.
    # j0 (0, 4 GPUs, 10 s) runs 0-10. At 10, queued: j1 (1 GPU, 8 s), j2 (4 GPUs, 2 s),
    # j3 (2 GPUs, 3 s).
    #   predicted duration: j2 2 < j3 3 < j1 8;  workload: j2 8 = j1 8 > j3 6.
    #   spjf: j2 10-12, then j3 12-15 and j1 12-20.
    #   spwf: j3 first (6), then j1 (8, earlier than j2) both at 10; j2 (needs 4) waits for
    #         j3 (done 13) and j1 (done 18): starts at 18.
    #   wcs-subtime: j1, j3 at 10 (j2 does not fit, is skipped); j2 at 18.
    trace = _trace([(0, 4, 10), (1, 1, 8), (1, 4, 2), (1, 2, 3)])
    cl = _cluster(1, 4)
    starts = {
        p: _engine(trace, cl, p, [] if p == "wcs-subtime" else ["predictor=oracle"])
        .run()
        .state.job_first_start
        for p in ("spjf", "spwf", "wcs-subtime", "wcs-duration")
    }
    np.testing.assert_allclose(starts["spjf"], [0, 12, 10, 12])
    np.testing.assert_allclose(starts["spwf"], [0, 10, 18, 10])
    np.testing.assert_allclose(starts["wcs-subtime"], [0, 10, 18, 10])
    np.testing.assert_allclose(starts["wcs-duration"], [0, 12, 10, 12])


@pytest.mark.parametrize("policy", ["wcs-subtime", "wcs-duration", "spjf"])
def test_baselines_server_selection_by_hand(policy):
    # 2 servers x 4 GPUs, unannotated: j0 (3 GPUs) at 0, j1 (1 GPU) at 1, j2 (4 GPUs) at 2,
    # all long. j0 takes server 0 (both empty: lower index).
    #   select=fewest: j1 best fit -> server 0 (1 free); j2 gets the whole of server 1.
    #   select=most:   j1 -> server 1 (4 free); j2 is spread 1 + 3 over both servers.
    trace = _trace([(0, 3, 100), (1, 1, 100), (2, 4, 100)])
    cl = _cluster(2, 4)
    servers = {}
    for select in ("fewest", "most"):
        params = [f"select={select}"] + ([] if policy == "wcs-subtime" else ["predictor=oracle"])
        cls = load_policy_class(policy)
        pol = make_policy(cls, parse_params(cls, params), 0)
        jobs = prepare_jobs(trace, cl)
        eng = Engine(jobs, cl, pol, mode="python", until_s=5.0, perf=PipelinePerf(jobs, cl, CAT))
        eng.run()
        gpu_job = eng.state.gpu_job[:, 0]
        servers[select] = [sorted(set(np.flatnonzero(gpu_job == j) // 4)) for j in range(3)]
    assert servers["fewest"] == [[0], [0], [1]]
    assert servers["most"] == [[0], [1], [0, 1]]


def test_baselines_reject_unknown_select():
    from gpusched.errors import ParamError

    cls = load_policy_class("wcs-subtime")
    with pytest.raises(ParamError, match="select must be one of fewest, most, least"):
        make_policy(cls, parse_params(cls, ["select=best"]), 0)


@st.composite
def pipeline_workloads(draw):
    servers = draw(st.integers(1, 3))
    gpus = draw(st.sampled_from([4, 8]))
    n = draw(st.integers(1, 12))
    rows, t = [], 0.0
    for _ in range(n):
        t += draw(st.floats(0, 30, allow_nan=False).map(lambda x: round(x, 2)))
        g = draw(st.sampled_from([g for g in (1, 2, 4, 8) if g <= servers * gpus]))
        d = draw(st.floats(1, 300, allow_nan=False).map(lambda x: round(x, 2)))
        rows.append((t, g, d))
    seed = draw(st.integers(0, 2**16))
    slot = draw(st.sampled_from([1.0, 5.0]))
    select = draw(st.sampled_from(["fewest", "most", "least"]))  # the baselines' rule
    return servers, gpus, rows, seed, slot, select


@pytest.mark.parametrize("policy", A_SRPT_FAMILY)
@settings(max_examples=12, deadline=None)
@given(w=pipeline_workloads())
def test_pipeline_invariants(policy, w):
    servers, gpus, rows, seed, slot, select = w
    trace, _ = annotate_trace(_trace(rows), seed, CAT)
    cluster = _cluster(servers, gpus)
    cls = load_policy_class(policy)
    params = [] if policy in ("a-srpt-perfect", "wcs-subtime") else ["predictor=mean"]
    if not policy.startswith("a-srpt"):
        params.append(f"select={select}")
    pol = make_policy(cls, parse_params(cls, params), seed)
    jobs = prepare_jobs(trace, cluster)
    eng = Engine(
        jobs, cluster, pol, mode="python", slot_s=slot, perf=PipelinePerf(jobs, cluster, CAT)
    )
    s = eng.state
    finished_at: dict[int, float] = {}
    while eng.step(1):
        assert s.gpu_n_jobs.max() <= 1, "a GPU is over-allocated"
        held = s.job_n_gpus[s.run[: s.sim_i[2]]].sum()
        assert held == cluster.n_gpus - s.sim_i[4]
        for j in eng.view.finished:
            assert int(j) not in finished_at, "a job finished twice"
            finished_at[int(j)] = eng.now
    res = eng.result()
    assert (res.state.job_status == FINISHED).all()
    assert (res.state.job_n_preempt == 0).all()
    jct = res.state.job_finish - res.state.job_submit
    assert (jct > 0).all()
    # issue 14 part 4: what a job lost splits into waiting and slowdown beside its ideal time
    rec = job_records(res)
    parts = rec["wait_s"] + rec["load_s"] + rec["duration"] + rec["slowdown_s"] + rec["save_s"]
    assert np.allclose(parts, rec["jct"], rtol=1e-9, atol=1e-6)
    summary = summarize(res)
    assert summary["total_slowdown_s"] == pytest.approx(float(rec["slowdown_s"].sum()))
    assert summary["avg_slowdown_s"] == pytest.approx(float(rec["slowdown_s"].mean()))
