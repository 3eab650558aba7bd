"""Replay speed: synthetic traces of 10k, 100k and 1M jobs and the full Philly trace, per policy.

Each benchmark records ``jobs_per_s`` in its extra info. Numba compilation is
excluded (a session fixture warms every kernel, and 10k/100k runs take one warm-up
round). Run: ``pytest bench/ --benchmark-only`` (add ``-k 1000000`` for the big ones).
"""

from __future__ import annotations

import functools

import pytest

from bench.conftest import BENCH_CLUSTER, PHILLY, replay, synth_jobs

POLICIES = ["fifo", "sjf", "srtf", "tiresias"]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("n_jobs", [10_000, 100_000, 1_000_000])
def test_synthetic(benchmark, n_jobs, policy):
    jobs = synth_jobs(n_jobs)
    warm = 0 if n_jobs >= 1_000_000 else 1
    res = benchmark.pedantic(
        replay, args=(jobs, BENCH_CLUSTER, policy), rounds=1, warmup_rounds=warm
    )
    assert res.state.sim_i[3] == n_jobs  # every job finished
    benchmark.extra_info["jobs_per_s"] = n_jobs / benchmark.stats.stats.mean
    benchmark.extra_info["decisions"] = res.extra["n_decisions"]


@pytest.fixture(scope="module")
def philly_jobs():
    if not PHILLY.is_file():
        pytest.fail(
            f"the Philly benchmark needs {PHILLY}: put the full Philly trace there or name it"
            " by GPUSCHED_PHILLY (source in traces/README.md)"
        )
    from gpusched.core.jobs import prepare_jobs
    from gpusched.io.cluster import load_cluster
    from gpusched.workloads.importers import import_trace_with_report

    cluster = load_cluster("philly-64x8")
    trace, _ = import_trace_with_report("philly-pollux", PHILLY)
    return prepare_jobs(trace, cluster), cluster


@pytest.mark.parametrize("policy", POLICIES)
def test_philly_full(benchmark, philly_jobs, policy):
    jobs, cluster = philly_jobs
    res = benchmark.pedantic(replay, args=(jobs, cluster, policy), rounds=1, warmup_rounds=1)
    assert res.state.sim_i[3] == len(jobs)
    benchmark.extra_info["jobs_per_s"] = len(jobs) / benchmark.stats.stats.mean


@pytest.mark.parametrize("policy", ["srtf", "tiresias"])
def test_python_decide_path(benchmark, policy):
    """The readable decide() path on 10k jobs: what a Python policy costs per decision."""
    jobs = synth_jobs(10_000)
    res = benchmark.pedantic(
        replay, args=(jobs, BENCH_CLUSTER, policy, "python"), rounds=1, warmup_rounds=1
    )
    benchmark.extra_info["us_per_decision"] = (
        1e6 * benchmark.stats.stats.mean / res.extra["n_decisions"]
    )


@pytest.mark.parametrize("policy", ["sjf-ffs", "sjf-bsbf"])
@pytest.mark.parametrize("n_jobs", [10_000, 100_000])
def test_sharing(benchmark, n_jobs, policy):
    """GPU sharing (issue: 100k jobs on 64 x 8, C = 2, under sjf-bsbf in <= 60 s).

    The sjf-bsbf workload beyond its 4,000 bundled jobs (the busy window once a day) on
    sjf-bsbf-64x8; the job model's rates, the policy's decisions and the sharing kernel.
    """
    from gpusched.core import jobmodel
    from gpusched.core.engine import Engine
    from gpusched.core.jobs import prepare_jobs
    from gpusched.core.registry import load_policy_class, make_policy
    from gpusched.io.cluster import load_cluster
    from gpusched.workloads import WORKLOADS

    cluster = load_cluster("sjf-bsbf-64x8")
    jobs = prepare_jobs(WORKLOADS["sjf-bsbf"](1, n_jobs, cluster="sjf-bsbf-64x8"), cluster)

    def run():
        cls = load_policy_class(policy)
        perf = jobmodel.perf(jobs, cluster)
        return Engine(jobs, cluster, make_policy(cls, {}, 0), perf=perf, kernels="compiled").run()

    res = benchmark.pedantic(run, rounds=1, warmup_rounds=0)
    assert res.state.sim_i[3] == len(jobs)
    benchmark.extra_info["us_per_decision"] = (
        1e6 * benchmark.stats.stats.mean / res.extra["n_decisions"]
    )


@pytest.mark.parametrize("events", [False, True], ids=["plain", "events"])
@pytest.mark.parametrize("policy", ["fifo", "srtf"])
def test_event_log_cost(benchmark, policy, events):
    """The event log (replay --events) on 1M jobs, fused path: what keeping it costs, and
    that a run without it pays nothing (compare with test_synthetic's 1M figures)."""
    from gpusched.core.engine import Engine
    from gpusched.core.registry import load_policy_class, make_policy

    jobs = synth_jobs(1_000_000)

    def run():
        pol = make_policy(load_policy_class(policy), {}, 0)
        return Engine(jobs, BENCH_CLUSTER, pol, events=events, kernels="compiled").run()

    res = benchmark.pedantic(run, rounds=1, warmup_rounds=0)
    assert res.state.sim_i[3] == len(jobs)
    if events:
        benchmark.extra_info["events"] = len(res.extra["events"]["time_s"])


@functools.cache
def _lazer_earth(n_jobs: int):
    """The first ``n_jobs`` of lazer-earth (seed 1, the paper's setting) on lazer-sim-512."""
    import numpy as np

    from gpusched.core.jobs import prepare_jobs
    from gpusched.experiments.run import phase_times
    from gpusched.io.cluster import load_cluster
    from gpusched.workloads.lazer import lazer_helios_workload

    cluster = load_cluster("lazer-sim-512")
    trace = lazer_helios_workload("earth", 1).take(np.arange(n_jobs))
    jobs = prepare_jobs(trace, cluster)
    return jobs, cluster, phase_times(jobs, 0.0, 0.0)


@pytest.mark.parametrize("policy", ["srtf", "lazer", "lazer:max_defer=0"])
def test_lazer_earth_50k(benchmark, policy):
    """Lazer's rule in the kernel against srtf's, with 113 s loads and Helios-shaped arrivals:
    the kernel asks the policy for X at every arrival that would preempt."""
    from gpusched.core.engine import Engine
    from gpusched.core.policy import parse_params
    from gpusched.core.registry import load_policy_class, make_policy

    jobs, cluster, (load, save) = _lazer_earth(50_000)
    name, _, params = policy.partition(":")
    cls = load_policy_class(name)

    def run():
        pol = make_policy(cls, parse_params(cls, [params] if params else []), 0)
        eng = Engine(jobs, cluster, pol, load_s=load, save_s=save, kernels="compiled")
        return eng.run(), pol

    res, pol = benchmark.pedantic(run, rounds=1, warmup_rounds=1)
    assert res.state.sim_i[3] == len(jobs)
    benchmark.extra_info["decisions"] = res.extra["n_decisions"]
    benchmark.extra_info["predictions"] = len(getattr(pol, "xs", []))
