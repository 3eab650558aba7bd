"""Loading (or, when Numba's cache lacks them, compiling) the compiled kernels ahead of a run.

``gpusched warm-up``, the install's build hook (``hatch_build.py``) and the engine's move to
the compiled kernels call :func:`warm_up`: a tiny simulation on one engine path that calls
every kernel entry point once, so Numba loads them from its cache (or compiles and caches
them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from gpusched.core.engine import Engine
from gpusched.core.jobs import JobTable
from gpusched.core.policy import Decision, Fused, Preempt, Start
from gpusched.core.state import KEY_LAS, KEY_LAZER
from gpusched.core.view import View

__all__ = ["PATHS", "compiled_in_cache", "kernel_count", "loaded", "warm_up"]

#: the kernel sets a run may need, each warmed up on its own: the fused path, its entry for
#: Lazer's rule, and the Python path
PATHS = ("fused", "lazer", "python")


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


def warm_up(mode: str = "python", compiling: Callable[[str], None] | None = None) -> None:
    """Load the kernels of one engine path now (compiling them if Numba's cache lacks them).

    Numba loads (or compiles) a kernel at its first call; without this, the first run
    of a process would pay that inside its ``wall_s`` (0.2 s from the cache, seconds on
    a first run). Runs a tiny simulation on one of :data:`PATHS`: ``"fused"``,
    ``"python"``, or ``"lazer"`` (the fused path's entry for Lazer's rule, compiled apart
    so that other runs need not compile it); later calls for the same path return at once.
    ``compiling(name)`` is called as each kernel function starts compiling (none when all
    are in the cache); :func:`kernel_count` of them compile on a first warm-up of all
    :data:`PATHS`.
    """
    if mode in _warm:
        return
    _warm.add(mode)
    if compiling is None:
        _run(mode)
        return
    import numba.core.event as ev

    from gpusched.core.jit import KERNEL_MODULE

    seen: set[str] = set()
    report = compiling

    class Listener(ev.Listener):
        def on_start(self, event: Any) -> None:
            fn = event.data["dispatcher"].py_func
            if fn.__module__ == KERNEL_MODULE and fn.__name__ not in seen:
                seen.add(fn.__name__)
                report(fn.__name__)

        def on_end(self, event: Any) -> None:
            pass

    with ev.install_listener("numba:compile", Listener()):
        _run(mode)


def _run(mode: str) -> None:
    eng = _warm_up_engine(mode, "compiled")
    if not eng.k.load_peek(eng.cfg):  # compile the three small kernels the TUI's peek calls
        eng.peek()
        eng.step()
        eng.peek()
    eng.run()


def kernel_count() -> int:
    """How many kernel functions a first warm-up of all :data:`PATHS` compiles (all of them)."""
    from gpusched.core.jit import KERNEL_MODULE, compiled

    module = compiled(KERNEL_MODULE)
    return sum(
        1
        for v in vars(module).values()
        if getattr(getattr(v, "py_func", None), "__module__", None) == KERNEL_MODULE
    )


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
    if mode in ("fused", "lazer"):
        policy = _WarmUpFused() if mode == "fused" else _WarmUpLazer()
        return Engine(table, cluster, policy, mode="fused", kernels=kernels)
    return Engine(table, cluster, _WarmUpPolicy(), mode="python", perf=_UnitRate(), kernels=kernels)


class _WarmUpFused(_WarmUpPolicy):
    def fused(self) -> Fused:
        return Fused(KEY_LAS, preemptive=True, thresholds=(1.0,))


class _WarmUpLazer(_WarmUpPolicy):
    def fused(self) -> Fused:
        return Fused(KEY_LAZER)


class _UnitRate:
    """A performance model that keeps every job at rate 1 (exercises ``set_rate``)."""

    def rate(self, job: int, gpus: np.ndarray, config: Any = None) -> float:
        return 1.0


def main(argv: list[str]) -> int:
    """``python -m gpusched.core.warmup MODE [LOCK]``: compile (or load) engine path MODE's
    kernels into Numba's cache, then remove the lock file LOCK (see
    :mod:`gpusched.core.background`)."""
    mode = argv[0]
    try:
        warm_up(mode)
    finally:
        if len(argv) > 1:
            from pathlib import Path

            Path(argv[1]).unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
