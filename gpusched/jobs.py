"""Turn a trace into the engine's job table for one cluster.

Jobs are sorted stably by submission time; a row that gives ``iterations`` and
``model`` instead of ``duration`` gets ``duration = iterations * ideal iteration
time`` from the model catalogue. Jobs that need more GPUs than the cluster can
give one job are an error that counts them, unless ``drop_oversized`` is set, in
which case they are skipped and counted in the report. Nothing is dropped silently.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gpusched.cluster import ClusterSpec
from gpusched.errors import CatalogueError, TraceError
from gpusched.trace import Trace


@dataclass(frozen=True, slots=True)
class JobTable:
    """Jobs in submission order, ready for :func:`gpusched.state.new_state`.

    Attributes
    ----------
    job_id
        Job ids (str), in submission order.
    submit_s, n_gpus, work_s
        Submission time (s), gang size, exclusive run time at ideal placement (s).
    row
        Position of each job in the trace file (0 = first data row).
    model, iterations, extra
        The trace's ``model`` and ``iterations`` columns and every other column
        (``user``, ``group``, ...), in submission order, for performance models,
        predictors and policies that read them.
    n_dropped
        Oversized jobs skipped with ``drop_oversized``.
    source
        Where the trace came from.
    """

    job_id: np.ndarray
    submit_s: np.ndarray
    n_gpus: np.ndarray
    work_s: np.ndarray
    row: np.ndarray
    n_dropped: int = 0
    source: str = ""
    notes: tuple[str, ...] = field(default=())
    model: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=object))
    iterations: np.ndarray = field(default_factory=lambda: np.empty(0))
    extra: dict[str, np.ndarray] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.submit_s.shape[0])


def _durations(trace: Trace) -> tuple[np.ndarray, list[str]]:
    work = np.array(trace.duration, dtype=np.float64)
    need = np.isnan(work)
    notes: list[str] = []
    if not need.any():
        return work, notes
    from gpusched.catalogue import load_catalogue

    cat = load_catalogue()
    errors: list[str] = []
    cache: dict[tuple[str, int], float] = {}
    for i in np.flatnonzero(need):
        key = (str(trace.model[i]), int(trace.num_gpus[i]))
        if key not in cache:
            try:
                cache[key] = cat.ideal_iteration_s(*key)
            except CatalogueError as exc:
                errors.append(f"{trace.source}:{i + 2}: column 'model': {exc}")
                cache[key] = np.nan
                continue
        work[i] = trace.iterations[i] * cache[key]
    if errors:
        raise TraceError(errors)
    notes.append(
        f"{int(need.sum())} job durations derived as iterations x catalogue iteration time"
    )
    return work, notes


def prepare_jobs(trace: Trace, cluster: ClusterSpec, *, drop_oversized: bool = False) -> JobTable:
    """Build the job table of ``trace`` for ``cluster``.

    Parameters
    ----------
    trace
        A validated trace.
    cluster
        The cluster the jobs will run on.
    drop_oversized
        Skip (and count) jobs that need more GPUs than one job can get on this
        cluster, instead of failing.

    Raises
    ------
    TraceError
        Oversized jobs without ``drop_oversized`` (the message counts them and
        names the first), or ``model`` names the catalogue does not hold.
    """
    max_gang = cluster.n_gpus if cluster.allow_spread else int(cluster.server_gpus().max())
    n_gpus = np.asarray(trace.num_gpus, dtype=np.int32)
    too_big = n_gpus > max_gang
    n_big = int(too_big.sum())
    notes: list[str] = []
    keep = np.arange(len(trace))
    if n_big:
        first = int(np.flatnonzero(too_big)[0])
        where = "the cluster has" if cluster.allow_spread else "a server of this cluster has"
        if not drop_oversized:
            raise TraceError(
                f"{trace.source}:{first + 2}: column 'num_gpus': {n_big} job(s) need more GPUs "
                f"than {where} ({max_gang} on '{cluster.name}'), first '{trace.job_id[first]}' "
                f"asks for {n_gpus[first]}; use --drop-oversized to skip them"
            )
        keep = np.flatnonzero(~too_big)
        notes.append(f"dropped {n_big} job(s) needing more than {max_gang} GPUs")
        trace = trace.take(keep)
    work, more = _durations(trace)
    notes += more
    submit = np.asarray(trace.submit_time, dtype=np.float64)
    order = np.argsort(submit, kind="stable")
    return JobTable(
        job_id=np.asarray(trace.job_id)[order],
        submit_s=submit[order],
        n_gpus=np.asarray(trace.num_gpus, dtype=np.int32)[order],
        work_s=work[order],
        row=keep[order],
        n_dropped=n_big if drop_oversized else 0,
        source=trace.source,
        notes=tuple(notes),
        model=np.asarray(trace.model)[order],
        iterations=np.asarray(trace.iterations)[order],
        extra={k: np.asarray(v)[order] for k, v in trace.extra.items()},
    )
