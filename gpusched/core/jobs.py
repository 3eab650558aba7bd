"""Turn a trace into the engine's job table for one cluster.

Jobs are sorted stably by submission time; a row that gives ``iterations`` and
``model`` instead of ``duration`` gets ``duration = iterations * ideal iteration
time`` from the model catalogue (a row with a ``duration`` never consults the
catalogue, whatever its ``model`` says). The trace's values are checked against the
bounds of :mod:`gpusched.io.trace` (:func:`~gpusched.io.trace.validate_trace`), and so is
every derived duration, so the engine only sees what it simulates exactly. Jobs that
need more GPUs than the cluster can give one job are an error that counts them, unless
``drop_oversized`` is set, in which case they are skipped and counted in the report.
Nothing is dropped silently; an empty trace gives an empty table with a note saying so.
Messages name the physical line of the trace file (:attr:`Trace.line`).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpusched.core import jobmodel
from gpusched.errors import TraceError, show_name, show_value
from gpusched.io.cluster import ClusterSpec
from gpusched.io.trace import CANONICAL_COLUMNS, Trace, validate_trace


@dataclass(frozen=True, slots=True)
class JobTable:
    """Jobs in submission order, ready for :func:`gpusched.core.state.new_state`.

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
    load_s, save_s
        The trace's ``load_s`` and ``save_s`` columns (s, float64), in submission
        order; NaN where the trace does not give them.
    line
        Physical line of each job in the trace file (for error messages).
    n_dropped
        Oversized jobs skipped with ``drop_oversized``.
    source
        Where the trace came from.
    notes
        Facts a user should see (printed by ``replay`` as ``note: ...``): jobs dropped,
        durations derived from the catalogue, an empty trace.
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
    load_s: np.ndarray = field(default_factory=lambda: np.empty(0))
    save_s: np.ndarray = field(default_factory=lambda: np.empty(0))
    line: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))

    def __len__(self) -> int:
        return int(self.submit_s.shape[0])


def _durations(trace: Trace) -> tuple[np.ndarray, list[str]]:
    """Durations, derived by the job models (the catalogue) where the trace gives none."""
    work = np.array(trace.duration, dtype=np.float64)
    need = np.isnan(work)
    if not need.any():
        return work, []
    return jobmodel.durations(trace, work, need)


def misspelt_columns(trace: Trace) -> list[str]:
    """Notes for the trace's extra columns whose names are close to a column the engine
    reads that the trace does not give (``laod_s`` for ``load_s``): kept as given, they
    would otherwise change nothing without a word."""
    given = set(trace.columns())
    missing = [c for c in CANONICAL_COLUMNS if c not in given]
    notes = []
    for col in trace.extra:
        close = difflib.get_close_matches(col, missing, n=1, cutoff=0.8)
        if close:
            notes.append(
                f"{show_name(trace.source)}: column {show_value(col)} is not one the engine "
                f"reads (it is kept as an extra column); did you mean '{close[0]}'?"
            )
    return notes


def prepare_jobs(trace: Trace, cluster: ClusterSpec, *, drop_oversized: bool = False) -> JobTable:
    """Build the job table of ``trace`` for ``cluster``.

    Parameters
    ----------
    trace
        A trace (values are checked with :func:`~gpusched.io.trace.validate_trace`).
    cluster
        The cluster the jobs will run on.
    drop_oversized
        Skip (and count) jobs that need more GPUs than one job can get on this
        cluster, instead of failing.

    Raises
    ------
    TraceError
        A value out of bounds; oversized jobs without ``drop_oversized`` (the message
        counts them and names the first); ``model`` names the catalogue does not hold;
        a derived duration out of bounds. Each names the line of the trace file.
    """
    validate_trace(trace)
    name = show_name(trace.source)
    max_gang = cluster.n_gpus if cluster.allow_spread else int(cluster.server_gpus().max())
    n_gpus = np.asarray(trace.num_gpus, dtype=np.int32)
    too_big = n_gpus > max_gang
    n_big = int(too_big.sum())
    notes = misspelt_columns(trace)
    if len(trace) == 0:
        notes.append(f"0 jobs in {name}")
    keep = np.arange(len(trace))
    if n_big:
        first = int(np.flatnonzero(too_big)[0])
        where = "the cluster has" if cluster.allow_spread else "a server of this cluster has"
        if not drop_oversized:
            raise TraceError(
                f"{name}:{int(trace.line[first])}: column 'num_gpus': {n_big} job(s) need more "
                f"GPUs than {where} ({max_gang} on '{cluster.name}'), first "
                f"{show_value(str(trace.job_id[first]))} asks for {n_gpus[first]}; use --drop-oversized to "
                "skip them"
            )
        keep = np.flatnonzero(~too_big)
        notes.append(f"dropped {n_big} job(s) needing more than {max_gang} GPUs")
        if keep.size == 0:
            notes.append(f"0 jobs left in {name}")
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
        load_s=trace.load_s[order],
        save_s=trace.save_s[order],
        line=np.asarray(trace.line, dtype=np.int64)[order],
    )


def job_iterations(jobs: Any) -> np.ndarray:
    """True training iterations :math:`n_i` of every job of a job table.

    Parameters
    ----------
    jobs
        A :class:`gpusched.core.jobs.JobTable` (or anything with ``iterations`` and ``work_s``).

    Returns
    -------
    numpy.ndarray
        float64 iterations; where the trace gives none, the duration in seconds.
    """
    work = np.asarray(jobs.work_s, dtype=np.float64)
    it = np.asarray(getattr(jobs, "iterations", np.empty(0)), dtype=np.float64)
    if it.shape != work.shape:
        return work.copy()
    return np.where(np.isfinite(it), it, work)
