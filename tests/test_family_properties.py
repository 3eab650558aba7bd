"""Property tests of the policies no other property test covers: Dorm and DRF (jobs placed
by roles on the resource ledger) and Pollux and Optimus (goodput jobs).

The other policies have theirs: the gang policies in ``tests/test_properties.py``, PD-ORS
and OASiS in ``tests/test_pd_ors.py``, FIFO-PS in ``tests/test_ledger.py``, the chunk
policies in ``tests/test_edge_cloud.py``. The engine checks its invariants after every run
(capacity, work conserved, JCT = W + L + T + P); these add what each policy owes on random
small workloads: no resource over-committed at any time, every job finished, nothing
rejected that the policy has no rule to reject, the same schedule for the same inputs, and
each policy's own rule (Dorm's cap on adjustments, Pollux's one restart per re-allocation).
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpusched.core.registry import load_policy_class, make_policy
from gpusched.core.state import FINISHED
from gpusched.experiments.run import replay
from gpusched.io.trace import write_trace
from gpusched.workloads.pollux import pollux_workload
from tests.test_dorm import TOTAL, Recorder, adjustments, trace
from tests.test_ledger import engine

# --------------------------------------------------------------------------- Dorm and DRF


@st.composite
def ps_jobs(draw):
    """Columns and submission times of 1-8 parameter-server jobs that each fit a machine
    (8 GPUs, 20 CPUs) on their own: some need GPUs, some only CPUs."""
    n = draw(st.integers(1, 8))
    ints = lambda lo, hi: draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n))  # noqa: E731
    cols = {
        "global_batch": ints(1, 12),
        "ps_ratio": draw(st.lists(st.sampled_from([1, 2, 4]), min_size=n, max_size=n)),
        "worker_gpus": ints(0, 2),
        "worker_cpus": ints(1, 4),
        "ps_cpus": ints(1, 3),
        "epochs": ints(1, 12),
    }
    submit = sorted(float(s) for s in ints(0, 30))
    return cols, submit


def _run_ps(name: str, cols, submit, **params):
    policy = make_policy(load_policy_class(name), params, 0)
    return engine(trace(cols, submit), policy).run()


def _held_within_capacity(res) -> None:
    for r, resource in enumerate(("gpus", "cpus", "mem_gb", "storage_gb")):
        assert (res.timeline[f"held_{resource}"] <= TOTAL[r] + 1e-9).all(), resource


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jobs=ps_jobs(), name=st.sampled_from(["dorm", "drf"]))
def test_role_policies_finish_every_job_within_capacity(jobs, name):
    cols, submit = jobs
    res = _run_ps(name, cols, submit)
    st_ = res.state
    assert (st_.job_status == FINISHED).all()  # neither rejects: every job fits a machine
    assert (st_.job_first_start >= st_.job_submit - 1e-9).all()
    _held_within_capacity(res)
    again = _run_ps(name, cols, submit)
    np.testing.assert_array_equal(again.state.job_first_start, st_.job_first_start)
    np.testing.assert_array_equal(again.state.job_finish, st_.job_finish)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jobs=ps_jobs(), cap=st.integers(0, 3))
def test_dorm_never_adjusts_more_running_jobs_than_its_cap(jobs, cap):
    cols, submit = jobs
    rec = Recorder(max_adjust=cap)
    res = engine(trace(cols, submit), rec).run()
    assert (res.state.job_status == FINISHED).all()
    assert max(adjustments(rec.log), default=0) <= cap
    _held_within_capacity(res)


# --------------------------------------------------------------------------- Pollux, Optimus

#: 4 nodes x 4 T4 (the Pollux cluster's nodes, 16 GPUs): small enough for jobs to contend
CLUSTER = """[cluster]
name = "pollux-4x4"
description = "4 nodes of pollux-16x4"
nic_gbps = 50.0
allow_spread = true

[[servers]]
count = 4
gpus = 4
gpu_type = "T4"
gpu_mem_gb = 16.0
cpus = 48
mem_gb = 192.0
storage_gb = 900.0
"""

#: the jobs of the artifact's workload 1 that fit 16 GPUs
_WORKLOAD = pollux_workload(1)
_FITS = np.flatnonzero(_WORKLOAD.num_gpus <= 16)


@st.composite
def goodput_jobs(draw):
    """2-8 jobs of the artifact's workload 1, submitted within 10 minutes of each other."""
    n = draw(st.integers(2, 8))
    rows = np.sort(
        draw(st.lists(st.sampled_from(_FITS.tolist()), min_size=n, max_size=n, unique=True))
    )
    submit = np.sort(draw(st.lists(st.integers(0, 600), min_size=n, max_size=n)))
    sub = _WORKLOAD.take(np.asarray(rows))
    return dataclasses.replace(sub, submit_time=np.asarray(submit, dtype=float))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jobs=goodput_jobs(), name=st.sampled_from(["pollux", "optimus"]))
def test_goodput_policies_finish_every_job_within_capacity(jobs, name):
    with tempfile.TemporaryDirectory() as tmp:
        path, cluster = Path(tmp) / "w.csv", Path(tmp) / "c.toml"
        write_trace(jobs, path)
        cluster.write_text(CLUSTER)
        summary, res = replay(str(path), name, cluster=str(cluster))
        st_ = res.state
        assert summary["n_finished"] == len(jobs.job_id)
        assert (res.timeline["busy_gpus"] <= 16).all()
        # a (re-)allocation costs its restart once, and none is futile: Pollux re-allocates
        # only jobs whose restart its discount has paid for, at whole minutes
        assert (st_.job_n_futile == 0).all()
        per_start = st_.job_load_spent_s / (st_.job_n_preempt + 1)
        np.testing.assert_allclose(per_start, per_start[0])
        again, res2 = replay(str(path), name, cluster=str(cluster))
        np.testing.assert_array_equal(res2.state.job_finish, st_.job_finish)
        assert again["avg_jct_s"] == summary["avg_jct_s"]
