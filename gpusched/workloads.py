"""Named, seeded, documented workloads: the one place each paper's evaluation workload is built.

``gpusched workload NAME --seed S -o FILE`` calls the generator registered here.
Each generator is a function ``(seed, jobs, **options) -> Trace`` whose docstring
says what it reproduces and from which source. Paper issues add their presets.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpusched.errors import GpuschedError
from gpusched.trace import Trace


def _synth_default(seed: int, jobs: int | None = None, **_: Any) -> Trace:
    """Synthetic Philly-like jobs at offered load 0.8 on the default cluster (32 GPUs); 500 jobs by default."""
    from gpusched.cluster import load_cluster
    from gpusched.synth import synth_trace

    return synth_trace(jobs or 500, seed, load=0.8, n_gpus_cluster=load_cluster("default").n_gpus)


WORKLOADS: dict[str, Callable[..., Trace]] = {
    "synth-default": _synth_default,
}


def build_workload(name: str, seed: int, jobs: int | None = None) -> Trace:
    """Build workload ``name`` with ``seed`` (and ``jobs`` where the preset takes a size)."""
    if name not in WORKLOADS:
        raise GpuschedError(f"unknown workload '{name}' (known: {', '.join(sorted(WORKLOADS))})")
    return WORKLOADS[name](seed, jobs)
