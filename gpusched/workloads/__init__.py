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


def _synth_default(seed: int, jobs: int | None = None) -> Trace:
    """Synthetic Philly-like jobs at offered load 0.8 on the default cluster (32 GPUs); 500 jobs by default."""
    from gpusched.cluster import load_cluster
    from gpusched.workloads.synth import synth_trace

    return synth_trace(jobs or 500, seed, load=0.8, n_gpus_cluster=load_cluster("default").n_gpus)


def _a_srpt(
    seed: int, jobs: int | None = None, cluster: str | None = None, **options: Any
) -> Trace:
    """A-SRPT paper (Sec. V-A): consecutive Philly jobs annotated with Table I models and configurations.

    ``cluster`` (a bundled name or TOML path) sets the GPUs that ``load`` refers to.
    """
    from gpusched.workloads.a_srpt import a_srpt_workload

    if cluster is not None:
        from gpusched.cluster import load_cluster

        options["n_gpus_cluster"] = load_cluster(cluster).n_gpus
    return a_srpt_workload(seed, jobs, **options)


WORKLOADS: dict[str, Callable[..., Trace]] = {
    "synth-default": _synth_default,
    "a-srpt": _a_srpt,
}


def build_workload(name: str, seed: int, jobs: int | None = None, **options: Any) -> Trace:
    """Build workload ``name`` with ``seed`` (and ``jobs`` where the preset takes a size).

    ``options`` (e.g. ``single_gpu_fraction`` for ``a-srpt``) are passed to the preset;
    one it does not take is an error.
    """
    if name not in WORKLOADS:
        raise GpuschedError(f"unknown workload '{name}' (known: {', '.join(sorted(WORKLOADS))})")
    given = {k: v for k, v in options.items() if v is not None}
    try:
        return WORKLOADS[name](seed, jobs, **given)
    except TypeError as exc:
        if "unexpected keyword" in str(exc):
            raise GpuschedError(f"workload '{name}' does not take {', '.join(given)}") from None
        raise
