"""What a run hands out: everything it produced (:class:`RunResult`), and copies of the state
a viewer draws while it runs (:class:`Snapshot`). :mod:`gpusched.results` reads these."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpusched.core.jobs import JobTable
from gpusched.core.state import SimState
from gpusched.io.cluster import ClusterSpec

__all__ = ["RunResult", "Snapshot"]


@dataclass(slots=True)
class Snapshot:
    """Copies of what a viewer needs at one moment (safe to hand to another thread)."""

    now: float
    n_jobs: int
    n_finished: int
    job_status: np.ndarray
    gpu_job: np.ndarray
    queued: np.ndarray
    running: np.ndarray
    timeline: dict[str, np.ndarray]


@dataclass(slots=True)
class RunResult:
    """Everything a finished (or stopped) run produced; :mod:`gpusched.results.metrics` reads it."""

    jobs: JobTable
    cluster: ClusterSpec
    policy_name: str
    params: dict[str, Any]
    seed: int
    slot_s: float
    mode: str
    state: SimState
    timeline: dict[str, np.ndarray]
    wall_s: float
    stopped_at: float | None
    sched_delay_s: np.ndarray | None
    extra: dict[str, Any] = field(default_factory=dict)
