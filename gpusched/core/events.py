"""The event log of a run: every state change of every job, with its simulated time.

Kept only when asked (``gpusched replay --events``, ``Engine(events=True)``), so plain
runs stay as fast as before: the kernel then appends a row to the state's ``ev_*``
buffers at every start (with the GPUs), preemption, end of a save and completion, on the
fused path and the Python path alike (:func:`gpusched.core.kernel._log`). The engine copies
the buffers out before they can fill (:meth:`EventLog.flush`) and adds what only it
sees: rejections, the placements of tasks and role jobs, and the reasons a policy gives
(``Start.reason``, ``Preempt.reason``, ``Reject.reason`` and :class:`~gpusched.core.policy.Note`).

Three kinds of rows follow from the others and the jobs' static times, so they are
derived when the table is built rather than logged: a job's ``arrive`` (its submission),
``loaded`` (a start plus the job's load time, when it trained after it) and the start of
a save (the ``preempt`` row says ``saving``).

The table (:meth:`EventLog.table`, events.csv) has one row per event in time order:

``time_s``
    Simulated time, s.
``event``
    ``arrive``, ``start``, ``loaded``, ``preempt``, ``requeue`` (a save ended: back in
    the queue), ``finish``, ``reject``, ``dispatch`` (a task bound to a worker),
    ``allocate`` (a role job's workers and parameter servers), ``share`` and ``unshare``
    (another job starts or stops holding one of its GPUs; GPU-sharing clusters),
    ``config`` (the performance model's description of the job's configuration when it
    changes, e.g. the batch size Pollux's agent picked: models with ``describe(job)``) or
    ``note`` (a policy's remark without an action).
``job_id``
    The job (a task's id for jobs made of tasks).
``gpus``
    ``start`` rows: the GPUs (workers) it holds, as ranges, e.g. ``0-3 8``; ``share``
    rows: the GPUs it shares.
``detail``
    ``preempt``: ``released``, ``futile`` or ``saving``; the policy's reason, if any,
    after a ``; ``; placements for ``dispatch`` and ``allocate``; the partner for
    ``share`` and ``unshare``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from gpusched.core.state import (
    EPS,
    EV_FINISH,
    EV_PREEMPT,
    EV_REQUEUE,
    EV_START,
    I_EV_GPU_ROOM,
    I_EV_LOST,
    I_EV_ROOM,
    I_EVER_SHARED,
    I_N_EV_GPUS,
    I_N_EVENTS,
    PENDING,
    SimState,
)
from gpusched.errors import InvariantError

__all__ = ["EVENT_COLUMNS", "EVENT_KINDS", "EventLog", "format_gpus", "parse_gpus"]

#: Column order of events.csv.
EVENT_COLUMNS = ("time_s", "event", "job_id", "gpus", "detail")
#: Every kind of row of events.csv (the module docstring says what each means).
EVENT_KINDS = (
    "arrive",
    "start",
    "loaded",
    "preempt",
    "requeue",
    "finish",
    "reject",
    "dispatch",
    "allocate",
    "share",
    "unshare",
    "config",
    "note",
)

_KERNEL_NAMES = {
    EV_START: "start",
    EV_PREEMPT: "preempt",
    EV_REQUEUE: "requeue",
    EV_FINISH: "finish",
}
_PREEMPT_DETAIL = ("released", "futile", "saving")


def room(n_gpu_slots: int, n_jobs: int, roles: bool) -> tuple[int, int]:
    """The most events and GPU indices one decision point can log.

    Every start takes a GPU slot (``n_gpu_slots`` = GPUs x jobs per GPU) and every
    preemption, save end or completion concerns a job holding one, so a decision point
    logs at most a few times the slots; jobs placed by roles hold no GPU index, so any
    number of them may start or stop at once.
    """
    holders = n_gpu_slots + (n_jobs if roles else 0)
    return 4 * holders + 16, 2 * n_gpu_slots + 16


def format_gpus(gpus: Sequence[int] | np.ndarray) -> str:
    """GPU indices as compact ranges: ``[0, 1, 2, 3, 8]`` -> ``"0-3 8"``."""
    g = sorted(int(x) for x in gpus)
    if len(g) == 1:
        return str(g[0])
    parts: list[str] = []
    i = 0
    while i < len(g):
        k = i
        while k + 1 < len(g) and g[k + 1] == g[k] + 1:
            k += 1
        parts.append(str(g[i]) if k == i else f"{g[i]}-{g[k]}")
        i = k + 1
    return " ".join(parts)


def parse_gpus(text: str) -> list[int]:
    """Inverse of :func:`format_gpus` (``""`` -> ``[]``)."""
    out: list[int] = []
    for part in text.split():
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


@dataclass
class _Chunk:
    t: np.ndarray
    kind: np.ndarray
    job: np.ndarray
    arg: np.ndarray
    gpus: np.ndarray  # the chunk's ev_gpu rows; ``arg`` of starts indexes it


def _start_gpus(c: _Chunk) -> list[tuple[int, int, int]]:
    """``(row, offset, count)`` of the GPUs of each start of chunk ``c``: a start's GPUs
    run from its offset to the next start's (the kernel appends them in order), so an
    elastic job's count is the one of that start."""
    rows = np.flatnonzero(c.kind == EV_START)
    offs = c.arg[rows].astype(np.int64)
    ends = np.append(offs[1:], c.gpus.size)
    return list(zip(rows.tolist(), offs.tolist(), (ends - offs).tolist(), strict=True))


@dataclass
class EventLog:
    """Collects a run's events (see the module docstring).

    Parameters
    ----------
    room
        The most rows and GPU indices one decision point can add to the state's buffers
        (:func:`room`): the engine flushes them whenever less than that is left.
    """

    room: tuple[int, int]
    _chunks: list[_Chunk] = field(default_factory=list)
    _n_flushed: int = 0
    #: engine rows: (order, time, event, job, detail); ``order`` places them among the
    #: kernel's rows (2 x rows logged before them)
    _notes: list[tuple[int, float, str, int, str]] = field(default_factory=list)
    #: reasons a policy gave for the kernel row with this global index
    _reasons: dict[int, str] = field(default_factory=dict)

    def arm(self, st: SimState) -> None:
        """Set the kernel's room thresholds in ``st`` (made with this log's buffers)."""
        st.sim_i[I_EV_ROOM] = self.room[0]
        st.sim_i[I_EV_GPU_ROOM] = self.room[1]

    def flush(self, st: SimState) -> None:
        """Copy the kernel's rows out of ``st`` and empty its buffers."""
        if st.sim_i[I_EV_LOST]:
            raise InvariantError(
                f"event log overflow: {int(st.sim_i[I_EV_LOST])} rows found the buffer full"
            )
        n = int(st.sim_i[I_N_EVENTS])
        if n == 0:
            return
        g = int(st.sim_i[I_N_EV_GPUS])
        self._chunks.append(
            _Chunk(
                st.ev_t[:n].copy(),
                st.ev_kind[:n].copy(),
                st.ev_job[:n].copy(),
                st.ev_arg[:n].copy(),
                st.ev_gpu[:g].copy(),
            )
        )
        self._n_flushed += n
        st.sim_i[I_N_EVENTS] = 0
        st.sim_i[I_N_EV_GPUS] = 0

    def ensure_room(self, st: SimState) -> None:
        """Flush when one more decision point might not fit."""
        free = st.ev_t.shape[0] - st.sim_i[I_N_EVENTS]
        free_g = st.ev_gpu.shape[0] - st.sim_i[I_N_EV_GPUS]
        if free < self.room[0] or free_g < self.room[1]:
            self.flush(st)

    def logged(self, st: SimState) -> int:
        """Kernel rows logged so far (flushed or not)."""
        return self._n_flushed + int(st.sim_i[I_N_EVENTS])

    def note(self, st: SimState, t: float, event: str, job: int, detail: str = "") -> None:
        """Add an engine row (after the kernel rows logged so far)."""
        self._notes.append((2 * self.logged(st), float(t), event, int(job), detail))

    def reason(self, st: SimState, since: int, t: float, job: int, text: str) -> None:
        """Attach a policy's reason to the row its action produced: the last row of ``job``
        logged since :meth:`logged` was ``since`` (the kernel's, else the engine's), or a
        new ``note`` row at ``t`` if the action logged none."""
        base = self._n_flushed
        for i in range(int(st.sim_i[I_N_EVENTS]) - 1, max(since - base, 0) - 1, -1):
            if int(st.ev_job[i]) == job:
                self._reasons[base + i] = text
                return
        last = self._notes[-1] if self._notes else None
        if last is not None and last[0] >= 2 * since and last[3] == job:  # e.g. a reject
            self._notes[-1] = (*last[:4], f"{last[4]}; {text}" if last[4] else text)
            return
        self.note(st, t, "note", job, text)

    # --- the table ---------------------------------------------------------------------

    def table(self, st: SimState, job_id: np.ndarray, end_s: float) -> dict[str, np.ndarray]:
        """The events.csv columns (module docstring), in time order.

        ``st`` is the final state (static times and statuses), ``end_s`` the time the run
        ended (a start whose load had not ended by then has no ``loaded`` row).
        """
        self.flush(st)
        ch = self._chunks
        t = np.concatenate([c.t for c in ch]) if ch else np.zeros(0)
        kind = np.concatenate([c.kind for c in ch]) if ch else np.zeros(0, np.int8)
        job = np.concatenate([c.job for c in ch]) if ch else np.zeros(0, np.int32)
        arg = np.concatenate([c.arg for c in ch]) if ch else np.zeros(0, np.int32)
        n = t.size
        names = np.empty(n, dtype=object)
        detail = np.full(n, "", dtype=object)
        gpus = np.full(n, "", dtype=object)
        for code, name in _KERNEL_NAMES.items():
            names[kind == code] = name
        pre = np.flatnonzero(kind == EV_PREEMPT)
        detail[pre] = np.asarray(_PREEMPT_DETAIL, dtype=object)[arg[pre]]
        i = 0
        for c in ch:  # GPUs of the starts, chunk by chunk (their offsets are per chunk)
            for r, off, size in _start_gpus(c):
                gpus[i + r] = format_gpus(c.gpus[off : off + size]) if size else ""
            i += c.t.size
        for k, text in self._reasons.items():
            detail[k] = f"{detail[k]}; {text}" if detail[k] else text
        order = 2 * np.arange(n, dtype=np.int64) + 1
        cls = np.ones(n, dtype=np.int8)

        parts: list[tuple[np.ndarray, ...]] = [(t, cls, order, names, job, gpus, detail)]
        parts.append(self._loaded(st, t, kind, job, order, end_s))
        if st.sim_i[I_EVER_SHARED]:
            parts.append(self._sharing(st, ch, t, kind, job, arg, order, end_s, job_id))
        parts.append(self._arrivals(st))
        if self._notes:
            parts.append(
                (
                    np.asarray([x[1] for x in self._notes], dtype=np.float64),
                    np.ones(len(self._notes), np.int8),
                    np.asarray([x[0] for x in self._notes], dtype=np.int64),
                    np.asarray([x[2] for x in self._notes], dtype=object),
                    np.asarray([x[3] for x in self._notes], dtype=np.int32),
                    np.full(len(self._notes), "", dtype=object),
                    np.asarray([x[4] for x in self._notes], dtype=object),
                )
            )
        cols = [np.concatenate([p[k] for p in parts]) for k in range(7)]
        idx = np.lexsort((cols[2], cols[1], cols[0]))
        return {
            "time_s": cols[0][idx],
            "event": cols[3][idx],
            "job_id": np.asarray(job_id, dtype=object)[cols[4][idx]],
            "gpus": cols[5][idx],
            "detail": cols[6][idx],
        }

    @staticmethod
    def _arrivals(st: SimState) -> tuple[np.ndarray, ...]:
        seen = np.flatnonzero(st.job_status != PENDING).astype(np.int32)
        m = seen.size
        return (
            st.job_submit[seen],
            np.zeros(m, np.int8),
            seen.astype(np.int64),
            np.full(m, "arrive", dtype=object),
            seen,
            np.full(m, "", dtype=object),
            np.full(m, "", dtype=object),
        )

    @staticmethod
    def _sharing(
        st: SimState,
        ch: list[_Chunk],
        t: np.ndarray,
        kind: np.ndarray,
        job: np.ndarray,
        arg: np.ndarray,
        order: np.ndarray,
        end_s: float,
        job_id: np.ndarray,
    ) -> tuple[np.ndarray, ...]:
        """``share`` and ``unshare`` rows: when two jobs start and stop holding a GPU
        together (GPU-sharing clusters), one pair per job, naming the partner and the GPUs."""
        release = _releases(t, kind, job, arg, end_s)
        holds: dict[int, list[tuple[float, float, int, int]]] = {}  # GPU -> (t0, t1, job, row)
        i = 0
        for c in ch:
            for r, off, size in _start_gpus(c):
                j = int(c.job[r])
                for g in c.gpus[off : off + size].tolist():
                    holds.setdefault(g, []).append((float(t[i + r]), release[i + r], j, i + r))
            i += c.t.size
        pairs: dict[tuple[int, int, float, float], list[int]] = {}  # (a, b, from, to) -> GPUs
        for g, hs in holds.items():
            hs.sort()
            for x in range(len(hs)):
                for y in range(x + 1, len(hs)):
                    if hs[y][0] >= hs[x][1]:
                        break
                    a0, b0 = max(hs[x][0], hs[y][0]), min(hs[x][1], hs[y][1])
                    if b0 > a0 and hs[x][2] != hs[y][2]:
                        pairs.setdefault((hs[x][2], hs[y][2], a0, b0), []).append(g)
        rows: list[tuple[float, int, str, int, str, str]] = []
        for (a, b, a0, b0), gpus in pairs.items():
            where = format_gpus(gpus)
            for me, other in ((a, b), (b, a)):
                rows.append((a0, 2 * len(t) + 1, "share", me, where, f"with {job_id[other]}"))
                rows.append((b0, 2 * len(t) + 1, "unshare", me, where, f"with {job_id[other]}"))
        m = len(rows)
        return (
            np.asarray([x[0] for x in rows], dtype=np.float64),
            np.ones(m, np.int8),
            np.asarray([x[1] for x in rows], dtype=np.int64),
            np.asarray([x[2] for x in rows], dtype=object),
            np.asarray([x[3] for x in rows], dtype=np.int32),
            np.asarray([x[4] for x in rows], dtype=object),
            np.asarray([x[5] for x in rows], dtype=object),
        )

    @staticmethod
    def _loaded(
        st: SimState,
        t: np.ndarray,
        kind: np.ndarray,
        job: np.ndarray,
        order: np.ndarray,
        end_s: float,
    ) -> tuple[np.ndarray, ...]:
        """A ``loaded`` row for each start whose job trained after its load."""
        starts = np.flatnonzero((kind == EV_START) & (st.job_load_s[job] > 0))
        if starts.size == 0:
            e = np.zeros(0)
            return (e, e.astype(np.int8), e.astype(np.int64), e.astype(object),
                    e.astype(np.int32), e.astype(object), e.astype(object))  # fmt: skip
        # the job's next kernel row after each of its starts (by position, per job)
        by_job = np.lexsort((np.arange(t.size), job))
        nxt = np.full(t.size, -1, dtype=np.int64)
        same = job[by_job[1:]] == job[by_job[:-1]]
        nxt[by_job[:-1][same]] = by_job[1:][same]
        done_at = t[starts] + st.job_load_s[job[starts]]
        follow = nxt[starts]
        until = np.where(follow >= 0, t[np.maximum(follow, 0)], end_s)
        keep = np.where(follow >= 0, until > done_at + EPS, until >= done_at)
        s = starts[keep]
        m = s.size
        return (
            done_at[keep],
            np.ones(m, np.int8),
            order[s],
            np.full(m, "loaded", dtype=object),
            job[s],
            np.full(m, "", dtype=object),
            np.full(m, "", dtype=object),
        )


def _releases(
    t: np.ndarray, kind: np.ndarray, job: np.ndarray, arg: np.ndarray, end_s: float
) -> np.ndarray:
    """For each kernel row, when a start's GPUs were released (the next preemption that
    released them at once, the next save end or the completion; ``end_s`` if none)."""
    out = np.full(t.size, end_s)
    open_: dict[int, int] = {}
    for i, (k, j, a) in enumerate(zip(kind.tolist(), job.tolist(), arg.tolist(), strict=True)):
        if k == EV_START:
            open_[j] = i
        elif j in open_ and (k in (EV_REQUEUE, EV_FINISH) or (k == EV_PREEMPT and a != 2)):
            out[open_.pop(j)] = t[i]
    return out


def new_log(n_gpu_slots: int, n_jobs: int, roles: bool) -> tuple[EventLog, tuple[int, int]]:
    """An event log and the state buffer sizes (rows, GPU indices) it needs."""
    r = room(n_gpu_slots, n_jobs, roles)
    return EventLog(r), (max(1 << 16, 4 * r[0]), max(1 << 16, 4 * r[1]))
