"""PD-ORS family speed (issues 28 and 33): the sizes whose targets docs/pd-ors.md reports.

PD-ORS on the paper's workload (seed 4) with I = 1,000, T = 20 and I = 2,000, T = 100 on
pd-ors-100, and Dorm at Fig. 7's size (I = 100, T = 20). One round each; the jitted
rounding helpers are compiled (or loaded) by a warm-up run on a small trace first. Run:
``pytest bench/test_pd_ors_speed.py --benchmark-only``.
"""

from __future__ import annotations

import pytest

from gpusched.core import helpers
from gpusched.experiments.run import replay
from gpusched.io.trace import write_trace
from gpusched.workloads.pd_ors import pd_ors_workload


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pd-ors")
    out = {}
    for jobs, horizon in ((20, 20), (100, 20), (1000, 20), (2000, 100)):
        path = folder / f"j{jobs}-t{horizon}.csv"
        write_trace(pd_ors_workload(4, jobs, horizon=horizon), path)
        out[jobs, horizon] = str(path)
    mode, helpers.MODE = helpers.MODE, "compiled"  # compile (or load) the jitted rounding
    try:  # helpers in the foreground, not while the measured runs go on
        replay(out[20, 20], "pd-ors", cluster="pd-ors-100")
    finally:
        helpers.MODE = mode
    return out


@pytest.mark.parametrize(
    ("policy", "jobs", "horizon"),
    [("pd-ors", 1000, 20), ("pd-ors", 2000, 100), ("dorm", 100, 20)],
)
def test_pd_ors_family(benchmark, traces, policy, jobs, horizon):
    summary, _ = benchmark.pedantic(
        replay,
        args=(traces[jobs, horizon], policy),
        kwargs={"cluster": "pd-ors-100"},
        rounds=1,
        warmup_rounds=0,
    )
    benchmark.extra_info["total_utility"] = summary["total_utility"]
    benchmark.extra_info["finished"] = summary["n_finished"]
