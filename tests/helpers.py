"""Small builders shared by the tests."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpusched.cluster import ClusterSpec
from gpusched.engine import Engine, RunResult
from gpusched.jobs import prepare_jobs
from gpusched.policy import parse_params
from gpusched.registry import available_policies, load_policy_class, make_policy
from gpusched.trace import Trace


def make_trace(
    rows: list[tuple[float, int, float]],
    source: str = "test",
    *,
    models: list[str] | None = None,
    iterations: np.ndarray | None = None,
    extra: dict[str, Any] | None = None,
) -> Trace:
    """A trace from (submit s, GPUs, duration s) rows; job ids are j0, j1, ...

    ``models``, ``iterations`` and ``extra`` columns default to empty / NaN / none.
    """
    n = len(rows)
    return Trace(
        job_id=[f"j{i}" for i in range(n)],
        submit_time=[r[0] for r in rows],
        num_gpus=[r[1] for r in rows],
        duration=[r[2] for r in rows],
        iterations=iterations if iterations is not None else np.full(n, np.nan),
        model=models or [""] * n,
        extra=extra or {},
        source=source,
    )


def run(
    rows: list[tuple[float, int, float]],
    policy: str,
    servers: int = 1,
    gpus: int = 4,
    *,
    params: list[str] | None = None,
    slot: float = 1.0,
    mode: str = "auto",
    seed: int = 0,
    **cluster_kw: Any,
) -> RunResult:
    """Replay ``rows`` on a homogeneous cluster under ``policy``."""
    cluster = ClusterSpec.homogeneous(servers, gpus, **cluster_kw)
    cls = load_policy_class(policy)
    kwargs = parse_params(cls, params or [])
    jobs = prepare_jobs(make_trace(rows), cluster)
    return Engine(jobs, cluster, make_policy(cls, kwargs, seed), slot_s=slot, mode=mode).run()


ALL_POLICIES = sorted(available_policies())
#: policies that place jobs by roles (parameter-server jobs on the resource ledger) and
#: those that place gangs on GPU indices: a run holds one kind of job only
ROLE_POLICIES = [p for p in ALL_POLICIES if getattr(load_policy_class(p), "places_roles", False)]
#: policies that run jobs made of data chunks (srtf runs both those and gangs)
TASK_POLICIES = [p for p in ALL_POLICIES if getattr(load_policy_class(p), "runs_tasks", False)]
_TASK_ONLY = [p for p in TASK_POLICIES if getattr(load_policy_class(p), "needs_tasks", False)]
GANG_POLICIES = [p for p in ALL_POLICIES if p not in ROLE_POLICIES and p not in _TASK_ONLY]
