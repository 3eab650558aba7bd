"""Shared fixtures of the benchmark suite (run with ``pytest bench/ --benchmark-only``)."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest

from gpusched.core.engine import Engine
from gpusched.core.jobs import prepare_jobs
from gpusched.core.registry import load_policy_class, make_policy
from gpusched.core.warmup import PATHS, warm_up
from gpusched.io.cluster import ClusterSpec
from gpusched.workloads.synth import synth_trace

#: 32 x 8 = 256 GPUs; the synthetic traces are generated at 0.8 offered load for it
BENCH_CLUSTER = ClusterSpec.homogeneous(32, 8, name="bench-32x8")
#: the full Philly trace (82,247 jobs, released with Pollux; source in traces/README.md):
#: $GPUSCHED_PHILLY, else bench/data/philly_jobs.csv.gz (not committed)
PHILLY = Path(
    os.environ.get("GPUSCHED_PHILLY")
    or Path(__file__).resolve().parent / "data" / "philly_jobs.csv.gz"
)


@functools.cache
def synth_jobs(n_jobs: int):
    """A seeded synthetic job table of ``n_jobs`` at 0.8 load on :data:`BENCH_CLUSTER`."""
    trace = synth_trace(n_jobs, 1, load=0.8, n_gpus_cluster=BENCH_CLUSTER.n_gpus)
    return prepare_jobs(trace, BENCH_CLUSTER)


def replay(jobs, cluster, policy: str, mode: str = "auto"):
    """One full replay (policy construction included) on the compiled kernels (the
    interpreted twin that small runs of a command use is timed in test_commands.py)."""
    pol = make_policy(load_policy_class(policy), {}, 0)
    return Engine(jobs, cluster, pol, mode=mode, kernels="compiled").run()


@pytest.fixture(scope="session", autouse=True)
def warm_numba():
    """Load (or compile) every kernel once so no benchmark times JIT compilation."""
    for path in PATHS:
        warm_up(path)
    jobs = synth_jobs(200)
    for policy in ("fifo", "sjf", "srtf", "tiresias"):
        replay(jobs, BENCH_CLUSTER, policy)
