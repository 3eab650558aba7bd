"""The simulation side of the TUI: build an engine, pace it, and copy frames out of it.

Nothing here imports Textual. A :class:`Driver` owns the :class:`~gpusched.core.engine.Engine`
and is only ever touched from one thread (the app's thread worker): the UI sends it
commands through a thread-safe queue (:meth:`Driver.send`) and receives :class:`Frame`
copies, so no live state array is read by the UI thread.

Pacing: in play mode the simulated clock advances ``speed`` simulated seconds per
wall second; the driver steps the engine while the next decision point
(:meth:`Engine.peek`) is at or before that clock. In max-speed mode it steps in chunks
sized to take about 20 ms each. Frames are produced at most every ``frame_s``.

Event feed: each frame carries the :class:`Events` since the previous frame in which the
engine had advanced, found by comparing the jobs holding GPUs in the two frames (the same
on the fused and the Python path, and it costs a set difference of the running lists).
In step mode that is exactly what the last decision did. Over several decisions a job
may start and stop in between, so the feed then counts from the run's counters instead
(finishes, preemptions) and gives the jobs holding GPUs before and after.

Queue order shown: for fused (kernel) policies the kernel's own priority key,
re-evaluated in NumPy; for Python policies, the policy's ``priority_key(view, jobs)``
method if it has one (lower first), else the order of its last decision.

Runs of jobs placed by roles (parameter-server jobs on the engine's resource ledger, see
:mod:`gpusched.core.ledger`) hold no GPU index: their frames also carry :class:`RoleFrame`, a
copy of the ledger (resources held per machine, each running job's workers and PSs per
machine) and the per-resource history. Rejected jobs (a terminal status any policy may
give a job that never ran) are in every frame and in the event feed.

Runs of jobs made of tasks (data chunks on typed workers, :mod:`gpusched.core.tasks`: the
engine's rows, and its "GPUs", are then chunks and workers) also carry
:class:`TaskFrame`: per edge worker the chunk on it and the chunks placed on it that
wait, the cloud tier's counts, and per job its chunks done, on workers and waiting, with
the busy edge and cloud workers' history. What never changes (worker types and servers,
each chunk's job) is copied once into :class:`TaskInfo` before the run starts.
"""

from __future__ import annotations

import math
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpusched.core.state import (
    FINISHED,
    I_FREE_GPUS,
    I_N_DECISIONS,
    I_N_FINISHED,
    I_N_PREEMPT,
    I_N_QUEUE,
    I_N_REJECTED,
    I_N_RUN,
    KEY_FIFO,
    KEY_LAS,
    KEY_NONE,
    KEY_SJF,
    KEY_SRTF,
    LOADING,
    QUEUED,
    REJECTED,
    RUNNING,
    SAVING,
)
from gpusched.results.units import fmt_s

#: Simulated seconds per wall second offered by +/- (then max speed).
SPEEDS: tuple[float, ...] = (
    1,
    2,
    5,
    10,
    30,
    60,
    120,
    300,
    600,
    1800,
    3600,
    7200,
    21600,
    86400,
    604800,
)
MAX_SPEED = math.inf
#: Queued jobs (and rejected jobs) copied into a frame (the view says how many more there are).
QUEUE_ROWS = 5000
_HIST = 4096  # samples kept for the sparklines (halved when full)


def partial_result(engine: Any) -> Any:
    """The engine's :class:`~gpusched.core.result.RunResult`, also for a run stopped midway.

    An unfinished run is stopped at the current simulated time, like a run cut by
    ``--until``: unfinished jobs are counted in ``n_unfinished``.
    """
    engine.stop()
    return engine.result()


def run_summary(result: Any, summary: dict[str, Any] | None = None) -> dict[str, Any]:
    """The summary of ``result`` (summary.json's keys; ``stopped_at_s`` when it was cut).

    Parameters
    ----------
    result
        A :class:`~gpusched.core.result.RunResult`.
    summary
        Its summary if already computed (e.g. by ``write_results``), else it is computed.

    Returns
    -------
    dict
        :func:`gpusched.results.metrics.summarize`'s dictionary; a run stopped before every job
        finished (quit mid-run, or ``--until``) also carries ``stopped_at_s``, the
        simulated time it was stopped at, s (``n_unfinished`` counts the jobs left).
    """
    from gpusched.results.metrics import summarize

    return dict(summarize(result) if summary is None else summary)


def default_speed(engine: Any) -> float:
    """A starting speed that plays the arrivals of the trace in about two minutes."""
    sub = engine.jobs.submit_s
    span = float(sub[-1] - sub[0]) if len(sub) else 0.0
    want = max(span / 120.0, 1.0)
    for s in SPEEDS:
        if s >= want:
            return float(s)
    return float(SPEEDS[-1])


@dataclass(slots=True, eq=False)
class Events:
    """What changed between two frames: jobs that took or left GPUs, and arrivals.

    ``t_from`` is the engine time of the earlier frame (-inf before the first decision
    point), ``t_to`` that of the later one; ``n_decisions`` decision points lie between.
    The job arrays compare the two frames only (exact for one decision); the counts
    are exact over any number of decisions.
    """

    t_from: float
    t_to: float
    n_decisions: int
    started: np.ndarray  # int32 jobs now holding GPUs that did not before
    preempted: np.ndarray  # int32 jobs sent back to the queue (or to save)
    finished: np.ndarray  # int32 jobs that finished
    n_arrived: int  # jobs submitted in (t_from, t_to]
    n_finished: int  # jobs finished in between
    n_preempted: int  # preemptions in between
    n_holding: tuple[int, int]  # jobs holding GPUs (or ledger resources) before and after
    rejected: np.ndarray = field(default_factory=lambda: np.empty(0, np.int32))  # newly rejected
    n_rejected: int = 0  # jobs rejected in between


@dataclass(slots=True, eq=False)
class RoleFrame:
    """Copies of the resource ledger at one moment, for runs of jobs placed by roles.

    Resources are those of :data:`gpusched.core.ledger.RESOURCES` (GPUs, vCPUs, memory GB,
    storage GB), in that order along every last axis. The allocation is given as the
    (job, machine) pairs on which a job holds at least one worker or PS, sorted by job
    then machine.
    """

    capacity: np.ndarray  # (H, R) float64 per machine (shared by every frame: read-only)
    used: np.ndarray  # (H, R) float64 held per machine
    alloc_job: np.ndarray  # int32, job of each pair
    alloc_machine: np.ndarray  # int64, machine of each pair
    alloc_workers: np.ndarray  # int64, the job's workers on that machine
    alloc_ps: np.ndarray  # int64, the job's PSs on that machine
    run_workers: np.ndarray  # int64 per job of Frame.running: workers in total
    run_ps: np.ndarray  # int64 per job of Frame.running: PSs in total
    run_machines: np.ndarray  # int64 per job of Frame.running: machines it uses
    n_admitted: int  # jobs that ever ran
    hist_used: np.ndarray  # (samples, R) cluster-wide used fraction at Frame.hist_t

    @property
    def total_used(self) -> np.ndarray:
        """``(R,)`` held over the whole cluster."""
        return np.asarray(self.used.sum(axis=0))

    @property
    def total_capacity(self) -> np.ndarray:
        """``(R,)`` capacity of the whole cluster."""
        return np.asarray(self.capacity.sum(axis=0))


@dataclass(frozen=True, slots=True, eq=False)
class TaskInfo:
    """What never changes in a run of jobs made of tasks: copied once, read by the UI.

    The engine's "GPUs" are the workers (:class:`~gpusched.core.tasks.WorkerLayout`) and its
    jobs are the chunks; *jobs* here are the trace's jobs, each made of chunks.
    """

    types: tuple[str, ...]  # worker type names; codes index them
    edge: np.ndarray  # int64 engine index of each edge worker, ascending
    edge_type: np.ndarray  # int16 type code of each edge worker
    edge_server: np.ndarray  # int64 server of each edge worker
    server_cloud: np.ndarray  # bool per server: in the cloud tier
    server_delay: np.ndarray  # float64 per server: time to ship one chunk there, s
    ps_slots: np.ndarray  # float64 per server: parameter-server slots (inf in the cloud)
    parent: np.ndarray  # int64 job of each chunk
    first: np.ndarray  # int64 chunks of job p are first[p]:first[p + 1]
    job_id: np.ndarray  # the jobs' ids (the trace's)
    chunk_type: np.ndarray  # int16 worker type each chunk needs

    @property
    def n_jobs(self) -> int:
        return int(self.first.shape[0] - 1)

    @property
    def n_edge(self) -> int:
        return int(self.edge.shape[0])


def task_info(engine: Any) -> TaskInfo | None:
    """The static facts of a run of jobs made of tasks (None for any other run)."""
    book = getattr(engine, "book", None)
    if book is None:
        return None
    lay = book.layout

    def ro(a: Any, dtype: Any = None) -> np.ndarray:
        out = np.array(a, dtype=dtype)  # a copy
        out.flags.writeable = False
        return out

    cloud = np.asarray(lay.server_cloud, dtype=bool)
    edge = np.flatnonzero(~cloud[lay.worker_server])
    return TaskInfo(
        types=tuple(lay.types),
        edge=ro(edge, np.int64),
        edge_type=ro(lay.worker_type[edge], np.int16),
        edge_server=ro(lay.worker_server[edge], np.int64),
        server_cloud=ro(cloud),
        server_delay=ro(lay.server_delay, np.float64),
        ps_slots=ro(lay.ps_slots, np.float64),
        parent=ro(book.parent, np.int64),
        first=ro(book.first, np.int64),
        job_id=ro(shown_ids(book.job_id)),
        chunk_type=ro(book.task_type, np.int16),
    )


@dataclass(slots=True, eq=False)
class TaskFrame:
    """Copies of the chunks' placement at one moment, for runs of jobs made of tasks.

    A chunk *waits* while it is queued: *placed* (dispatched, or preempted) on a worker,
    whose data stays there, or not placed yet. Per-job arrays are indexed by job (of
    :class:`TaskInfo`); per-worker arrays by edge worker (``TaskInfo.edge``).
    """

    worker_chunk: np.ndarray  # int32 per edge worker: the chunk holding it, -1 = idle
    worker_status: np.ndarray  # int8 per edge worker: that chunk's status, -1 = idle
    worker_queued: np.ndarray  # int64 per edge worker: chunks placed on it, waiting
    type_unplaced: np.ndarray  # int64 per worker type: waiting chunks not placed yet
    cloud_holding: int  # chunks holding a cloud worker (running, or shipping their data)
    cloud_loading: int  # of which shipping their data
    cloud_queued: int  # chunks placed in the cloud, waiting
    cloud_jobs: int  # jobs with a chunk holding a cloud worker
    cloud_only: int  # unfinished jobs whose placed chunks are all in the cloud (zeta = 1)
    ps_used: np.ndarray  # float64 per server: parameter servers held
    job_done: np.ndarray  # int64 per job: chunks finished
    job_holding: np.ndarray  # int64 per job: chunks holding a worker (edge or cloud)
    job_cloud: np.ndarray  # int64 per job: chunks holding a cloud worker
    job_placed: np.ndarray  # int64 per job: chunks placed on a worker, waiting
    job_unplaced: np.ndarray  # int64 per job: submitted chunks waiting, not placed
    job_progress: np.ndarray  # float64 per job: work done / work, in [0, 1]
    queue_jobs: np.ndarray  # int32 jobs with a waiting chunk, in the policy's order
    running_jobs: np.ndarray  # int32 jobs with a chunk holding a worker, ascending
    n_jobs_done: int  # jobs whose every chunk finished
    avg_jct_s: float | None  # over finished jobs (a job ends with its last chunk), s
    p95_jct_s: float | None
    hist_edge: np.ndarray  # busy edge workers at each sample (Frame.hist_t)
    hist_cloud: np.ndarray  # busy cloud workers at each sample

    @property
    def busy_edge(self) -> int:
        """Edge workers holding a chunk."""
        return int((self.worker_chunk >= 0).sum())


@dataclass(slots=True, eq=False)
class Frame:
    """Copies of everything the widgets draw at one moment (safe on the UI thread).

    Times are simulated seconds. Per-queued-job arrays cover the first
    ``len(queue)`` jobs of the queue in the policy's order (at most ``QUEUE_ROWS``).
    """

    seq: int  # commands the driver has applied
    clock: float  # the displayed simulated clock, s
    engine_now: float  # the engine's last decision point, s
    next_event: float  # the next decision point, s (inf when none)
    n_jobs: int
    n_finished: int
    n_decisions: int
    finished: bool
    paused: bool
    speed: float
    gpu_job: np.ndarray  # (n_gpus, capacity) int32, -1 = empty
    gpu_status: np.ndarray  # (n_gpus, capacity) int8 status of each job, -1 = empty
    busy_gpus: int
    n_queued: int
    queue: np.ndarray  # int32, queued jobs in the policy's order
    queue_waited: np.ndarray  # float64, s since each job last entered the queue
    queue_key: np.ndarray | None  # float64 priority key (lower first), if known
    key_name: str | None
    running: np.ndarray  # int32, jobs holding GPUs, ascending
    run_status: np.ndarray  # int8
    run_progress: np.ndarray  # float64 in [0, 1]
    avg_jct_s: float | None
    p95_jct_s: float | None
    hist_t: np.ndarray  # sample times, s
    hist_busy: np.ndarray  # busy GPUs at each sample
    hist_queue: np.ndarray  # queued jobs at each sample
    events: Events | None = None  # since the previous frame in which the engine advanced
    wall_fps: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)
    n_rejected: int = 0  # jobs the policy rejected (terminal: neither finished nor unfinished)
    rejected: np.ndarray = field(default_factory=lambda: np.empty(0, np.int32))  # newest first
    roles: RoleFrame | None = None  # the ledger, in runs of jobs placed by roles
    tasks: TaskFrame | None = None  # chunks on workers, in runs of jobs made of tasks
    job_gpus: np.ndarray | None = None  # elastic gangs: each job's GPUs now (or last held)

    @property
    def stopped(self) -> bool:
        """The run ended with jobs left (quit mid-run, or ``--until``)."""
        return self.finished and self.n_finished + self.n_rejected < self.n_jobs

    @property
    def n_unfinished(self) -> int:
        """Jobs neither finished nor rejected (yet): summary.json's ``n_unfinished`` at the end."""
        return self.n_jobs - self.n_finished - self.n_rejected


class Driver:
    """Paces one engine and turns its state into :class:`Frame` copies.

    Parameters
    ----------
    engine
        The engine (owned by the driver's thread once :meth:`loop` runs).
    speed
        Simulated seconds per wall second (``math.inf`` = max speed).
    paused
        Start paused (tests step explicitly with ``n``).
    frame_s
        Minimum wall time between two frames while playing, s (at max speed, at
        least 50 ms, so that the engine gets the time).
    """

    def __init__(
        self, engine: Any, *, speed: float = 60.0, paused: bool = False, frame_s: float = 1 / 30
    ) -> None:
        self.engine = engine
        self.speed = float(speed)
        self.paused = paused
        self.frame_s = frame_s
        self.seq = 0
        self.clock = -math.inf
        self.error: BaseException | None = None
        self.done = threading.Event()
        self.started = False
        self._cmds: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        self._wake = threading.Event()
        self._chunk = 16
        n = _HIST
        self._ht = np.empty(n)
        self._hb = np.empty(n, dtype=np.int64)
        self._hq = np.empty(n, dtype=np.int64)
        self._hn = 0
        self._ledger = engine.ledger  # None unless jobs are placed by roles
        self._capacity = np.empty((0, 0))
        self._hr = np.empty((0, 0))  # cluster-wide used fraction per resource, per sample
        self._cap_total = np.empty(0)
        if self._ledger is not None:
            self._capacity = self._ledger.capacity.copy()
            self._capacity.flags.writeable = False
            total = self._capacity.sum(axis=0)
            self._cap_total = np.where(total > 0, total, 1.0)
            self._hr = np.empty((n, self._capacity.shape[1]))
        self._book = getattr(engine, "book", None)  # None unless jobs are made of tasks
        #: the static facts of a run of jobs made of tasks (None otherwise)
        self.task_info = task_info(engine)
        self._he = np.empty(n if self._book is not None else 0, dtype=np.int64)
        self._hc = np.empty_like(self._he)
        self._edge_pos = np.empty(0, dtype=np.int64)  # engine worker -> edge worker, -1: cloud
        if self.task_info is not None:
            self._edge_pos = np.full(engine.state.gpu_job.shape[0], -1, dtype=np.int64)
            self._edge_pos[self.task_info.edge] = np.arange(self.task_info.n_edge)
            parents = engine.book.tasks.parents
            self._work = np.bincount(
                self.task_info.parent,
                weights=engine.state.job_work,
                minlength=self.task_info.n_jobs,
            )
            self._submit = np.asarray(parents.submit_s, dtype=np.float64).copy()
        self._key_name: str | None = None
        self._key_code = KEY_NONE
        self._ev_run = np.empty(0, dtype=np.int32)  # jobs holding GPUs at the last change
        self._ev_status = np.empty(0, dtype=np.int8)
        self._ev_t = -math.inf
        self._ev_decisions = 0
        self._ev_counts = (0, 0)  # jobs finished, preemptions
        self._ev_rejected = np.empty(0, dtype=np.int32)  # every job rejected at the last change
        self._events: Events | None = None
        if engine.mode == "fused":
            self._key_code = int(engine.cfg.key)
            self._key_name = {
                KEY_FIFO: "submit",
                KEY_SJF: "dur",
                KEY_SRTF: "left",
                KEY_LAS: "level",
            }.get(self._key_code)
        else:
            if callable(getattr(engine.policy, "priority_key", None)):
                self._key_name = "key"

    # --- commands (any thread) ------------------------------------------------------------

    def send(self, cmd: str, arg: Any = None) -> None:
        """Queue a command.

        ``pause`` (bool, None toggles), ``speed`` (float), ``step`` (int), or ``stop``
        (end the run now, as ``--until`` would: the loop then finishes as usual).
        """
        self._cmds.put((cmd, arg))
        self._wake.set()

    # --- the loop (worker thread) ---------------------------------------------------------

    def loop(
        self,
        cancelled: Callable[[], bool],
        post: Callable[[Frame], object],
        finish: Callable[[Frame], None],
    ) -> None:
        """Run until the simulation ends or ``cancelled()``; ``post`` frames, ``finish`` once."""
        eng = self.engine
        self.started = True
        try:
            if self.clock == -math.inf:
                first = eng.peek()
                self.clock = first if math.isfinite(first) else 0.0
            post(self.frame())
            last_post = time.perf_counter()
            last_wall = last_post
            while not cancelled():
                dirty = self._apply_commands(cancelled)
                if eng.finished:
                    break
                if self.paused:
                    if dirty:
                        post(self.frame())
                        last_post = time.perf_counter()
                    self._wake.wait(0.05)
                    self._wake.clear()
                    last_wall = time.perf_counter()
                    continue
                t0 = time.perf_counter()
                if math.isinf(self.speed):
                    self._run_chunk()
                else:
                    self._play(t0 - last_wall, t0, cancelled)
                last_wall = t0
                if eng.finished:
                    break
                now_w = time.perf_counter()
                gap = max(self.frame_s, 0.05) if math.isinf(self.speed) else self.frame_s
                if dirty or now_w - last_post >= gap:
                    post(self.frame())
                    last_post = now_w
                if not math.isinf(self.speed):
                    self._wake.wait(0.01)
                    self._wake.clear()
            if eng.finished and not cancelled():
                self._apply_commands(cancelled)
                finish(self.frame())
        except BaseException as exc:  # reported to the UI, re-raised by run_tui
            self.error = exc
            raise
        finally:
            self.done.set()

    def _apply_commands(self, cancelled: Callable[[], bool]) -> bool:
        dirty = False
        while True:
            try:
                cmd, arg = self._cmds.get_nowait()
            except queue.Empty:
                return dirty
            dirty = True
            if cmd == "pause":
                self.paused = (not self.paused) if arg is None else bool(arg)
            elif cmd == "speed":
                self.speed = float(arg)
            elif cmd == "step":
                self.paused = True
                for _ in range(int(arg or 1)):
                    if cancelled() or not self._step(1):
                        break
                    self.clock = self.engine.now
            elif cmd == "stop":
                self.engine.stop()
            self.seq += 1

    def _step(self, n: int) -> bool:
        more = bool(self.engine.step(n))
        self._sample()
        return more

    def _play(self, dt: float, t0: float, cancelled: Callable[[], bool]) -> None:
        eng = self.engine
        target = self.clock + self.speed * max(dt, 0.0)
        while not eng.finished and eng.peek() <= target:
            self._step(1)
            if time.perf_counter() - t0 > 0.04 or cancelled():
                # the engine can't keep up: let the clock lag instead of running ahead
                target = eng.now
                break
        nxt = eng.peek()
        self.clock = min(max(target, eng.now), nxt) if not eng.finished else eng.now

    def _run_chunk(self) -> None:
        t0 = time.perf_counter()
        self._step(self._chunk)
        took = time.perf_counter() - t0
        if took < 0.01:
            self._chunk = min(self._chunk * 2, 1 << 16)
        elif took > 0.03:
            self._chunk = max(self._chunk // 2, 1)
        self.clock = self.engine.now

    # --- frames ---------------------------------------------------------------------------

    def _sample(self) -> None:
        st = self.engine.state
        if self._hn == self._ht.size:  # keep every other sample: the whole run, coarser
            k = self._hn // 2
            self._ht[:k] = self._ht[1 : self._hn : 2]
            self._hb[:k] = self._hb[1 : self._hn : 2]
            self._hq[:k] = self._hq[1 : self._hn : 2]
            if self._ledger is not None:
                self._hr[:k] = self._hr[1 : self._hn : 2]
            if self._book is not None:
                self._he[:k] = self._he[1 : self._hn : 2]
                self._hc[:k] = self._hc[1 : self._hn : 2]
            self._hn = k
        i = self._hn
        self._ht[i] = self.engine.now
        self._hb[i] = st.gpu_n_jobs.shape[0] - st.sim_i[I_FREE_GPUS]
        self._hq[i] = st.sim_i[I_N_QUEUE]
        if self._ledger is not None:
            self._hr[i] = self._ledger.used.sum(axis=0) / self._cap_total
        if self._book is not None:  # as the engine's timeline: busy_edge, busy_cloud
            cloud = int(self._book.cloud_busy)
            self._he[i] = self._hb[i] - cloud
            self._hc[i] = cloud
        self._hn += 1

    def _queue_order(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        st = self.engine.state
        code = self._key_code
        if code != KEY_NONE and q.size:
            key2 = np.zeros(q.size)
            if code == KEY_FIFO:
                key = st.job_submit[q]
            elif code == KEY_SJF:
                key = st.job_work[q]
            elif code == KEY_SRTF:
                key = st.job_remaining[q]
            else:  # KEY_LAS, as kernel._compute_keys (queued jobs: 2 * level + 1)
                thr = np.asarray(self.engine.cfg.thresholds) - 1e-6
                key = np.searchsorted(thr, st.job_attained[q], side="right").astype(np.float64)
                fs = st.job_first_start[q]
                key2 = np.where(np.isnan(fs), st.job_submit[q], fs)
            o = np.lexsort((q, key2, key))
            return q[o], key[o]
        fn = getattr(self.engine.policy, "priority_key", None)
        if callable(fn) and q.size:
            key = np.asarray(fn(self.engine.view, q), dtype=np.float64)
            o = np.lexsort((q, key))
            return q[o], key[o]
        decision = self.engine.last_decision
        last = None if decision is None or decision.order is None else np.asarray(decision.order)
        if last is not None and last.size and q.size:
            first = last[np.isin(last, q)]
            rest = np.setdiff1d(q, first, assume_unique=True)
            return np.concatenate([first, rest]).astype(np.int32), None
        return q, None

    def frame(self) -> Frame:
        """Copy what the widgets need out of the live state (call on the driver's thread)."""
        eng = self.engine
        eng.sync()
        st = eng.state
        now = eng.now
        clock = self.clock if math.isfinite(self.clock) else 0.0
        q_all = st.queue[: st.sim_i[I_N_QUEUE]].copy()
        q_all = q_all[st.job_status[q_all] == QUEUED] if q_all.size else q_all
        order, key = self._queue_order(q_all)
        q = order[:QUEUE_ROWS]
        run = np.sort(st.run[: st.sim_i[I_N_RUN]])
        gpu_job = st.gpu_job.copy()
        if st.job_status.size:
            status = st.job_status[np.maximum(gpu_job, 0)]
            gpu_status = np.where(gpu_job >= 0, status, -1).astype(np.int8)
        else:  # a trace of no job: every GPU idle (the lookup above would index nothing)
            gpu_status = np.full(gpu_job.shape, -1, np.int8)
        done = np.flatnonzero(st.job_status == FINISHED)
        avg: float | None
        p95: float | None
        if done.size:
            jct = st.job_finish[done] - st.job_submit[done]
            avg, p95 = float(jct.mean()), float(np.percentile(jct, 95))
        else:
            avg = p95 = None
        work = st.job_work[run]
        with np.errstate(invalid="ignore", divide="ignore"):
            prog = np.clip(1.0 - st.job_remaining[run] / np.where(work > 0, work, 1.0), 0.0, 1.0)
        n = self._hn
        n_rej = int(st.sim_i[I_N_REJECTED])
        rejected = (
            np.flatnonzero(st.job_status == REJECTED).astype(np.int32)
            if n_rej
            else np.empty(0, np.int32)
        )
        return Frame(
            seq=self.seq,
            clock=max(clock, now) if math.isfinite(now) else clock,
            engine_now=now,
            next_event=eng.peek(),
            n_jobs=len(eng.jobs),
            n_finished=int(st.sim_i[I_N_FINISHED]),
            n_decisions=int(st.sim_i[I_N_DECISIONS]),
            finished=bool(eng.finished),
            paused=self.paused,
            speed=self.speed,
            gpu_job=gpu_job,
            gpu_status=gpu_status,
            busy_gpus=int(st.gpu_n_jobs.shape[0] - st.sim_i[I_FREE_GPUS]),
            n_queued=int(q_all.size),
            queue=q,
            queue_waited=np.maximum(clock - st.job_enqueued[q], 0.0),
            queue_key=None if key is None else key[:QUEUE_ROWS].copy(),
            key_name=self._key_name,
            running=run,
            run_status=st.job_status[run].copy(),
            run_progress=prog,
            avg_jct_s=avg,
            p95_jct_s=p95,
            hist_t=self._ht[:n].copy(),
            hist_busy=self._hb[:n].copy(),
            hist_queue=self._hq[:n].copy(),
            events=self._diff(run, rejected),
            extra=self._policy_status(),
            n_rejected=n_rej,
            rejected=rejected[::-1][:QUEUE_ROWS].copy(),
            roles=self._roles(run),
            tasks=self._tasks(order),
            job_gpus=st.job_n_gpus.copy() if eng.elastic else None,
        )

    def _roles(self, run: np.ndarray) -> RoleFrame | None:
        """Copies of the ledger (``run``: the jobs running, sorted), None without one."""
        led = self._ledger
        if led is None:
            return None
        jobs = sorted(led.alloc)
        parts_m: list[np.ndarray] = []
        parts_w: list[np.ndarray] = []
        parts_s: list[np.ndarray] = []
        sizes: list[int] = []
        for j in jobs:
            w, s = led.alloc[j]
            m = np.flatnonzero((w > 0) | (s > 0))
            parts_m.append(m)
            parts_w.append(w[m])
            parts_s.append(s[m])
            sizes.append(m.size)
        i64 = np.empty(0, dtype=np.int64)
        alloc_job = np.repeat(np.asarray(jobs, dtype=np.int32), sizes)
        machine = np.concatenate(parts_m).astype(np.int64) if jobs else i64
        workers = np.concatenate(parts_w).astype(np.int64) if jobs else i64
        ps = np.concatenate(parts_s).astype(np.int64) if jobs else i64
        # totals per running job: its pairs are alloc_job's run of equal entries
        lo = np.searchsorted(alloc_job, run, "left")
        hi = np.searchsorted(alloc_job, run, "right")
        cw = np.concatenate([[0], np.cumsum(workers)])
        cs = np.concatenate([[0], np.cumsum(ps)])
        st = self.engine.state
        n = self._hn
        return RoleFrame(
            capacity=self._capacity,
            used=led.used.copy(),
            alloc_job=alloc_job,
            alloc_machine=machine,
            alloc_workers=workers,
            alloc_ps=ps,
            run_workers=(cw[hi] - cw[lo]).astype(np.int64),
            run_ps=(cs[hi] - cs[lo]).astype(np.int64),
            run_machines=(hi - lo).astype(np.int64),
            n_admitted=int(np.count_nonzero(~np.isnan(st.job_first_start))),
            hist_used=self._hr[:n].copy(),
        )

    def _tasks(self, order: np.ndarray) -> TaskFrame | None:
        """Copies of the chunks' placement (``order``: every waiting chunk, in the
        policy's order), None unless the jobs are made of tasks."""
        info, book = self.task_info, self._book
        if info is None or book is None:
            return None
        st = self.engine.state
        status = st.job_status
        parent = info.parent
        n_jobs = info.n_jobs
        n_edge = info.n_edge
        # the edge workers: the chunk on each and its status
        chunk = st.gpu_job[info.edge, 0].astype(np.int32)
        wstatus = np.where(chunk >= 0, status[np.maximum(chunk, 0)], -1).astype(np.int8)
        # waiting chunks: placed on a worker (edge or cloud) or not placed yet
        bound = book.bound
        waiting = status == QUEUED
        placed = waiting & (bound >= 0)
        pos = self._edge_pos[bound[placed]]
        queued = np.bincount(pos[pos >= 0], minlength=n_edge).astype(np.int64)
        unplaced = waiting & (bound < 0)
        n_types = len(info.types)
        type_unplaced = np.bincount(info.chunk_type[unplaced], minlength=n_types)
        # chunks holding a worker, and which of them are in the cloud
        holding = (status == RUNNING) | (status == LOADING) | (status == SAVING)
        on_cloud = (bound >= 0) & (self._edge_pos[np.maximum(bound, 0)] < 0)
        cloud_hold = holding & on_cloud

        def per_job(mask: np.ndarray) -> np.ndarray:
            return np.bincount(parent[mask], minlength=n_jobs).astype(np.int64)

        job_done = per_job(status == FINISHED)
        job_holding = per_job(holding)
        job_cloud = per_job(cloud_hold)
        job_placed = per_job(placed)
        job_unplaced = per_job(unplaced)
        left = np.bincount(parent, weights=st.job_remaining, minlength=n_jobs)
        work = self._work
        with np.errstate(invalid="ignore", divide="ignore"):
            prog = np.clip(1.0 - left / np.where(work > 0, work, 1.0), 0.0, 1.0)
        chunks = np.diff(info.first)
        done = (job_done == chunks) & (chunks > 0)
        avg: float | None = None
        p95: float | None = None
        if done.any():
            # each job's last chunk: reduce over every job's chunks, then keep the finished
            # jobs (reducing from the finished jobs' first chunks alone ran each range on
            # into the next job's chunks, unfinished ones (NaN) included: JCT read "-")
            starts = info.first[:-1]
            nonempty = chunks > 0
            finish = np.full(n_jobs, np.nan)
            finish[nonempty] = np.maximum.reduceat(st.job_finish, starts[nonempty])
            jct = finish[done] - self._submit[done]
            avg, p95 = float(jct.mean()), float(np.percentile(jct, 95))
        # the jobs of the waiting chunks, in the order of their first chunk in the queue
        if order.size:
            p = parent[order]
            _, at = np.unique(p, return_index=True)
            queue_jobs = p[np.sort(at)].astype(np.int32)
        else:
            queue_jobs = np.empty(0, dtype=np.int32)
        n = self._hn
        return TaskFrame(
            worker_chunk=chunk,
            worker_status=wstatus,
            worker_queued=queued,
            type_unplaced=type_unplaced.astype(np.int64),
            cloud_holding=int(cloud_hold.sum()),
            cloud_loading=int((cloud_hold & (status == LOADING)).sum()),
            cloud_queued=int((placed & on_cloud).sum()),
            cloud_jobs=int((job_cloud > 0).sum()),
            cloud_only=int(((book.zeta == 1) & ~done).sum()),
            ps_used=book.ledger.used[:, 0].copy(),
            job_done=job_done,
            job_holding=job_holding,
            job_cloud=job_cloud,
            job_placed=job_placed,
            job_unplaced=job_unplaced,
            job_progress=prog,
            queue_jobs=queue_jobs,
            running_jobs=np.flatnonzero(job_holding).astype(np.int32),
            n_jobs_done=int(done.sum()),
            avg_jct_s=avg,
            p95_jct_s=p95,
            hist_edge=self._he[:n].copy(),
            hist_cloud=self._hc[:n].copy(),
        )

    def _diff(self, run: np.ndarray, rejected: np.ndarray) -> Events | None:
        """Events since the last frame in which the engine advanced (``run`` sorted;
        ``rejected``: every rejected job, sorted)."""
        st = self.engine.state
        n_dec = int(st.sim_i[I_N_DECISIONS])
        now = self.engine.now
        if n_dec == self._ev_decisions and now == self._ev_t:
            return self._events  # nothing happened since (the last run-down has no decision)
        status = st.job_status[run]
        prev, prev_status = self._ev_run, self._ev_status
        started = np.setdiff1d(run, prev, assume_unique=True).astype(np.int32)
        left = np.isin(prev, run, assume_unique=True, invert=True)
        gone = prev[left]
        done = st.job_status[gone] == FINISHED
        # a preemption shows when the job stops running: it leaves the GPUs, or starts
        # saving (then leaving after the save is not reported again)
        kept = np.isin(run, prev, assume_unique=True)
        to_save = run[kept & (status == SAVING)]
        was = prev_status[np.isin(prev, to_save, assume_unique=True)]
        preempted = np.concatenate(
            [to_save[was != SAVING], gone[~done & (prev_status[left] != SAVING)]]
        )
        sub = self.engine.jobs.submit_s
        lo = np.searchsorted(sub, self._ev_t, "right") if math.isfinite(self._ev_t) else 0
        counts = (int(st.sim_i[I_N_FINISHED]), int(st.sim_i[I_N_PREEMPT]))
        self._events = Events(
            t_from=self._ev_t,
            t_to=now,
            n_decisions=n_dec - self._ev_decisions,
            started=started,
            preempted=np.sort(preempted).astype(np.int32),
            finished=gone[done].astype(np.int32),
            n_arrived=int(np.searchsorted(sub, now, "right") - lo),
            n_finished=counts[0] - self._ev_counts[0],
            n_preempted=counts[1] - self._ev_counts[1],
            n_holding=(int(prev.size), int(run.size)),
            rejected=np.setdiff1d(rejected, self._ev_rejected, assume_unique=True).astype(np.int32),
            n_rejected=int(rejected.size - self._ev_rejected.size),
        )
        self._ev_rejected = rejected
        self._ev_counts = counts
        self._ev_run, self._ev_status = run, status
        self._ev_t, self._ev_decisions = now, n_dec
        return self._events

    def _policy_status(self) -> dict[str, Any]:
        """The policy's optional ``status_line(view, now) -> str`` (shown in the metrics panel)."""
        eng = self.engine
        fn = getattr(eng.policy, "status_line", None)
        if not callable(fn) or not math.isfinite(eng.now):
            return {}
        from gpusched.errors import show_text

        return {"status": show_text(str(fn(eng.view, eng.now)))}


def shown_ids(ids: Any) -> np.ndarray:
    """Job ids for the screen: ``ids`` itself when every one is printable, else a copy
    with control characters escaped (:func:`gpusched.errors.show_text`), so that an id
    holding a terminal escape sequence or a newline never reaches the terminal raw."""
    from gpusched.errors import show_text

    texts = [str(x) for x in np.asarray(ids).tolist()]
    if "".join(texts).isprintable():
        return np.asarray(ids)
    return np.array([show_text(x) for x in texts], dtype=object)


def resample(t: np.ndarray, v: np.ndarray, n_bins: int) -> list[float]:
    """Mean of ``v`` in ``n_bins`` equal bins of time ``t`` (empty bins carry the last value)."""
    if t.size == 0 or n_bins <= 0:
        return []
    if t.size == 1 or t[-1] <= t[0]:
        return [float(v[-1])] * min(n_bins, max(t.size, 1))
    edges = np.linspace(t[0], t[-1], n_bins + 1)
    idx = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, n_bins - 1)
    sums = np.bincount(idx, weights=v.astype(np.float64), minlength=n_bins)
    counts = np.bincount(idx, minlength=n_bins)
    out: list[float] = []
    last = float(v[0])
    for s, c in zip(sums.tolist(), counts.tolist(), strict=True):
        if c:
            last = s / c
        out.append(last)
    return out


def fmt_speed(speed: float) -> str:
    """Speed as shown in the status line."""
    if math.isinf(speed):
        return "max"
    return f"{fmt_s(speed)}/s"
