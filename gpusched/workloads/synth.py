"""Seeded synthetic traces calibrated roughly to Microsoft Philly, and trace summary statistics.

:func:`synth_trace` draws, from one ``np.random.default_rng(seed)`` and in this order:

1. GPU counts from a categorical mix over {1, 2, 4, 8, 16, 32} (default: the Philly
   shares of ``philly_jobs.csv`` in the Pollux artifact, renormalised over these sizes:
   1 GPU 93.2 %, 2 2.2 %, 4 2.3 %, 8 2.0 %, 16 0.24 %, 32 0.08 %). Sizes larger than the
   cluster are removed and the rest renormalised, so every job fits.
2. Durations from a three-component log-normal mixture fitted to the Philly duration
   quantiles (p10 61 s, p25 115 s, p50 1,144 s, p75 2,932 s, p90 11,265 s, p95 43,646 s,
   p99 254,758 s): weights 0.349 / 0.513 / 0.138, medians 83 s / 1,729 s / 24,550 s, log
   standard deviations 0.562 / 0.757 / 1.581. Durations are rounded to whole seconds and
   clipped to [1 s, ``max_duration_s``] (default 7 days = 604,800 s, about Philly's
   p99.6; Philly's real maximum is 53 days). Durations are independent of GPU counts
   (in Philly, bigger jobs tend to run longer; this generator ignores that).
3. Poisson arrivals: exponential inter-arrival gaps with mean
   ``sum(g * d) / ((n - 1) * load * n_gpus_cluster)``, computed from the drawn jobs, so the
   offered load ``sum(g * d) / (span * n_gpus_cluster)`` equals ``load`` in expectation
   whatever the heavy tail drew. The first job arrives at 0 s; times are rounded to 1 ms.

Everything is vectorised NumPy: a million jobs generate in well under 2 s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from gpusched.core import portable
from gpusched.core.portable import dot
from gpusched.errors import GpuschedError
from gpusched.io.trace import Trace

__all__ = [
    "PHILLY_DURATION_MIXTURE",
    "PHILLY_GPU_MIX",
    "demand_load",
    "offered_load",
    "philly_durations",
    "synth_trace",
    "top_jobs",
    "trace_stats",
]

PHILLY_GPU_MIX: dict[int, float] = {
    1: 0.9317,
    2: 0.0221,
    4: 0.0227,
    8: 0.0200,
    16: 0.0024,
    32: 0.0008,
}
"""Share of jobs per GPU count in Philly (renormalised by :func:`synth_trace`)."""

PHILLY_DURATION_MIXTURE: tuple[tuple[float, float, float], ...] = (
    # (weight, median s, sigma of log)
    (0.3488, 83.19, 0.5622),
    (0.5128, 1729.0, 0.7567),
    (0.1384, 24550.0, 1.5809),
)
"""Log-normal mixture fitted to Philly's duration quantiles (see the module docstring)."""

DurationDist = Callable[[np.random.Generator, int], np.ndarray]


def philly_durations(rng: np.random.Generator, n: int) -> np.ndarray:
    """Draw ``n`` unclipped durations from :data:`PHILLY_DURATION_MIXTURE`.

    Parameters
    ----------
    rng
        Random generator (two draws of size ``n``: component, then standard normal).
    n
        Number of durations.

    Returns
    -------
    numpy.ndarray
        Durations in seconds (float64).
    """
    w = np.array([c[0] for c in PHILLY_DURATION_MIXTURE])
    mu = portable.log([c[1] for c in PHILLY_DURATION_MIXTURE])
    sigma = np.array([c[2] for c in PHILLY_DURATION_MIXTURE])
    comp = rng.choice(len(w), size=n, p=w / w.sum())
    z = rng.standard_normal(n)
    return portable.exp(mu[comp] + sigma[comp] * z)


_DURATION_DISTS: dict[str, DurationDist] = {"philly": philly_durations}


def synth_trace(
    n_jobs: int,
    seed: int,
    *,
    load: float = 0.8,
    n_gpus_cluster: int = 64,
    gpu_mix: Mapping[int, float] | None = None,
    duration_dist: str | DurationDist = "philly",
    max_duration_s: float = 7 * 86400.0,
) -> Trace:
    """Generate a reproducible synthetic trace with Philly-like sizes and durations.

    Parameters
    ----------
    n_jobs
        Number of jobs (>= 1).
    seed
        Seed of ``np.random.default_rng``; the same arguments give the identical trace.
    load
        Target offered load ``sum(num_gpus * duration) / (span * n_gpus_cluster)``, a
        fraction of the cluster's GPU capacity (> 0).
    n_gpus_cluster
        GPUs in the cluster the load is computed for (>= 1); larger jobs are not drawn.
    gpu_mix
        ``{num_gpus: weight}``; default :data:`PHILLY_GPU_MIX`. Weights are renormalised
        after dropping sizes above ``n_gpus_cluster``.
    duration_dist
        ``"philly"`` (the default mixture) or a function ``(rng, n) -> durations in s``.
    max_duration_s
        Upper clip of durations, seconds (default 7 days).

    Returns
    -------
    Trace
        Jobs ``s0000001``, ``s0000002``, ... in arrival order, with ``submit_time`` (s,
        first at 0), ``num_gpus`` and ``duration`` (whole seconds); no extra columns.

    Raises
    ------
    GpuschedError
        On a non-positive count, load or cluster size, or a mix with no size that fits.
    """
    if n_jobs < 1:
        raise GpuschedError(f"n_jobs must be >= 1, got {n_jobs}")
    if not load > 0:
        raise GpuschedError(f"load must be > 0, got {load}")
    if n_gpus_cluster < 1:
        raise GpuschedError(f"n_gpus_cluster must be >= 1, got {n_gpus_cluster}")
    if not max_duration_s >= 1:
        raise GpuschedError(f"max_duration_s must be >= 1, got {max_duration_s}")
    mix = {int(g): float(w) for g, w in (gpu_mix or PHILLY_GPU_MIX).items()}
    mix = {g: w for g, w in mix.items() if 1 <= g <= n_gpus_cluster and w > 0}
    if not mix:
        raise GpuschedError(f"no GPU count in gpu_mix fits a {n_gpus_cluster}-GPU cluster")
    if isinstance(duration_dist, str):
        try:
            dist = _DURATION_DISTS[duration_dist]
        except KeyError:
            known = ", ".join(sorted(_DURATION_DISTS))
            raise GpuschedError(
                f"unknown duration_dist {duration_dist!r}; known: {known} (or a function)"
            ) from None
    else:
        dist = duration_dist

    rng = np.random.default_rng(seed)
    sizes = np.array(sorted(mix), dtype=np.int32)
    weights = np.array([mix[g] for g in sorted(mix)])
    gpus = rng.choice(sizes, size=n_jobs, p=weights / weights.sum())
    dur = np.clip(np.rint(np.asarray(dist(rng, n_jobs), dtype=np.float64)), 1.0, max_duration_s)

    work = dot(gpus.astype(np.float64), dur)  # GPU-seconds
    submit = np.zeros(n_jobs)
    if n_jobs > 1:
        mean_gap = work / ((n_jobs - 1) * load * n_gpus_cluster)
        submit[1:] = np.cumsum(rng.exponential(mean_gap, size=n_jobs - 1))
        submit = np.round(submit, 3)
    job_id = np.array([f"s{i:07d}" for i in range(1, n_jobs + 1)], dtype=object)
    return Trace(
        job_id=job_id,
        submit_time=submit,
        num_gpus=gpus,
        duration=dur,
        iterations=np.full(n_jobs, np.nan),
        model=np.full(n_jobs, "", dtype=object),
        extra={},
        source=(
            f"synth_trace(n_jobs={n_jobs}, seed={seed}, load={load}, "
            f"n_gpus_cluster={n_gpus_cluster})"
        ),
    )


def top_jobs(gpu_s: np.ndarray, share: float) -> np.ndarray:
    """Mask of the ``ceil(share * n)`` jobs with the most GPU-seconds (ties: the earlier job).

    Parameters
    ----------
    gpu_s
        GPU-seconds per job (``num_gpus * duration``).
    share
        Share of jobs to mark, in [0, 1]; 0 marks none.
    """
    x = np.asarray(gpu_s, dtype=np.float64)
    mask = np.zeros(x.shape[0], dtype=bool)
    k = int(np.ceil(share * x.shape[0] - 1e-9)) if share > 0 else 0
    if k > 0:
        mask[np.argsort(-x, kind="stable")[:k]] = True
    return mask


def offered_load(trace: Trace, n_gpus_cluster: int, exclude_top: float = 0.0) -> float:
    """Offered load ``sum(num_gpus * duration) / (span * n_gpus_cluster)``.

    Only jobs with a duration count; ``span`` is last minus first submit time, seconds (of
    all jobs, whatever ``exclude_top`` leaves out).

    Parameters
    ----------
    trace
        The trace.
    n_gpus_cluster
        GPUs in the cluster.
    exclude_top
        Share of jobs, most GPU-seconds first (:func:`top_jobs`), left out of the sum: 0.01
        gives the load of the "body" without the top 1 % of jobs.

    Returns
    -------
    float
        Fraction of GPU capacity (``inf`` if the span is 0 and there is work, NaN if there
        is no work and no span).
    """
    has = ~np.isnan(trace.duration)
    g = trace.num_gpus[has].astype(np.float64)
    d = trace.duration[has]
    if exclude_top > 0:
        keep = ~top_jobs(g * d, exclude_top)
        g, d = g[keep], d[keep]
    work = dot(g, d)
    span = float(np.ptp(trace.submit_time)) if len(trace) else 0.0
    if span == 0:
        return float("inf") if work > 0 else float("nan")
    return work / (span * n_gpus_cluster)


def demand_load(trace: Trace, n_gpus_cluster: int) -> float:
    """The GPU-time that jobs ask for *inside* the arrival window, over the window's capacity.

    :math:`D = \\sum_i g_i \\min(d_i, t_{last} - s_i) / (\\text{span} \\cdot G)`: each job counts
    only the part of its duration that would fall before the last arrival if it started on
    arrival. Below 1 an unbounded start-on-arrival schedule would not fill the cluster
    during the window, so few jobs need wait however high the offered load (whose work may
    lie mostly after the window, in a few long jobs).

    Parameters
    ----------
    trace
        The trace (jobs without a duration do not count).
    n_gpus_cluster
        GPUs in the cluster.

    Returns
    -------
    float
        The ratio (NaN when the span is 0).
    """
    has = ~np.isnan(trace.duration)
    s = trace.submit_time[has]
    span = float(np.ptp(trace.submit_time)) if len(trace) else 0.0
    if span == 0:
        return float("nan")
    end = float(np.max(trace.submit_time))
    inside = np.minimum(trace.duration[has], end - s)
    return dot(trace.num_gpus[has].astype(np.float64), inside) / (span * n_gpus_cluster)


def _percentiles(x: np.ndarray) -> dict[str, float] | None:
    if x.size == 0:
        return None
    p50, p90, p99 = np.percentile(x, [50, 90, 99])
    return {"p50": float(p50), "p90": float(p90), "p99": float(p99), "max": float(x.max())}


def trace_stats(trace: Trace, n_gpus_cluster: int | None = None) -> dict[str, Any]:
    """Summarise a trace.

    Parameters
    ----------
    trace
        The trace.
    n_gpus_cluster
        If given, also report ``offered_load`` for a cluster of this many GPUs.

    Returns
    -------
    dict
        ``jobs`` (count); ``jobs_with_duration`` and ``jobs_by_iterations`` (jobs given by
        iterations + model only, no duration); ``span_s`` (last minus first submit time,
        s); ``gpu_mix`` (``{num_gpus: jobs}``, ascending, all jobs); ``duration_s`` and
        ``interarrival_s`` (``{"p50", "p90", "p99", "max"}`` in s, linear-interpolated
        percentiles; ``None`` when there is no duration / fewer than 2 jobs; inter-arrival
        gaps are taken over submit times sorted stably); ``gpu_seconds`` (sum of
        ``num_gpus * duration`` over jobs with a duration, GPU-s); and ``offered_load``
        when ``n_gpus_cluster`` is given (``None`` when the span is 0: no job, or every
        job submitted at the same time). Values are plain Python numbers, never NaN.
    """
    n = len(trace)
    has = ~np.isnan(trace.duration)
    sizes, counts = np.unique(trace.num_gpus, return_counts=True)
    gaps = np.diff(np.sort(trace.submit_time, kind="stable"))
    out: dict[str, Any] = {
        "jobs": n,
        "jobs_with_duration": int(has.sum()),
        "jobs_by_iterations": int(n - has.sum()),
        "span_s": float(np.ptp(trace.submit_time)) if n else 0.0,
        "gpu_mix": {int(g): int(c) for g, c in zip(sizes, counts, strict=True)},
        "duration_s": _percentiles(trace.duration[has]),
        "interarrival_s": _percentiles(gaps),
        "gpu_seconds": dot(trace.num_gpus[has].astype(np.float64), trace.duration[has]),
    }
    if n_gpus_cluster is not None:
        load = offered_load(trace, n_gpus_cluster)
        # inf (all submitted at once) or NaN (no job): not a number JSON can hold
        out["offered_load"] = load if np.isfinite(load) else None
    return out
