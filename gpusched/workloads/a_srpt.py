"""The A-SRPT paper's evaluation workload, rebuilt from bundled real Philly jobs, annotated.

Z. Luo, J. Liu, M. Lee and N. B. Shroff, "Prediction-Assisted Online Distributed Deep
Learning Workload Scheduling in GPU Clusters", IEEE INFOCOM 2025, arXiv:2501.05563,
Sec. V-B: "we randomly sample consecutive jobs from the original trace" (Fig. 6: 37,500 to
150,000 jobs), Fig. 7 "we fix the number of jobs ... and vary the percentage of
single-GPU jobs, with jobs randomly set for single-GPU or distributed training", and the
annotation of Sec. V-A 1-b (:func:`gpusched.workloads.annotate.annotate_trace`).

Deviation, by necessity: the paper's trace is the two-month Alibaba PAI trace of Weng et al.
(NSDI'22, 758,223 jobs after cleaning), which is not bundled. The project must run without
it, so the source is ``traces/philly-2000.csv`` (2,000 consecutive real Philly jobs, see
``traces/README.md``), or any canonical or Pollux-format Philly file given as ``path``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from gpusched.io.trace import Trace

__all__ = ["BLOCK", "DEFAULT_JOBS", "DEFAULT_LOAD", "a_srpt_workload"]

BLOCK = 500
"""Jobs per consecutive block when more jobs are asked than the source holds."""

DEFAULT_JOBS = 20_000
"""Jobs of ``gpusched workload a-srpt`` when neither ``--jobs`` nor ``--source`` is given: the
bundled 2,000 Philly jobs ask for 2,644 GPUs in all, so on the paper's 2,000 GPUs
hardly any of them ever waits, whatever the load; 20,000 (a block bootstrap) queue at
load 4 (the paper ran 37,500-150,000)."""

DEFAULT_LOAD = 4.0
"""Offered load of ``gpusched workload a-srpt`` when ``--load`` is not given (issue 14).

The paper does not state its load. Its Sec. V-B replays consecutive jobs of a two-month
trace of Alibaba PAI (a cluster of 6,742 GPUs) on 250 x 8 = 2,000 GPUs, so at the trace's
own pace each GPU gets the jobs of about 3.4 of PAI's: a contended cluster, where its
baselines queue and its 31-91 % gains are possible. The bundled Philly jobs at their own
arrival times offer about 0.14 of 2,000 GPUs (GPUs busy ~3 % of the time): no policy can
differ there. 4.0 is the load of every main setting of ``docs/a-srpt-results.md``; as the
durations are heavy-tailed, most of the work belongs to a few long jobs that run on after
the arrivals end, and the short jobs start to queue only from about 2 (1.0 leaves the
baselines' average wait under a minute on 20,000 jobs). ``load=0`` keeps the source's own
arrival times.
"""


def _read(path: str | Path | None) -> Trace:
    from gpusched.io.resources import resolve_trace
    from gpusched.io.trace import read_trace

    if path is None:
        return read_trace(resolve_trace("philly-2000"))
    try:
        return read_trace(path)
    except Exception:  # not canonical: try the Pollux per-job Philly summary
        from gpusched.workloads.importers import read_philly_pollux

        return read_philly_pollux(path)[0]


def a_srpt_workload(
    seed: int,
    jobs: int | None = None,
    single_gpu_fraction: float | None = None,
    *,
    path: str | Path | None = None,
    load: float | None = None,
    n_gpus_cluster: int = 2000,
    reading: Any = None,
) -> Trace:
    """Build the A-SRPT workload: consecutive Philly jobs, optional GPU counts re-drawn, annotated.

    Steps (all draws from ``np.random.default_rng(seed)``):

    1. Source: ``path`` (a canonical trace, or the Pollux ``philly.csv`` format), default
       the bundled ``traces/philly-2000.csv``; rows sorted by submission.
    2. ``jobs <= len(source)``: one window of ``jobs`` consecutive jobs at a uniform random
       offset (the paper's "randomly sample consecutive jobs"). ``jobs > len(source)``:
       a block bootstrap: windows of :data:`BLOCK` consecutive jobs at uniform random
       offsets, concatenated in time (each block starts one empirical inter-arrival gap
       after the previous block's last job; job ids get a ``-k`` block suffix). This keeps
       Philly's bursts, sizes and durations; the span grows in proportion to ``jobs``.
    3. ``single_gpu_fraction`` f (Fig. 7): each job independently becomes a one-GPU job with
       probability f, otherwise takes a GPU count drawn from the source's multi-GPU jobs.
    4. ``load``: if given, submit times are scaled so the offered load
       :math:`\\sum g_i d_i / (\\text{span} \\cdot` ``n_gpus_cluster``:math:`)` equals it (the paper
       does not state its load; default: Philly's own arrival times).
    5. :func:`gpusched.workloads.annotate.annotate_trace` with ``seed`` (groups synthesised, since
       Philly has no recurring-job ids; models, configurations, iterations).

    Parameters
    ----------
    seed
        Seed of every draw.
    jobs
        Number of jobs; default all of the source.
    single_gpu_fraction
        Share of one-GPU jobs in [0, 1]; default the source's own GPU counts.
    path
        Source trace; default the bundled ``philly-2000``.
    load
        Target offered load on ``n_gpus_cluster`` GPUs, or None.
    n_gpus_cluster
        GPUs the load refers to (default 2000, the paper's 250 x 8 cluster).
    reading
        The performance model's :class:`~gpusched.jobmodels.reading.Reading` under which
        ``iterations = duration / alpha_min`` (default: the default reading).

    Returns
    -------
    Trace
        Annotated jobs (``model``, ``config``, ``iterations``, ``duration``, ``user``, ``group``).
    """
    from gpusched.errors import GpuschedError
    from gpusched.workloads.annotate import annotate_trace

    src = _read(path)
    src = src.take(np.argsort(src.submit_time, kind="stable"))
    n_src = len(src)
    n = n_src if jobs is None else int(jobs)
    if n < 1 or n_src < 1:
        raise GpuschedError(f"a-srpt workload needs >= 1 job, got {n} (source has {n_src})")
    rng = np.random.default_rng(seed)
    if n <= n_src:
        off = int(rng.integers(n_src - n + 1))
        w = src.take(slice(off, off + n))
        submit = w.submit_time - w.submit_time[0]
        how = f"{n} consecutive jobs from row {off}"
    else:
        b = min(BLOCK, n_src)
        gaps = np.diff(src.submit_time)
        parts: list[Trace] = []
        submits: list[np.ndarray] = []
        ids: list[np.ndarray] = []
        t0, k = 0.0, 0
        while sum(len(p) for p in parts) < n:
            m = min(b, n - sum(len(p) for p in parts))
            off = int(rng.integers(n_src - m + 1))
            w = src.take(slice(off, off + m))
            s = w.submit_time - w.submit_time[0] + t0
            parts.append(w)
            submits.append(s)
            ids.append(np.array([f"{j}-{k}" for j in w.job_id], dtype=object))
            t0 = float(s[-1]) + (float(rng.choice(gaps)) if gaps.size else 0.0)
            k += 1
        w = Trace(
            job_id=np.concatenate(ids),
            submit_time=np.concatenate(submits),
            num_gpus=np.concatenate([p.num_gpus for p in parts]),
            duration=np.concatenate([p.duration for p in parts]),
            iterations=np.full(n, np.nan),
            model=np.full(n, "", dtype=object),
            extra={
                c: np.concatenate([p.extra[c] for p in parts])
                for c in src.extra
                if c not in ("group",)
            },
            source=src.source,
        )
        submit = w.submit_time
        how = f"{n} jobs as {k} blocks of <= {b} consecutive jobs"
    gpus = np.asarray(w.num_gpus).copy()
    if single_gpu_fraction is not None:
        f = float(single_gpu_fraction)
        if not 0 <= f <= 1:
            raise GpuschedError(f"single_gpu_fraction must be in [0, 1], got {f}")
        multi = np.asarray(src.num_gpus)[np.asarray(src.num_gpus) > 1]
        if multi.size == 0:
            multi = np.array([2, 4, 8])
        single = rng.random(n) < f
        gpus = np.where(single, 1, rng.choice(multi, size=n))
        how += f", {f:.0%} single-GPU"
    submit = np.asarray(submit, dtype=np.float64)
    if load is not None:
        span = float(submit[-1] - submit[0])
        work = float(np.dot(gpus.astype(np.float64), w.duration))
        if not (load > 0 and span > 0):
            raise GpuschedError(f"cannot scale to load {load}: span {span} s")
        submit = submit * (work / (span * n_gpus_cluster * load))
        how += f", arrivals scaled to load {load:g} on {n_gpus_cluster} GPUs"
    extra = {c: v for c, v in w.extra.items() if c != "submit_datetime"}
    base = Trace(
        job_id=w.job_id,
        submit_time=np.round(submit, 3),
        num_gpus=gpus,
        duration=w.duration,
        iterations=np.full(n, np.nan),
        model=np.full(n, "", dtype=object),
        extra=extra,
        source=f"a_srpt_workload(seed={seed}): {how} of {Path(str(src.source)).name}",
    )
    out, _ = annotate_trace(base, seed, reading=reading)
    return Trace(
        job_id=out.job_id,
        submit_time=out.submit_time,
        num_gpus=out.num_gpus,
        duration=out.duration,
        iterations=out.iterations,
        model=out.model,
        extra=out.extra,
        source=base.source,
    )
