"""The simulation state: one struct-of-arrays owned by the engine.

The state is a :class:`SimState` named tuple of NumPy arrays with fixed dtypes, one
field per column (pynndescent's heap tuple is the model). The jitted kernel
(:mod:`gpusched.core.kernel`) reads and writes it in place; policies only ever see
read-only views of it (:mod:`gpusched.core.view`).

Accounting is lazy: while a job holds GPUs its ``job_remaining``, ``job_executed``,
``job_attained``, ``job_load_spent_s`` and ``job_save_spent_s`` are current as of
``job_seg_start`` only; the
kernel brings them up to date (``sync``) when it needs them and before any Python code
reads the state, so the per-decision cost does not grow with every running job's
bookkeeping. Training progress (remaining, executed, attained) is computed from the
``job_anchor_*`` values, fixed when the job last started training at its current rate:
a pure function of the time, so it is the same to the last bit however often it is
brought up to date (the fused path and a Python policy sync at different moments).

Jobs are indexed ``0..n_jobs-1`` in submission order (stable sort of the trace by
``submit_time``), so "job index" order is arrival order. GPUs are numbered server
by server, as :meth:`gpusched.io.cluster.ClusterSpec.gpu_server` numbers them.

A GPU may hold up to ``gpu_capacity`` jobs at once (1 = exclusive; the
GPU-sharing family uses 2): ``gpu_job`` is ``(n_gpus, gpu_capacity)``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

#: Interference ratio when no job model gives one: two jobs on a GPU time-slice it, each
#: at half speed, so sharing never creates GPU capacity out of nothing.
XI_DEFAULT = 2.0

# --- job status codes (int8) --------------------------------------------------
PENDING = 0  #: not yet submitted
QUEUED = 1  #: submitted, waiting for GPUs
LOADING = 2  #: holds GPUs, loading checkpoint/data, makes no progress
RUNNING = 3  #: holds GPUs and makes progress at ``job_rate``
SAVING = 4  #: holds GPUs, pausing and saving after a preemption
FINISHED = 5  #: done
REJECTED = 6  #: refused by the policy (a terminal status; never run, never unfinished)

STATUS_NAMES = ("pending", "queued", "loading", "running", "saving", "finished", "rejected")

# --- scalar slots in ``sim_f`` (float64) and ``sim_i`` (int64) -----------------
F_NOW = 0  #: current simulated time, s
F_WAKE = 1  #: earliest wake-up a policy asked for, s (inf = none)
F_SHARED_GPU_S = 2  #: integral over time of the GPUs holding two or more jobs, GPU-s
F_EXTRA_GPU_S = 3  #: integral of the jobs beyond the first on each GPU, GPU-s (= the
# above when C = 2); busy GPU-time is the jobs' held GPU-time minus this
F_RESIDUAL = 4  #: largest |remaining work| / work of a job at its completion (work conserved)
F_ASK_ARG = 5  #: a fused rule's question to the policy: its argument (see ``I_ASK_JOB``)
F_ANSWER = 6  #: the policy's answer to it
N_SIM_F = 7

I_NEXT_ARRIVAL = 0  #: index of the next job to arrive
I_N_QUEUE = 1  #: length of ``queue``
I_N_RUN = 2  #: length of ``run`` (jobs holding GPUs)
I_N_FINISHED = 3
I_FREE_GPUS = 4  #: GPUs holding no job
I_N_DECISIONS = 5  #: decision points so far
I_N_PREEMPT = 6  #: preemptions so far
I_N_SORTED = 7  #: queue prefix already sorted by key (fused path)
I_N_HELD = 8  #: length of the holders list kept in ``cand`` (fused preemptive path)
I_SHARED_GPUS = 9  #: GPUs holding two or more jobs
I_EXTRA = 10  #: jobs beyond the first on each GPU, summed over GPUs (0: nothing shared)
I_EVER_SHARED = 11  #: 1 once any GPU has held two jobs (rates then varied)
I_N_REJECTED = 12  #: jobs the policy rejected (terminal, like finished ones)
I_N_EVENTS = 13  #: events in the ``ev_*`` buffer (the event log; see below)
I_N_EV_GPUS = 14  #: GPU indices in ``ev_gpu``
I_EV_LOST = 15  #: events that found the buffer full (must stay 0: the engine flushes first)
I_EV_ROOM = 16  #: the fused loop returns to Python before a step when fewer events than
# this are free (the most one decision point can log)
I_EV_GPU_ROOM = 17  #: likewise for ``ev_gpu``
# --- a fused rule that keeps its own queues (KEY_LAZER) ----------------------------------
I_PHASE = 18  #: 0 between decisions; else the decision in progress resumes at this phase
I_CURSOR = 19  #: the next arrival of the decision in progress to handle
I_FIRST_NEW = 20  #: the first arrival of the decision in progress
I_DONE_HERE = 21  #: 1 if some job finished at the decision in progress
I_ASK_JOB = 22  #: the job a question to the policy is about (-1: none pending); the rule
# stops with the code ASK, the engine writes the answer to ``F_ANSWER`` and calls again
I_ANSWERED = 23  #: 1 when ``F_ANSWER`` holds the answer to the pending question
I_N_TIMERS = 24  #: live entries of ``tmr_t`` / ``tmr_job``
I_N_WAITING = 25  #: live entries of ``wait_job``
I_N_LINKED = 26  #: GPUs whose ``gpu_link`` is not -1
I_N_TOUCHED = 27  #: jobs marked taken at the decision in progress (listed in ``order``)
N_SIM_I = 28

# --- the event log (``gpusched replay --events``) -------------------------------
# The kernel appends one row per state change to the ``ev_*`` buffers when they have room
# (length 0: no log, and a run pays one comparison per start, preemption or completion).
# Arrivals, the end of a load and the start of a save follow from these and the job's
# static times, so they are not stored (see :mod:`gpusched.core.events`).
EV_START = 0  #: ``ev_arg``: offset of the job's GPUs in ``ev_gpu`` (``job_n_gpus`` of them)
EV_PREEMPT = 1  #: ``ev_arg``: 0 releases at once, 1 futile (released at once), 2 saves
EV_REQUEUE = 2  #: a save ended: the job released its GPUs and queued again
EV_FINISH = 3


class SimState(NamedTuple):
    """Struct-of-arrays simulation state (all fields are NumPy arrays).

    Per-job arrays have length ``n_jobs``; per-GPU arrays ``n_gpus``; per-server
    arrays ``n_servers``. Times are seconds of simulated time.
    """

    # jobs: static
    job_submit: np.ndarray  # float64, s
    job_n_gpus: np.ndarray  # int32, GPUs of the gang (of an elastic job: of its last start)
    job_work: np.ndarray  # float64, s of exclusive run time at rate 1 (the duration)
    job_rate: np.ndarray  # float64, progress (s of work) per s while running: solo rate / xi
    job_solo_rate: np.ndarray  # float64, the rate alone on its GPUs (a performance model's)
    job_kind: np.ndarray  # int32, row and column of the job in ``xi`` (its model)
    job_load_s: np.ndarray  # float64, s spent loading after each start
    job_save_s: np.ndarray  # float64, s spent saving after each preemption
    job_alloc_off: np.ndarray  # int64 (n_jobs + 1), offset of the job's GPUs in alloc_gpu
    # jobs: dynamic
    job_status: np.ndarray  # int8, one of the status codes
    job_remaining: np.ndarray  # float64, s of work left
    job_first_start: np.ndarray  # float64, s (nan until started)
    job_last_start: np.ndarray  # float64, s
    job_finish: np.ndarray  # float64, s (nan until finished)
    job_executed: np.ndarray  # float64, s spent RUNNING
    job_attained: np.ndarray  # float64, GPU-s of RUNNING service (Tiresias' attained service)
    job_wait_s: np.ndarray  # float64, s spent QUEUED after submission (W of W + L + T + P)
    job_load_spent_s: np.ndarray  # float64, s spent LOADING, futile loads included (L)
    job_save_spent_s: np.ndarray  # float64, s spent SAVING (P); T is job_executed
    job_n_preempt: np.ndarray  # int32
    job_n_futile: np.ndarray  # int32, preemptions before any training since the last load
    job_futile_s: np.ndarray  # float64, load time wasted by futile preemptions
    job_shared: np.ndarray  # int8, 1 while another job holds one of the job's GPUs
    job_shared_s: np.ndarray  # float64, s spent RUNNING with a partner on some GPU
    job_phase_end: np.ndarray  # float64, s at which LOADING/SAVING ends (LOADING: the start
    # itself when the job has no load time, so training began at job_phase_end either way)
    job_run_pos: np.ndarray  # int32, position in ``run`` (-1 if absent)
    job_queue_pos: np.ndarray  # int32, position in ``queue`` when last put there (dequeue)
    job_seg_start: np.ndarray  # float64, s up to which a holder's accounting is current
    job_anchor_t: np.ndarray  # float64, s from which a holder trains at its current rate
    job_anchor_rem: np.ndarray  # float64, job_remaining at job_anchor_t
    job_anchor_exec: np.ndarray  # float64, job_executed at job_anchor_t
    job_anchor_att: np.ndarray  # float64, job_attained at job_anchor_t
    job_enqueued: np.ndarray  # float64, s at which the job last entered the queue
    job_key: np.ndarray  # float64 scratch: primary priority key
    job_key2: np.ndarray  # float64 scratch: secondary priority key
    job_mark: np.ndarray  # int8 scratch
    job_level: np.ndarray  # int8, KEY_LAS: the Tiresias level whose list holds the job
    job_base_att: np.ndarray  # float64, KEY_LAS with starvation: job_attained at the job's
    # last promotion to level 0 (its level counts service since then)
    job_seq: np.ndarray  # float64, KEY_LAS: place in that list, smaller first (nan = not in
    # one yet): < 0 if it held GPUs at a re-pack since, else when it joined the back (s after
    # the first submission)
    alloc_gpu: np.ndarray  # int32 (sum of n_gpus, or of alloc_size), GPUs held by each job
    # (-1 when none), from the start of the job's room
    queue: np.ndarray  # int32, queued jobs; the first I_N_QUEUE entries are live
    run: np.ndarray  # int32, jobs holding GPUs; the first I_N_RUN entries are live
    run_end: np.ndarray  # float64, per ``run`` position: the holder's next event (completion
    # or save end), s; constant while nothing changes the job, so it is scanned, not updated
    run_cross: np.ndarray  # float64, per ``run`` position: next Tiresias level crossing, s
    # (nan = not computed yet)
    cand: np.ndarray  # int32 scratch for priority orders; fused re-pack: holders in last order
    order: np.ndarray  # int32 scratch: jobs selected by the fused re-pack, in merged order
    # GPUs and servers
    gpu_server: np.ndarray  # int32, server of each GPU
    gpu_n_jobs: np.ndarray  # int8, jobs on each GPU
    gpu_job: np.ndarray  # int32 (n_gpus, gpu_capacity), jobs on each GPU (-1 = empty)
    server_gpu_off: np.ndarray  # int32 (n_servers + 1), first GPU of each server
    server_free: np.ndarray  # int32, GPUs holding no job, per server
    xi: np.ndarray  # float64 (kinds, kinds): interference ratio of a job of kind a while a
    # job of kind b shares one of its GPUs (SJF-BSBF paper, eq. 5-6)
    # the queues of a fused rule that keeps its own (KEY_LAZER; length 0 otherwise)
    job_flag: np.ndarray  # int8, the rule's marks on a job (``JF_*``)
    job_link: np.ndarray  # int32, a job this one is tied to (KEY_LAZER: DRQ -> its j_new)
    gpu_link: np.ndarray  # int32 (n_gpus), -1; a job the GPU is promised to; -2 blocked for
    # the rest of the decision in progress (released there: not free for its later starts)
    tmr_t: np.ndarray  # float64, the rule's timers (s), in the order they were set
    tmr_job: np.ndarray  # int32, the job of each timer
    wait_job: np.ndarray  # int32, jobs whose start waits for saves, in the order promised
    # scalars
    # event log buffers (length 0 when no log is kept)
    ev_t: np.ndarray  # float64, s
    ev_kind: np.ndarray  # int8, one of the EV_* codes
    ev_job: np.ndarray  # int32
    ev_arg: np.ndarray  # int32, per EV_* code
    ev_gpu: np.ndarray  # int32, the GPUs of EV_START rows
    sim_f: np.ndarray  # float64 (N_SIM_F,)
    sim_i: np.ndarray  # int64 (N_SIM_I,)


def new_state(
    submit_s: np.ndarray,
    n_gpus: np.ndarray,
    work_s: np.ndarray,
    server_gpus: np.ndarray,
    *,
    gpu_capacity: int = 1,
    rate: np.ndarray | None = None,
    load_s: np.ndarray | None = None,
    save_s: np.ndarray | None = None,
    kind: np.ndarray | None = None,
    xi: np.ndarray | None = None,
    events: tuple[int, int] = (0, 0),
    alloc_size: np.ndarray | None = None,
    rule_queues: bool = False,
) -> SimState:
    """Build a fresh state with every job PENDING and every GPU free.

    Parameters
    ----------
    submit_s
        Submission time of each job, s; must be sorted ascending.
    n_gpus
        GPUs each job needs (gang size), >= 1.
    work_s
        Exclusive run time of each job at rate 1, s, > 0.
    server_gpus
        GPUs per server.
    gpu_capacity
        Jobs that may share one GPU at once (1 = exclusive).
    rate, load_s, save_s
        Optional per-job progress rate (default 1), load and save times in s
        (default 0).
    kind, xi
        Optional per-job interference kind (default 0) and the interference matrix
        (default ``[[XI_DEFAULT]]``): while job ``j`` shares a GPU with job ``p`` it runs
        at ``rate / xi[kind[j], kind[p]]`` (the largest over its partners).
    events
        Room in the event log: (rows, GPU indices); (0, 0) keeps no log.
    alloc_size
        Optional per-job room in ``alloc_gpu`` (default ``n_gpus``): an *elastic* job
        (one a start may give any GPU count up to this many) needs room for the most it
        may hold. Its ``job_n_gpus`` is then the count of its current (or last) start.
    rule_queues
        Allocate the arrays of a fused rule that keeps its own queues (``job_flag`` ...);
        else they have length 0.
    """
    n = int(len(submit_s))
    submit = np.ascontiguousarray(submit_s, dtype=np.float64)
    if n and np.any(np.diff(submit) < 0):
        raise ValueError("submit times must be sorted")
    gpus = np.ascontiguousarray(n_gpus, dtype=np.int32)
    work = np.ascontiguousarray(work_s, dtype=np.float64)
    server_gpus = np.asarray(server_gpus, dtype=np.int32)
    n_gpu_total = int(server_gpus.sum())
    alloc_off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(gpus if alloc_size is None else np.asarray(alloc_size, np.int64), out=alloc_off[1:])
    server_off = np.zeros(len(server_gpus) + 1, dtype=np.int32)
    np.cumsum(server_gpus, out=server_off[1:])
    nan = np.full(n, np.nan)

    def per_job(values: np.ndarray | None, default: float) -> np.ndarray:
        if values is None and default == 0.0:
            return np.zeros(n, dtype=np.float64)  # (pages untouched until written: memory)
        if values is None:
            return np.full(n, default, dtype=np.float64)
        return np.ascontiguousarray(values, dtype=np.float64)

    kinds = np.zeros(n, dtype=np.int32) if kind is None else np.ascontiguousarray(kind, np.int32)
    xi_m = np.full((1, 1), XI_DEFAULT) if xi is None else np.ascontiguousarray(xi, np.float64)
    if xi_m.ndim != 2 or xi_m.shape[0] != xi_m.shape[1] or xi_m.size == 0:
        raise ValueError(f"xi must be a non-empty square matrix, got shape {xi_m.shape}")
    if not (np.isfinite(xi_m).all() and (xi_m >= 1.0).all()):
        raise ValueError("interference ratios xi must be finite and >= 1")
    if kinds.shape != (n,) or (n and (kinds.min() < 0 or kinds.max() >= xi_m.shape[0])):
        raise ValueError("job kinds must index the xi matrix")
    rates = per_job(rate, 1.0)
    sim_f = np.zeros(N_SIM_F, dtype=np.float64)
    sim_f[F_NOW] = -np.inf
    sim_f[F_WAKE] = np.inf
    sim_i = np.zeros(N_SIM_I, dtype=np.int64)
    sim_i[I_FREE_GPUS] = n_gpu_total
    sim_i[I_ASK_JOB] = -1
    r = n if rule_queues else 0
    return SimState(
        job_submit=submit,
        job_n_gpus=gpus,
        job_work=work,
        job_rate=rates,
        job_solo_rate=rates.copy(),
        job_kind=kinds,
        job_load_s=per_job(load_s, 0.0),
        job_save_s=per_job(save_s, 0.0),
        job_alloc_off=alloc_off,
        job_status=np.zeros(n, dtype=np.int8),
        job_remaining=work.copy(),
        job_first_start=nan.copy(),
        job_last_start=nan.copy(),
        job_finish=nan.copy(),
        job_executed=np.zeros(n),
        job_attained=np.zeros(n),
        job_wait_s=np.zeros(n),
        job_load_spent_s=np.zeros(n),
        job_save_spent_s=np.zeros(n),
        job_n_preempt=np.zeros(n, dtype=np.int32),
        job_n_futile=np.zeros(n, dtype=np.int32),
        job_futile_s=np.zeros(n),
        job_shared=np.zeros(n, dtype=np.int8),
        job_shared_s=np.zeros(n),
        job_phase_end=nan.copy(),
        job_run_pos=np.full(n, -1, dtype=np.int32),
        job_queue_pos=np.full(n, -1, dtype=np.int32),
        job_seg_start=nan.copy(),
        job_anchor_t=nan.copy(),
        job_anchor_rem=work.copy(),
        job_anchor_exec=np.zeros(n),
        job_anchor_att=np.zeros(n),
        job_enqueued=nan.copy(),
        job_key=np.zeros(n),
        job_key2=np.zeros(n),
        job_mark=np.zeros(n, dtype=np.int8),
        job_level=np.zeros(n, dtype=np.int8),
        job_base_att=np.zeros(n),
        job_seq=nan.copy(),
        alloc_gpu=np.full(int(alloc_off[-1]), -1, dtype=np.int32),
        queue=np.zeros(n, dtype=np.int32),
        run=np.zeros(n, dtype=np.int32),
        run_end=np.full(n, np.inf),
        run_cross=np.full(n, np.nan),
        cand=np.zeros(n, dtype=np.int32),
        order=np.zeros(n, dtype=np.int32),
        gpu_server=np.repeat(np.arange(len(server_gpus), dtype=np.int32), server_gpus),
        gpu_n_jobs=np.zeros(n_gpu_total, dtype=np.int8),
        gpu_job=np.full((n_gpu_total, gpu_capacity), -1, dtype=np.int32),
        server_gpu_off=server_off,
        server_free=server_gpus.copy(),
        xi=xi_m,
        job_flag=np.zeros(r, dtype=np.int8),
        job_link=np.full(r, -1, dtype=np.int32),
        gpu_link=np.full(n_gpu_total if rule_queues else 0, -1, dtype=np.int32),
        tmr_t=np.zeros(r, dtype=np.float64),
        tmr_job=np.zeros(r, dtype=np.int32),
        wait_job=np.zeros(r, dtype=np.int32),
        ev_t=np.zeros(events[0], dtype=np.float64),
        ev_kind=np.zeros(events[0], dtype=np.int8),
        ev_job=np.zeros(events[0], dtype=np.int32),
        ev_arg=np.zeros(events[0], dtype=np.int32),
        ev_gpu=np.zeros(events[1], dtype=np.int32),
        sim_f=sim_f,
        sim_i=sim_i,
    )


#: the kernel's working arrays: a finished run's results (jobs.csv, the summary, the
#: manifest) read none of them (see :func:`without_scratch`)
SCRATCH_FIELDS = (
    "job_seg_start",
    "job_anchor_t",
    "job_anchor_rem",
    "job_anchor_exec",
    "job_anchor_att",
    "job_key",
    "job_key2",
    "job_mark",
    "job_level",
    "job_base_att",
    "job_seq",
    "job_run_pos",
    "job_queue_pos",
    "run_end",
    "run_cross",
    "cand",
    "order",
)


def without_scratch(st: SimState) -> SimState:
    """``st`` with its working arrays (:data:`SCRATCH_FIELDS`) replaced by empty ones of
    the same dtypes, for a run that is over and whose engine is gone: what its results
    read is kept, and the rest can be given back (1M jobs: about 100 MB). The run cannot
    go on from the state this returns."""
    return st._replace(
        **{
            f: np.empty((0,) + getattr(st, f).shape[1:], getattr(st, f).dtype)
            for f in SCRATCH_FIELDS
        }
    )


# --- priority keys the kernel evaluates itself (the fused fast path) -----------
KEY_NONE = -1  #: the policy orders jobs in Python
KEY_FIFO = 0  #: submission order
KEY_SJF = 1  #: total work (duration), shortest first
KEY_SRTF = 2  #: remaining work, shortest first
KEY_LAS = 3  #: discretized least-attained-service (Tiresias 2D-LAS): level, then place in its list
KEY_LAZER = 4  #: Lazer's Alg. 1-2 (policies/lazer.py): preemption on arrival, deferred
FLAG_LOADING_IN_RQ = 1  #: KEY_LAZER: a loading job may be preempted (KernelConfig.flags)
# marks in ``job_flag`` (KEY_LAZER)
JF_DWQ = 1  #: deferred waiting queue: an arrival whose preemption is deferred
JF_DRQ = 2  #: deferred running queue: a job kept for a deferred arrival (``job_link``)
JF_WAITING = 4  #: its start waits for saves to end (its GPUs have ``gpu_link`` = it)
JF_TAKEN = 8  #: started or preempted at the decision in progress

# --- what the kernel's loops return (see gpusched.core.kernel) ---------------------------
EPS = 1e-9  #: s; tolerance for float comparisons of times
DONE = 0
LIMIT = 1  #: a buffer or step limit was reached: call again
UNTIL = 2  #: the ``until_s`` horizon was reached
STUCK = 3  #: jobs are left but no event will ever come
ASK = 4  #: a fused rule asks the policy a question (``I_ASK_JOB``): answer, then call again
E_CAPACITY = -1  #: a GPU would hold more jobs than its capacity
E_TIME = -2  #: time would go backwards


class Timeline(NamedTuple):
    """Preallocated timeline columns, one row per decision point (the kernel fills them)."""

    time_s: np.ndarray  # float64, s
    busy_gpus: np.ndarray  # int32, GPUs holding at least one job
    queued: np.ndarray  # int32, jobs waiting
    running: np.ndarray  # int32, jobs holding GPUs (loading, training or saving)
    loading_gpus: np.ndarray  # int32, GPUs held by loading jobs
    saving_gpus: np.ndarray  # int32, GPUs held by saving jobs
    shared_gpus: np.ndarray  # int32, GPUs holding two or more jobs


def new_timeline(size: int) -> Timeline:
    """Empty timeline columns for ``size`` rows."""
    i32 = np.int32
    return Timeline(
        np.empty(size, np.float64),
        np.empty(size, i32),
        np.empty(size, i32),
        np.empty(size, i32),
        np.empty(size, i32),
        np.empty(size, i32),
        np.empty(size, i32),
    )


class KernelConfig(NamedTuple):
    """Scalars and small arrays that steer the kernel for one run.

    Attributes
    ----------
    slot_s
        Slot length, s (> 0). Decisions happen only at multiples of it.
    until_s
        Stop the run at this simulated time, s (inf = run to the end).
    key
        One of the ``KEY_*`` codes: the fused priority the kernel evaluates, or
        ``KEY_NONE`` when a Python policy decides.
    preemptive
        Fused fill may preempt running jobs left out of the priority order.
    blocking
        Fused fill stops at the first job that does not fit (strict FIFO).
    allow_spread
        A gang job may span servers when no single server has room.
    thresholds
        KEY_LAS queue thresholds on attained service, GPU-s, ascending.
    phases
        Some job has a load or save time: the timeline counts loading and saving GPUs.
    period
        Fused decisions re-pack only at multiples of this many seconds (0 = at every
        decision point); see :attr:`gpusched.core.policy.Fused.period`.
    starve
        KEY_LAS: Tiresias' starvation knob (0 = off); see :attr:`gpusched.core.policy.Fused.starve`.
    flags, asks
        See :attr:`gpusched.core.policy.Fused.flags` and :attr:`~gpusched.core.policy.Fused.asks`.
    """

    slot_s: float
    until_s: float
    key: int
    preemptive: bool
    blocking: bool
    allow_spread: bool
    thresholds: np.ndarray
    phases: bool = False
    period: float = 0.0
    starve: float = 0.0
    flags: int = 0
    asks: bool = False
