"""Jobs made of data chunks on typed workers: the edge-cloud paper's job model.

N. Wang, R. Zhou, L. Jiao, R. Zhang, B. Li and Z. Li, "Preemptive Scheduling for
Distributed Machine Learning Jobs in Edge-Cloud Networks", IEEE JSAC, 2022, Sec. III-A:
a job j of D_j equal data chunks of B_j mini-batches trains each chunk for E_j epochs on
one worker of the type the job asks for; a worker processes a mini-batch in m_j, the
parameter server updates in G_j, and sending gradients or fetching parameters takes q_j /
b_j each, so that a worker trains (eq. 1)

    n_j = 1 / (m_j + G_j + 2 q_j / b_j)   mini-batches per slot, zeta_j = 0,
    n_j = 1 / (m_j + G_j)                  when the whole job sits in the cloud, zeta_j = 1.

A chunk needs E_j B_j mini-batches, E_j B_j / n_j slots. Each chunk is a task of the
core (:mod:`gpusched.core.tasks`): its work is its time at zeta_j = 1, E_j B_j (m_j + G_j), and
its rate is 1 while the job is wholly in the cloud, (m_j + G_j) / (m_j + G_j + 2 q_j /
b_j) otherwise; the time lost to that is the job's communication time. One time slot of
the paper is one simulated second (as for the PD-ORS family); ``unit_s`` converts the
seconds of q_j / b_j into slots.

Trace columns of a chunk job (rows that give ``chunks``; ``num_gpus`` 1, no duration):

========================  ======  ==================================================
column                    paper   meaning
========================  ======  ==================================================
``chunks``                D_j     data chunks (integer >= 1)
``batches``               B_j     mini-batches per chunk (integer >= 1)
``epochs``                E_j     epochs (integer >= 1)
``worker_type``                   the worker type the job asks for (the cluster's name)
``batch_time``            m_j     a worker's time per mini-batch, slots (> 0)
``update_time``           G_j     the PS's time per update, slots (>= 0)
``grad_mb``               q_j     gradient / parameter size, MB (>= 0)
``bw_mbps``               b_j     reserved bandwidth, Mbit/s (> 0)
``unit_s``                        seconds per slot, default 1 (> 0)
``gang_workers``                  workers a job-level policy gives the job at once
                                  (integer >= 1; default 1)
========================  ======  ==================================================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gpusched.core.jobs import JobTable
from gpusched.errors import TraceError, show_name
from gpusched.jobmodels._columns import float_column

__all__ = ["ChunkJobModel", "ChunkParams", "ChunkTasks", "params_of"]

#: Required columns of a chunk job and what a good value is.
_REQUIRED = {
    "batches": "an integer >= 1 (B_j, mini-batches per chunk)",
    "epochs": "an integer >= 1 (E_j)",
    "batch_time": "a number > 0 (m_j, slots per mini-batch)",
    "update_time": "a number >= 0 (G_j, slots per PS update)",
    "grad_mb": "a number >= 0 (q_j, MB)",
    "bw_mbps": "a number > 0 (b_j, Mbit/s)",
}
#: Optional columns, their defaults and what a good value is.
_OPTIONAL = {
    "unit_s": (1.0, "a number > 0 (seconds per slot)"),
    "gang_workers": (1.0, "an integer >= 1 (workers of a job-level policy)"),
}
_INTEGER = {"chunks", "batches", "epochs", "gang_workers"}
_POSITIVE = {"batch_time", "bw_mbps", "unit_s"}
#: Most chunks of one job (each is a row of the simulation state).
MAX_CHUNKS = 100_000


def _owned(trace: Any) -> np.ndarray:
    raw = trace.extra.get("chunks")
    if raw is None:
        return np.zeros(len(trace), dtype=bool)
    return np.asarray([str(x).strip() != "" for x in raw], dtype=bool)


@dataclass(frozen=True, slots=True)
class ChunkParams:
    """Section III-A's parameters of chunk jobs, per trace row (NaN where not one)."""

    chunks: np.ndarray
    batches: np.ndarray
    epochs: np.ndarray
    batch_time: np.ndarray
    update_time: np.ndarray
    grad_mb: np.ndarray
    bw_mbps: np.ndarray
    unit_s: np.ndarray
    gang: np.ndarray
    worker_type: np.ndarray

    @property
    def comm_time(self) -> np.ndarray:
        """2 q_j / b_j, slots (MB x 8 bit / Mbit/s = s, over seconds per slot)."""
        return np.asarray(2.0 * self.grad_mb * 8.0 / self.bw_mbps / self.unit_s, dtype=float)

    @property
    def chunk_slots(self) -> np.ndarray:
        """A chunk's time at zeta_j = 1, E_j B_j (m_j + G_j), slots."""
        return np.asarray(
            self.epochs * self.batches * (self.batch_time + self.update_time), dtype=float
        )


def _ok(col: str) -> Any:
    """What a good value of a chunk column is, as a test."""
    if col == "chunks":
        return lambda v: 1 <= v <= MAX_CHUNKS and v == int(v)
    if col in _INTEGER:
        return lambda v: 1 <= v < 2**31 and v == int(v)
    if col in _POSITIVE:
        return lambda v: v > 0
    return lambda v: v >= 0


def _check_times(trace: Any, rows: np.ndarray, got: dict[str, np.ndarray]) -> None:
    """Refuse rows whose derived times the engine cannot simulate exactly (one line each).

    Every column may be fine on its own while their product is not: ``bw_mbps = 1e-300``
    makes a chunk on the edge take 1e304 slots, ``batch_time = 1e-300`` one in the cloud
    take 1e-298 slots, and eq. 1's rate on the edge, the ratio of the two, then underflows
    to 0 (a policy dividing by it fails). The bounds are the trace's own (``MIN_DURATION_S``
    and ``MAX_TIME_S`` of :mod:`gpusched.io.trace`, slots = simulated seconds): a chunk's
    time in the cloud (zeta_j = 1) in [MIN, MAX], on the edge (zeta_j = 0) at most MAX, and
    its D_j chunks one after another on one worker at most MAX. Together they keep the rate
    on the edge >= MIN / MAX = 1e-13.
    """
    from gpusched.io.trace import MAX_TIME_S, MIN_DURATION_S

    if rows.size == 0:
        return
    eb = got["epochs"][rows] * got["batches"][rows]
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        cloud = eb * (got["batch_time"][rows] + got["update_time"][rows])
        comm = 2.0 * got["grad_mb"][rows] * 8.0 / got["bw_mbps"][rows] / got["unit_s"][rows]
        edge = eb * (got["batch_time"][rows] + got["update_time"][rows] + comm)
        serial = got["chunks"][rows] * edge
    bad_cloud = ~((cloud >= MIN_DURATION_S) & (cloud <= MAX_TIME_S))
    bad_edge = ~(edge <= MAX_TIME_S)
    bad_serial = ~(serial <= MAX_TIME_S)
    errors = []
    name = show_name(trace.source)
    for k in np.flatnonzero(bad_cloud | bad_edge | bad_serial).tolist():
        line = f"{name}:{int(trace.line[rows[k]])}"
        if bad_cloud[k]:
            errors.append(
                f"{line}: columns 'epochs', 'batches', 'batch_time', 'update_time': a chunk "
                f"takes E B (m + G) = {cloud[k]:.3g} slots even in the cloud; expected "
                f"{MIN_DURATION_S:g} to {MAX_TIME_S:g}"
            )
        elif bad_edge[k]:
            errors.append(
                f"{line}: columns 'grad_mb', 'bw_mbps', 'unit_s': a chunk on the edge takes "
                f"E B (m + G + 2 q / b) = {edge[k]:.3g} slots; expected at most {MAX_TIME_S:g}"
            )
        else:
            errors.append(
                f"{line}: column 'chunks': its {got['chunks'][rows[k]]:g} chunks one after "
                f"another on one edge worker take {serial[k]:.3g} slots; expected at most "
                f"{MAX_TIME_S:g}"
            )
    if errors:
        raise TraceError(errors)


def params_of(trace: Any, rows: np.ndarray | None = None) -> ChunkParams:
    """Read the chunk columns of ``rows`` (default: every row) of a trace or job table.

    Raises
    ------
    TraceError
        One line per bad field: file, line, column, what was expected and what was found.
    """
    n = len(trace)
    rows = np.arange(n) if rows is None else np.flatnonzero(rows) if rows.dtype == bool else rows
    missing = [c for c in (*_REQUIRED, "worker_type") if c not in trace.extra]
    if missing and rows.size:
        raise TraceError(
            f"{show_name(trace.source)}: jobs that give 'chunks' are made of data chunks and "
            f"need the columns {', '.join(missing)}"
        )
    errors: list[str] = []
    chunks_what = f"an integer in [1, {MAX_CHUNKS}]"
    got = {"chunks": float_column(trace, "chunks", rows, errors, chunks_what, _ok("chunks"))}
    for col, what in _REQUIRED.items():
        got[col] = float_column(trace, col, rows, errors, what, _ok(col))
    for col, (default, what) in _OPTIONAL.items():
        got[col] = float_column(trace, col, rows, errors, what, _ok(col), default)
    types = np.full(n, "", dtype=object)
    raw = trace.extra.get("worker_type")
    for i in rows.tolist():
        text = "" if raw is None else str(raw[i]).strip()
        if not text:
            errors.append(
                f"{show_name(trace.source)}:{int(trace.line[i])}: column 'worker_type': "
                "expected a worker type name, missing"
            )
        types[i] = text
    if errors:
        raise TraceError(errors)
    _check_times(trace, rows, got)
    return ChunkParams(
        chunks=got["chunks"],
        batches=got["batches"],
        epochs=got["epochs"],
        batch_time=got["batch_time"],
        update_time=got["update_time"],
        grad_mb=got["grad_mb"],
        bw_mbps=got["bw_mbps"],
        unit_s=got["unit_s"],
        gang=got["gang_workers"],
        worker_type=types,
    )


class ChunkTasks:
    """The tasks of a job table of chunk jobs (:mod:`gpusched.core.tasks` reads them).

    Attributes
    ----------
    parents
        The jobs (the trace's rows).
    jobs
        One row per chunk, in submission order: job ``p``'s chunks are
        ``first[p]:first[p + 1]``, ids ``"<job id>/<chunk>"``.
    parent, first
        Job of each task, and each job's first task.
    type_name, gang
        Worker type each task needs; workers a job-level policy gives each job.
    """

    def __init__(self, parents: JobTable) -> None:
        self.parents = parents
        p = params_of(parents)
        counts = p.chunks.astype(np.int64)
        self.first = np.zeros(len(parents) + 1, dtype=np.int64)
        np.cumsum(counts, out=self.first[1:])
        self.parent = np.repeat(np.arange(len(parents)), counts)
        self.type_name = p.worker_type[self.parent]
        self.gang = p.gang.astype(np.int64)
        self._slow = (p.batch_time + p.update_time) / (p.batch_time + p.update_time + p.comm_time)
        index: list[int] = [d for c in counts.tolist() for d in range(c)]
        ids = np.asarray(parents.job_id, dtype=object)[self.parent]
        self.jobs = JobTable(
            job_id=np.asarray([f"{a}/{b}" for a, b in zip(ids, index, strict=True)], dtype=object),
            submit_s=np.asarray(parents.submit_s, dtype=np.float64)[self.parent],
            n_gpus=np.ones(self.parent.shape[0], dtype=np.int32),
            work_s=p.chunk_slots[self.parent],
            row=np.asarray(parents.row)[self.parent],
            source=parents.source,
            notes=parents.notes,
        )

    def rate(self, job: int, zeta: int) -> float:
        """Progress rate of a chunk of ``job`` (s of work per s): eq. 1's n_j over its value
        at zeta_j = 1."""
        return 1.0 if zeta == 1 else float(self._slow[job])


class ChunkJobModel:
    """The chunk job model (:mod:`gpusched.core.jobmodel`): rows that give ``chunks``."""

    def owns(self, trace: Any) -> np.ndarray:
        """Rows made of data chunks (a ``chunks`` value), bool per row."""
        return _owned(trace)

    def durations(
        self, trace: Any, work: np.ndarray, need: np.ndarray
    ) -> tuple[np.ndarray, list[str]]:
        """``work[need]``: one chunk's time wholly in the cloud, E_j B_j (m_j + G_j)."""
        p = params_of(trace, need)
        work[need] = p.chunk_slots[need]
        return work, [f"{int(need.sum())} jobs made of data chunks (eq. 1)"]

    def summary(self, res: Any) -> dict[str, Any] | None:
        """``total_comm_s``: time the chunks lost to worker-PS communication (eq. 1)."""
        if "tasks" not in res.extra:
            return None
        st = res.state
        lost = st.job_executed - st.job_work  # float noise of a chunk at rate 1 reads 0
        lost = np.where(lost <= 1e-9 * st.job_work, 0.0, lost)
        return {"total_comm_s": float(lost.sum())}

    def tasks(self, jobs: Any, cluster: Any) -> ChunkTasks | None:
        """The chunks of the job table, or None when it has no chunk job."""
        mine = _owned(jobs)
        if not mine.any():
            return None
        if not mine.all():
            raise TraceError(
                f"{show_name(jobs.source)}: {int(mine.sum())} job(s) are made of data chunks "
                f"and {int((~mine).sum())} are not; a run holds one kind only"
            )
        return ChunkTasks(jobs)


JOB_MODEL = ChunkJobModel()
