"""Loading (or, on the first run after install, compiling) the compiled kernels ahead of a run.

``gpusched warm-up`` and the engine's move to the compiled kernels call :func:`warm_up`: a
tiny simulation on one engine path that calls every kernel entry point once, so Numba loads
them from its cache (or compiles and caches them).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpusched.core.engine import Engine
from gpusched.core.jobs import JobTable
from gpusched.core.policy import Decision, Fused, Preempt, Start
from gpusched.core.state import KEY_LAS
from gpusched.core.view import View

__all__ = ["compiled_in_cache", "loaded", "warm_up"]


class _WarmUpPolicy:
    """A throw-away policy that makes the Python path call every kernel entry point once."""

    name = "warm-up"
    knows_duration = False
    work_conserving = False
    needs_predictor = False

    def decide(self, view: View, now: float) -> Decision:
        queued = view.queued
        if view.running.size:
            return Decision(actions=[Preempt(int(view.running[0]))], wake_at=now + 1.0)
        if queued.size > 1:
            free = np.flatnonzero(view.gpu_n_jobs == 0)[:1]
            return Decision(actions=[Start(int(queued[0]), free.astype(np.int32))])
        return Decision(order=np.asarray(queued), preemptive=True)


#: engine paths ("fused", "python") whose compiled kernels this process has loaded
_warm: set[str] = set()


def loaded(mode: str) -> bool:
    """Has this process loaded the compiled kernels of engine path ``mode``?"""
    return mode in _warm


def compiled_in_cache(mode: str = "python") -> bool:
    """Are the compiled kernels of engine path ``mode`` loaded, or in Numba's cache?"""
    if mode in _warm:
        return True
    return _warm_up_engine(mode, "interpreted")._compiled_cached()


def warm_up(mode: str = "python") -> None:
    """Load the kernels of one engine path now (compiling them on the first run after install).

    Numba loads (or compiles) a kernel at its first call; without this, the first run
    of a process would pay that inside its ``wall_s`` (about a second from the cache,
    tens of seconds on a first run). Runs a tiny simulation on the ``"fused"`` or
    ``"python"`` path; later calls for the same path return at once.
    """
    if mode in _warm:
        return
    _warm.add(mode)
    _warm_up_engine(mode, "compiled").run()


def _warm_up_engine(mode: str, kernels: str) -> Engine:
    """A three-job engine that calls every kernel of path ``mode`` once it runs."""
    from gpusched.io.cluster import ClusterSpec

    cluster = ClusterSpec.homogeneous(1, 2, name="warm-up")
    table = JobTable(
        job_id=np.array(["a", "b", "c"], dtype=object),
        submit_s=np.array([0.0, 0.0, 1.0]),
        n_gpus=np.array([1, 1, 2], dtype=np.int32),
        work_s=np.array([2.0, 3.0, 1.0]),
        row=np.arange(3),
    )
    if mode == "fused":
        return Engine(table, cluster, _WarmUpFused(), mode="fused", kernels=kernels)
    return Engine(table, cluster, _WarmUpPolicy(), mode="python", perf=_UnitRate(), kernels=kernels)


class _WarmUpFused(_WarmUpPolicy):
    def fused(self) -> Fused:
        return Fused(KEY_LAS, preemptive=True, thresholds=(1.0,))


class _UnitRate:
    """A performance model that keeps every job at rate 1 (exercises ``set_rate``)."""

    def rate(self, job: int, gpus: np.ndarray, config: Any = None) -> float:
        return 1.0
