"""The Numba-jitted time-slotted kernel: stepping, completion, placement, priority fill.

Only kernel code lives here, and every function is decorated once with
:func:`gpusched.core.jit.jit`: compiled by Numba with the options in :data:`_JIT` (cached, GIL
released, no reference counting: kernels allocate nothing), or :data:`_INNER` for the
functions only other kernel functions call; and plain Python in the module's interpreted
twin (:func:`gpusched.core.jit.interpreted`), which small runs use. Behaviour is selected by
integer codes (:data:`gpusched.core.state.KEY_FIFO` ...), never by passing jitted functions, so
that everything caches. Python calls only the functions compiled with :data:`_JIT` (the
entry points).

Time model
----------
Decisions happen only at slot boundaries ``k * slot_s``. Between two decision points
every job holding GPUs progresses exactly: a RUNNING job with ``r`` seconds of work
left at rate ``v`` finishes at ``t + r / v`` (a float, inside the slot), LOADING and
SAVING phases end at their exact times. GPUs freed inside a slot, and jobs submitted
inside it, are seen by the policy at the slot's end, the next decision point. The
kernel jumps straight to the next slot in which anything happens (an arrival, a
completion, a phase end, a Tiresias level crossing, a policy's wake-up timer).

Return codes of the loops: :data:`DONE`, :data:`LIMIT` (a buffer or step limit was
reached: call again), :data:`UNTIL` (the ``until_s`` horizon was reached),
:data:`STUCK` (jobs are left but no event will ever come) and negative codes for
broken invariants.
"""

from __future__ import annotations

import numpy as np

from gpusched.core.jit import by_ref, jit
from gpusched.core.state import (
    ASK,
    DONE,
    E_TIME,
    EPS,
    EV_FINISH,
    EV_PREEMPT,
    EV_REQUEUE,
    EV_START,
    F_ANSWER,
    F_ASK_ARG,
    F_EXTRA_GPU_S,
    F_NOW,
    F_RESIDUAL,
    F_SHARED_GPU_S,
    F_WAKE,
    FINISHED,
    FLAG_LOADING_IN_RQ,
    I_ANSWERED,
    I_ASK_JOB,
    I_CURSOR,
    I_DONE_HERE,
    I_EV_GPU_ROOM,
    I_EV_LOST,
    I_EV_ROOM,
    I_EVER_SHARED,
    I_EXTRA,
    I_FIRST_NEW,
    I_FREE_GPUS,
    I_N_DECISIONS,
    I_N_EV_GPUS,
    I_N_EVENTS,
    I_N_FINISHED,
    I_N_HELD,
    I_N_LINKED,
    I_N_PREEMPT,
    I_N_QUEUE,
    I_N_REJECTED,
    I_N_RUN,
    I_N_SORTED,
    I_N_TIMERS,
    I_N_TOUCHED,
    I_N_WAITING,
    I_NEXT_ARRIVAL,
    I_PHASE,
    I_SHARED_GPUS,
    JF_DRQ,
    JF_DWQ,
    JF_TAKEN,
    JF_WAITING,
    KEY_FIFO,
    KEY_LAS,
    KEY_LAZER,
    KEY_NONE,
    KEY_SJF,
    KEY_SRTF,
    LIMIT,
    LOADING,
    QUEUED,
    RUNNING,
    SAVING,
    STUCK,
    UNTIL,
)

#: Options of every kernel function. ``cache``: compiling takes seconds. ``nogil``: a
#: TUI thread drives the kernel. ``_nrt=False`` turns off Numba's reference counting:
#: the kernels allocate nothing (Python owns every array for the whole run), and with
#: it on, every call between kernel functions increfs and decrefs each of the ~40
#: arrays of the state tuple, which cost about half of every decision (full Philly
#: trace under tiresias: 1.86 s with it, 0.98 s without). A kernel that allocates an
#: array fails to compile under this option, which keeps the rule enforced.
_JIT = {"cache": True, "nogil": True, "_nrt": False}
#: Options of the functions only kernel functions call: no CPython or C wrapper. A
#: wrapper unboxes the state tuple's ~60 arrays and costs about a second of compile
#: time per function; without them, compiling every kernel on a first run took 48 s
#: instead of 91 s (each entry point Python calls is a thin function at the end).
_INNER = {**_JIT, "no_cpython_wrapper": True, "no_cfunc_wrapper": True}
#: ``ref(st)``: the entry points (``_JIT``) hand the inner functions the state by reference
#: (compiled: a pointer to the tuple in the entry's frame; interpreted: the tuple itself),
#: see :mod:`gpusched.core.stateref`
ref = by_ref(__name__)


# --- small bookkeeping helpers ---------------------------------------------------------


@jit(_INNER)
def _log(st, kind, j, t, arg):
    """Append an event to the log, if one is kept (see :mod:`gpusched.core.state`, ``EV_*``).

    Returns the row written, or -1 (no log, or full: counted in ``I_EV_LOST``, which the
    engine treats as a broken invariant; it flushes the log before it can fill).
    """
    n = st.sim_i[I_N_EVENTS]
    if n >= st.ev_t.shape[0]:
        if st.ev_t.shape[0] > 0:
            st.sim_i[I_EV_LOST] += 1
        return -1
    st.ev_t[n] = t
    st.ev_kind[n] = kind
    st.ev_job[n] = j
    st.ev_arg[n] = arg
    st.sim_i[I_N_EVENTS] = n + 1
    return n


@jit(_INNER)
def _log_start(st, j, t):
    """Log the start of job ``j`` with the GPUs it holds (the first ``job_n_gpus`` of its
    room: an elastic job's room may be larger)."""
    if st.ev_t.shape[0] == 0:
        return
    lo = st.job_alloc_off[j]
    g = st.job_n_gpus[j]
    off = st.sim_i[I_N_EV_GPUS]
    if off + g > st.ev_gpu.shape[0]:
        st.sim_i[I_EV_LOST] += 1
        return
    for k in range(g):
        st.ev_gpu[off + k] = st.alloc_gpu[lo + k]
    st.sim_i[I_N_EV_GPUS] = off + g
    _log(st, EV_START, j, t, off)


@jit(_INNER)
def _log_room(st):
    """True when the log (if kept) has room for one more decision point's events."""
    if st.ev_t.shape[0] == 0:
        return True
    return (
        st.ev_t.shape[0] - st.sim_i[I_N_EVENTS] >= st.sim_i[I_EV_ROOM]
        and st.ev_gpu.shape[0] - st.sim_i[I_N_EV_GPUS] >= st.sim_i[I_EV_GPU_ROOM]
    )


@jit(_INNER)
def _run_add(st, j, end):
    pos = st.sim_i[I_N_RUN]
    st.run[pos] = j
    st.run_end[pos] = end
    st.run_cross[pos] = np.nan
    st.job_run_pos[j] = pos
    st.sim_i[I_N_RUN] = pos + 1


@jit(_INNER)
def _run_remove(st, j):
    pos = st.job_run_pos[j]
    last_pos = st.sim_i[I_N_RUN] - 1
    last = st.run[last_pos]
    st.run[pos] = last
    st.run_end[pos] = st.run_end[last_pos]
    st.run_cross[pos] = st.run_cross[last_pos]
    st.job_run_pos[last] = pos
    st.job_run_pos[j] = -1
    st.sim_i[I_N_RUN] = last_pos


@jit(_INNER)
def _queue_push(st, j, now):
    nq = st.sim_i[I_N_QUEUE]
    st.queue[nq] = j
    st.job_queue_pos[j] = nq
    st.sim_i[I_N_QUEUE] = nq + 1
    st.job_status[j] = QUEUED
    st.job_enqueued[j] = now


@jit(_INNER)
def _assign(st, j, k, gpu):
    """Put job ``j``'s ``k``-th GPU slot on ``gpu``; False if the GPU is full."""
    n = st.gpu_n_jobs[gpu]
    if n >= st.gpu_job.shape[1]:
        return False
    st.gpu_job[gpu, n] = j
    st.gpu_n_jobs[gpu] = n + 1
    if n == 0:
        st.server_free[st.gpu_server[gpu]] -= 1
        st.sim_i[I_FREE_GPUS] -= 1
    else:
        st.sim_i[I_EXTRA] += 1
        st.sim_i[I_EVER_SHARED] = 1
        if n == 1:
            st.sim_i[I_SHARED_GPUS] += 1
    st.alloc_gpu[st.job_alloc_off[j] + k] = gpu
    return True


@jit(_INNER)
def _unseat(st, j, k):
    """Take job ``j`` off its ``k``-th GPU; return that GPU and how many jobs it held."""
    gpu = st.alloc_gpu[k]
    n = st.gpu_n_jobs[gpu]
    for s in range(n):
        if st.gpu_job[gpu, s] == j:
            st.gpu_job[gpu, s] = st.gpu_job[gpu, n - 1]
            st.gpu_job[gpu, n - 1] = -1
            break
    st.gpu_n_jobs[gpu] = n - 1
    st.alloc_gpu[k] = -1
    if n == 1:
        st.server_free[st.gpu_server[gpu]] += 1
        st.sim_i[I_FREE_GPUS] += 1
    return gpu, n


@jit(_INNER)
def _release(st, j):
    """Free every GPU held by job ``j`` (no GPU of it is shared: see :func:`_release_at`)."""
    for k in range(st.job_alloc_off[j], st.job_alloc_off[j + 1]):
        if st.alloc_gpu[k] >= 0:
            _unseat(st, j, k)


@jit(_INNER)
def _release_at(st, j, t):
    """Free every GPU held by job ``j`` at time ``t`` (s); partners left on them speed up then.

    The general form of :func:`_release`, for when some GPU is shared (``I_EXTRA`` > 0);
    the exclusive hot paths keep the short one.
    """
    if st.sim_i[I_EXTRA] == 0:
        _release(st, j)
        return
    for k in range(st.job_alloc_off[j], st.job_alloc_off[j + 1]):
        if st.alloc_gpu[k] < 0:
            continue
        gpu, n = _unseat(st, j, k)
        if n > 1:
            st.sim_i[I_EXTRA] -= 1
            if n == 2:
                st.sim_i[I_SHARED_GPUS] -= 1
            for s in range(n - 1):
                _rerate(st, st.gpu_job[gpu, s], t)


@jit(_INNER)
def _take_server(st, j, k, server, want):
    """Assign up to ``want`` idle GPUs of ``server`` to job ``j`` from slot ``k``."""
    taken = 0
    for gpu in range(st.server_gpu_off[server], st.server_gpu_off[server + 1]):
        if taken == want:
            break
        if st.gpu_n_jobs[gpu] == 0:
            _assign(st, j, k + taken, gpu)
            taken += 1
    return taken


@jit(_INNER)
def _place_consolidated(st, j, allow_spread):
    """Place job ``j`` on idle GPUs, consolidated first; False (nothing held) if impossible.

    The fewest servers win: a single server with room if there is one (best fit:
    the one with the fewest idle GPUs that still fit, lowest index on ties);
    otherwise, when ``allow_spread``, servers in decreasing order of idle GPUs
    (lowest index on ties) until the gang is complete.
    """
    g = st.job_n_gpus[j]
    if st.sim_i[I_FREE_GPUS] < g:
        return False
    n_servers = st.server_free.shape[0]
    best = -1
    best_free = 1 << 30
    for s in range(n_servers):
        f = st.server_free[s]
        if f >= g and f < best_free:
            best = s
            best_free = f
    if best >= 0:
        _take_server(st, j, 0, best, g)
        return True
    if not allow_spread:
        return False
    got = 0
    while got < g:
        top = -1
        top_free = 0
        for s in range(n_servers):
            if st.server_free[s] > top_free:
                top = s
                top_free = st.server_free[s]
        got += _take_server(st, j, got, top, g - got)
    return True


@jit(_INNER)
def _sync(st, j, t):
    """Bring holder ``j``'s accounting from ``job_seg_start`` up to time ``t`` (s).

    Training progress is recomputed from the anchor (:func:`_anchor`), not accumulated,
    so syncing at more or fewer moments never changes a bit of it.
    """
    s0 = st.job_seg_start[j]
    if not t > s0:
        return
    status = st.job_status[j]
    if status == LOADING:
        end = st.job_phase_end[j]
        if end <= t + EPS:
            st.job_load_spent_s[j] += end - s0
            s0 = end
            status = RUNNING
            st.job_status[j] = RUNNING
        else:
            st.job_load_spent_s[j] += t - s0
    if status == RUNNING:
        dt = t - st.job_anchor_t[j]
        st.job_executed[j] = st.job_anchor_exec[j] + dt
        st.job_attained[j] = st.job_anchor_att[j] + dt * st.job_n_gpus[j]
        st.job_remaining[j] = st.job_anchor_rem[j] - dt * st.job_rate[j]
        if st.job_shared[j]:
            st.job_shared_s[j] += t - s0
    elif status == SAVING:
        st.job_save_spent_s[j] += t - s0
    st.job_seg_start[j] = t


@jit(_INNER)
def _anchor(st, j, t):
    """Holder ``j`` trains at its current rate from time ``t`` (s) on, its accounting
    (synced) as it stands: progress at any later time is measured from here."""
    st.job_anchor_t[j] = t
    st.job_anchor_rem[j] = st.job_remaining[j]
    st.job_anchor_exec[j] = st.job_executed[j]
    st.job_anchor_att[j] = st.job_attained[j]


@jit(_INNER)
def _sync_all(st):
    """Bring every holder's accounting up to now (before Python reads the state)."""
    now = st.sim_f[F_NOW]
    for i in range(st.sim_i[I_N_RUN]):
        _sync(st, st.run[i], now)


@jit(_INNER)
def _end_time(st, j, begin):
    """Completion time of job ``j`` running its remaining work from ``begin`` (s)."""
    return begin + st.job_remaining[j] / st.job_rate[j]


@jit(_JIT)
def set_rate(state, j, rate):
    """Change holder ``j``'s solo progress rate from now on (performance models)."""
    st = ref(state)
    now = st.sim_f[F_NOW]
    _sync(st, j, now)  # at the old rate
    st.job_solo_rate[j] = rate
    st.job_rate[j] = np.nan  # forces _rerate to recompute the end
    _rerate(st, j, now)


@jit(_INNER)
def _slowdown(st, j):
    """``(xi, shared)``: the largest interference ratio over holder ``j``'s partners (1.0
    without any) and whether it has one; a gang runs at the pace of its slowest GPU."""
    slow = 1.0
    shared = 0
    row = st.job_kind[j]
    for k in range(st.job_alloc_off[j], st.job_alloc_off[j + 1]):
        gpu = st.alloc_gpu[k]
        if gpu < 0:
            continue
        for s in range(st.gpu_n_jobs[gpu]):
            p = st.gpu_job[gpu, s]
            if p != j:
                shared = 1
                slow = max(slow, st.xi[row, st.job_kind[p]])
    return slow, shared


@jit(_INNER)
def _rerate(st, j, t):
    """Recompute holder ``j``'s rate at time ``t`` (s): its solo rate over its slowdown.

    SJF-BSBF paper, eq. 5-6: while a GPU holds two jobs each runs at its solo iteration
    time times its interference ratio for that pair. Called the moment a partner starts
    or ends, so progress and completion times stay exact.
    """
    _sync(st, j, t)
    slow, shared = _slowdown(st, j)
    st.job_shared[j] = shared
    rate = st.job_solo_rate[j] / slow
    if rate == st.job_rate[j]:
        return
    st.job_rate[j] = rate
    status = st.job_status[j]
    if status == SAVING:
        return  # its next event is the save's end, whatever the rate
    begin = st.job_phase_end[j] if status == LOADING else t
    _anchor(st, j, max(begin, t))
    pos = st.job_run_pos[j]
    st.run_end[pos] = _end_time(st, j, max(begin, t))
    st.run_cross[pos] = np.nan


@jit(_INNER)
def _rerate_gpus_of(st, j, t):
    """Recompute the rate of job ``j`` and of every job sharing one of its GPUs."""
    for k in range(st.job_alloc_off[j], st.job_alloc_off[j + 1]):
        gpu = st.alloc_gpu[k]
        if gpu < 0:  # the unused room of an elastic job
            continue
        for s in range(st.gpu_n_jobs[gpu]):
            _rerate(st, st.gpu_job[gpu, s], t)


@jit(_INNER)
def _start_job(st, j, now):
    """Mark job ``j`` (its GPUs already assigned) as started at ``now``.

    It loads for ``job_load_s`` (holding its GPUs, making no progress), then trains.
    """
    st.job_wait_s[j] += now - st.job_enqueued[j]
    st.job_rate[j] = st.job_solo_rate[j]  # alone until _rerate_gpus_of says otherwise
    begin = now
    if st.job_load_s[j] > 0.0:
        st.job_status[j] = LOADING
        st.job_phase_end[j] = now + st.job_load_s[j]
        begin = st.job_phase_end[j]
    else:
        st.job_status[j] = RUNNING
        st.job_phase_end[j] = now  # training begins at once
    first = st.job_first_start[j]
    if first != first:  # NaN: never started (x != x, not np.isnan: the interpreted twin)
        st.job_first_start[j] = now
    st.job_last_start[j] = now
    st.job_seg_start[j] = now
    _anchor(st, j, begin)
    _run_add(st, j, _end_time(st, j, begin))
    if st.ev_t.shape[0] > 0:  # the event log (calls cost: the state tuple is large)
        _log_start(st, j, now)


@jit(_JIT)
def start_on(state, j, gpus, now):
    """Start queued job ``j`` on the given GPUs (validated by the caller); False if full."""
    st = ref(state)
    for k in range(gpus.shape[0]):
        if not _assign(st, j, k, gpus[k]):
            _release_at(st, j, now)
            return False
    _start_job(st, j, now)
    if st.sim_i[I_EXTRA] > 0:
        _rerate_gpus_of(st, j, now)
    return True


@jit(_INNER)
def _preempt(st, j, now):
    """Preempt job ``j``: it pauses and saves (keeping its GPUs) for ``job_save_s``, then requeues.

    A *futile* preemption (Lazer paper, Sec. 3.2, eq. 2): a job preempted before it
    trained any work since its last start has nothing new to checkpoint, so it releases
    its GPUs at once and pays no save; the load time it had spent is wasted (futile
    time, counted when it had a load time at all).
    """
    _sync(st, j, now)
    st.job_n_preempt[j] += 1
    st.sim_i[I_N_PREEMPT] += 1
    trained = st.job_status[j] == RUNNING and now > st.job_phase_end[j] + EPS
    if not trained:
        futile = st.job_load_s[j] > 0.0
        if futile:
            st.job_n_futile[j] += 1
            st.job_futile_s[j] += now - st.job_last_start[j]
        if st.ev_t.shape[0] > 0:
            _log(st, EV_PREEMPT, j, now, 1 if futile else 0)
        _release_at(st, j, now)
        _run_remove(st, j)
        _queue_push(st, j, now)
    elif st.job_save_s[j] > 0.0:
        if st.ev_t.shape[0] > 0:
            _log(st, EV_PREEMPT, j, now, 2)
        st.job_status[j] = SAVING
        st.job_phase_end[j] = now + st.job_save_s[j]
        pos = st.job_run_pos[j]
        st.run_end[pos] = st.job_phase_end[j]
        st.run_cross[pos] = np.inf
    else:
        if st.ev_t.shape[0] > 0:
            _log(st, EV_PREEMPT, j, now, 0)
        _release_at(st, j, now)
        _run_remove(st, j)
        _queue_push(st, j, now)


# --- time ------------------------------------------------------------------------------


@jit(_INNER)
def _event(st, i, end, t1, out_done, n_done, shared):
    """Handle the event of ``run[i]`` due at ``end`` (s): a save ends or the job finishes.

    ``shared``: some GPU holds two jobs (partners are re-rated). Returns the new count of
    completions written to ``out_done``.
    """
    j = st.run[i]
    _sync(st, j, end)
    if st.job_status[j] == SAVING:
        if st.ev_t.shape[0] > 0:
            _log(st, EV_REQUEUE, j, end, 0)
        if shared:
            _release_at(st, j, end)
        else:
            _release(st, j)
        _run_remove(st, j)
        _queue_push(st, j, end)
        return n_done
    # relative to the work, or to the float resolution of the time itself (huge times)
    scale = max(st.job_work[j], abs(end) * 1e-10)
    st.sim_f[F_RESIDUAL] = max(st.sim_f[F_RESIDUAL], abs(st.job_remaining[j]) / scale)
    st.job_remaining[j] = 0.0
    st.job_finish[j] = min(end, t1)
    st.job_status[j] = FINISHED
    if st.ev_t.shape[0] > 0:
        _log(st, EV_FINISH, j, st.job_finish[j], 0)
    if shared:
        _release_at(st, j, end)
    else:
        _release(st, j)
    _run_remove(st, j)
    st.sim_i[I_N_FINISHED] += 1
    if n_done < out_done.shape[0]:
        out_done[n_done] = j
    return n_done + 1


@jit(_INNER)
def _advance(st, t1, out_done):
    """Move the clock to ``t1``: finish every holder whose next event is due; return completions.

    Only jobs with an event in (now, t1] are touched: completion times are exact
    (float seconds), and a job's accounting is brought up to its event time. Finished
    job indices are written to ``out_done`` (as many as fit). While GPUs are shared, an
    event changes the partners' rates, so events are taken in time order
    (:func:`_advance_shared`); otherwise in any order.
    """
    t0 = st.sim_f[F_NOW]
    if t1 < t0 - EPS:
        return -1
    if st.sim_i[I_EXTRA] > 0:
        return _advance_shared(st, t0, t1, out_done)
    n_done = 0
    i = 0
    while i < st.sim_i[I_N_RUN]:
        if st.run_end[i] > t1 + EPS:
            i += 1
            continue
        # the swap-remove puts another job at position i: look at it next
        n_done = _event(st, i, st.run_end[i], t1, out_done, n_done, False)
    st.sim_f[F_NOW] = t1
    return n_done


@jit(_INNER)
def _advance_shared(st, t0, t1, out_done):
    """:func:`_advance` while some GPU holds two jobs: the earliest event first, and the
    shared GPU-time integrated between events."""
    n_done = 0
    t = t0
    while True:
        first = -1
        end = np.inf
        for i in range(st.sim_i[I_N_RUN]):
            if st.run_end[i] < end:
                end = st.run_end[i]
                first = i
        if first < 0 or end > t1 + EPS:
            break
        if end > t:
            st.sim_f[F_SHARED_GPU_S] += st.sim_i[I_SHARED_GPUS] * (end - t)
            st.sim_f[F_EXTRA_GPU_S] += st.sim_i[I_EXTRA] * (end - t)
            t = end
        n_done = _event(st, first, end, t1, out_done, n_done, True)
    if t1 > t:
        st.sim_f[F_SHARED_GPU_S] += st.sim_i[I_SHARED_GPUS] * (t1 - t)
        st.sim_f[F_EXTRA_GPU_S] += st.sim_i[I_EXTRA] * (t1 - t)
    st.sim_f[F_NOW] = t1
    return n_done


@jit(_INNER)
def _admit(st):
    """Queue every job submitted up to now; return how many arrived."""
    now = st.sim_f[F_NOW]
    n = st.job_submit.shape[0]
    k = st.sim_i[I_NEXT_ARRIVAL]
    first = k
    while k < n and st.job_submit[k] <= now + EPS:
        _queue_push(st, k, st.job_submit[k])
        k += 1
    st.sim_i[I_NEXT_ARRIVAL] = k
    return k - first


@jit(_INNER)
def las_level(attained, thresholds):
    """Tiresias queue level of a job with ``attained`` GPU-s (0 = highest priority)."""
    lvl = 0
    for thr in thresholds:
        if attained >= thr - 1e-6:
            lvl += 1
        else:
            break
    return lvl


@jit(_INNER)
def _crossing(st, j, now, thresholds):
    """Next time holder ``j`` reaches a Tiresias level threshold (inf if none), s."""
    status = st.job_status[j]
    if status == SAVING:
        return np.inf
    _sync(st, j, now)
    begin = st.job_phase_end[j] if st.job_status[j] == LOADING else now
    att = st.job_attained[j] - st.job_base_att[j]  # service since its last promotion
    lvl = las_level(att, thresholds)
    if lvl >= thresholds.shape[0]:
        return np.inf
    return begin + (thresholds[lvl] - att) / st.job_n_gpus[j]


@jit(_INNER)
def _next_event_time(st, cfg):
    """Earliest future event: arrival, completion, phase end, level crossing or wake-up, s."""
    now = st.sim_f[F_NOW]
    e = st.sim_f[F_WAKE]
    k = st.sim_i[I_NEXT_ARRIVAL]
    if k < st.job_submit.shape[0]:
        e = min(e, st.job_submit[k])
    n = st.sim_i[I_N_RUN]
    for i in range(n):
        e = min(e, st.run_end[i])
    if cfg.key == KEY_LAS and st.sim_i[I_N_QUEUE] > 0:
        # a level crossing can only reorder holders against waiting jobs: with an empty
        # queue the re-pack would change nothing, so it is not an event
        for i in range(n):
            c = st.run_cross[i]
            if c != c or c <= now + EPS:  # NaN: not computed yet
                c = _crossing(st, st.run[i], now, cfg.thresholds)
                st.run_cross[i] = c
            e = min(e, c)
        if cfg.starve > 0.0:  # a queued job's promotion is due (policies/tiresias.py: wake)
            for i in range(st.sim_i[I_N_QUEUE]):
                j = st.queue[i]
                a = st.job_attained[j] - st.job_base_att[j]
                if a > 0.0 and las_level(a, cfg.thresholds) > 0:
                    e = min(e, st.job_enqueued[j] + cfg.starve * (a / st.job_n_gpus[j]))
    return e


@jit(_INNER)
def _decision_time(e, slot_s, now):
    """The slot boundary at or after event time ``e`` and strictly after ``now``, s."""
    # the same absolute tolerance as arrivals (submit <= t + EPS counts as arrived)
    k = np.ceil((e - EPS) / slot_s)
    t = k * slot_s + 0.0  # + 0.0 turns -0.0 into 0.0
    if t <= now + EPS:
        t = (np.floor(now / slot_s + 1e-9) + 1.0) * slot_s
    return t


@jit(_INNER)
def _first_decision_time(st, cfg):
    """Decision point of the first arrival (inf for an empty trace), s."""
    if st.job_submit.shape[0] == 0:
        return np.inf
    return _decision_time(st.job_submit[0], cfg.slot_s, -np.inf)


@jit(_INNER)
def _step(st, cfg, out_done):
    """Advance to the next decision point and admit its arrivals (the Python-policy path).

    Returns ``(code, n_done, n_arrived)``: ``code`` is LIMIT when a decision is due,
    DONE when every job has finished, UNTIL at the horizon, STUCK when jobs are
    left but no event will come. ``out_done`` receives the jobs finished in this step.
    """
    n = st.job_submit.shape[0]
    now = st.sim_f[F_NOW]
    if now == -np.inf:
        t = _first_decision_time(st, cfg)
    else:
        if st.sim_i[I_N_FINISHED] + st.sim_i[I_N_REJECTED] == n:
            return DONE, 0, 0
        e = _next_event_time(st, cfg)
        if e == np.inf:
            return STUCK, 0, 0
        t = _decision_time(e, cfg.slot_s, now)
    if t == np.inf:
        return DONE, 0, 0
    if t > cfg.until_s:
        n_done = _advance(st, max(cfg.until_s, now), out_done)
        _sync_all(st)
        return UNTIL, n_done, 0
    n_done = _advance(st, t, out_done)
    if n_done < 0:
        return E_TIME, 0, 0
    n_arrived = _admit(st)
    st.sim_i[I_N_DECISIONS] += 1
    if cfg.key == KEY_NONE:
        _sync_all(st)  # a Python policy reads the accounting
    return LIMIT, n_done, n_arrived


# --- priority fill ---------------------------------------------------------------------


@jit(_INNER)
def _key_less(key, key2, a, b):
    """(key, key2, index) order; takes the two key arrays, not the whole state (cheap calls)."""
    ka = key[a]
    kb = key[b]
    if ka != kb:
        return ka < kb
    ka = key2[a]
    kb = key2[b]
    if ka != kb:
        return ka < kb
    return a < b


@jit(_INNER)
def _sort_jobs(st, c, lo, m):
    """Insertion sort of ``c[:m]`` by (key, key2, index), given ``c[:lo]`` is sorted.

    Near-linear when few entries are out of place.
    """
    key = st.job_key
    key2 = st.job_key2
    for i in range(max(lo, 1), m):
        x = c[i]
        k = i - 1
        while k >= 0 and _key_less(key, key2, x, c[k]):
            c[k + 1] = c[k]
            k -= 1
        c[k + 1] = x


@jit(_INNER)
def _trained_for(st, j, t):
    """Seconds holder ``j`` has trained since its anchor by time ``t``, as :func:`_sync`
    counts them (NaN when it is not training: queued, loading or saving)."""
    status = st.job_status[j]
    if status == RUNNING or (status == LOADING and st.job_phase_end[j] <= t + EPS):
        if t > st.job_seg_start[j]:
            return t - st.job_anchor_t[j]
    return np.nan


@jit(_INNER)
def _las_place(st, cfg, j, now):
    """Tiresias: bring job ``j``'s level and place in that level's list up to now.

    The simulator keeps one list per level. A job first joins the back of its level
    (level 0) at its submission; a holder whose attained service crossed T_k since the
    last re-pack joins the back of level k + 1 at the decision point of the crossing,
    t_x = now - (a_j - T_k) / g_j. Such places are times since the first submission
    (>= 0); after each re-pack :func:`_las_front` moves the holders to the front (< 0).
    """
    dt = _trained_for(st, j, now)
    att = st.job_anchor_att[j] + dt * st.job_n_gpus[j] if dt == dt else st.job_attained[j]
    att -= st.job_base_att[j]  # service since its last promotion (starvation)
    lvl = las_level(att, cfg.thresholds)
    t0 = st.job_submit[0]
    seq = st.job_seq[j]
    if seq != seq:  # NaN: in no list yet
        st.job_level[j] = lvl
        st.job_seq[j] = st.job_submit[j] - t0
    elif lvl > st.job_level[j]:
        cross = now - (att - cfg.thresholds[lvl - 1]) / st.job_n_gpus[j]
        at = np.ceil((cross - EPS) / cfg.slot_s) * cfg.slot_s + 0.0
        st.job_level[j] = lvl
        st.job_seq[j] = min(at, now) - t0


@jit(_INNER)
def _starve(st, cfg, now):
    """Tiresias' starvation rule (``policies/tiresias.py``, same arithmetic): a queued job
    below level 0 whose wait since it was queued reaches ``cfg.starve`` times its run time
    since its last promotion joins the back of level 0, and its service restarts. Any
    promotion re-keys the whole queue (its sorted prefix is no longer sorted)."""
    t0 = st.job_submit[0]
    back = np.nextafter(now - t0, np.inf)
    for i in range(st.sim_i[I_N_QUEUE]):
        j = st.queue[i]
        a = st.job_attained[j] - st.job_base_att[j]
        if not (a > 0.0 and las_level(a, cfg.thresholds) > 0):
            continue
        if st.job_enqueued[j] + cfg.starve * (a / st.job_n_gpus[j]) <= now + EPS:
            st.job_base_att[j] = st.job_attained[j]
            st.job_level[j] = 0
            st.job_seq[j] = back
            st.sim_i[I_N_SORTED] = 0


@jit(_INNER)
def _las_front(st):
    """Tiresias: the holders after a re-pack (``cand[:I_N_HELD]``, in order) go to the front.

    As the simulator moves the waiting jobs of every list behind the running ones after
    each pass. With n jobs, h holders and D decisions so far, the places are
    -D n - h .. -D n - 1: before every place handed out earlier.
    """
    held = st.sim_i[I_N_HELD]
    base = -float(st.sim_i[I_N_DECISIONS]) * st.job_submit.shape[0] - held
    for i in range(held):
        st.job_seq[st.cand[i]] = base + i


@jit(_INNER)
def _compute_keys(st, cfg, c, lo, m):
    """Priority keys of ``c[lo:m]`` at now (holders' remaining / attained as a sync to now
    would make them: the very values a Python policy reads, without writing them)."""
    now = st.sim_f[F_NOW]
    for i in range(lo, m):
        j = c[i]
        if cfg.key == KEY_FIFO:
            st.job_key[j] = st.job_submit[j]
            st.job_key2[j] = 0.0
        elif cfg.key == KEY_SJF:
            st.job_key[j] = st.job_work[j]
            st.job_key2[j] = 0.0
        elif cfg.key == KEY_SRTF or cfg.key == KEY_LAZER:
            dt = _trained_for(st, j, now)
            st.job_key[j] = (
                st.job_anchor_rem[j] - dt * st.job_rate[j] if dt == dt else st.job_remaining[j]
            )
            st.job_key2[j] = 0.0
        else:  # KEY_LAS: level, then place in the level's list
            _las_place(st, cfg, j, now)
            st.job_key[j] = st.job_level[j]
            st.job_key2[j] = st.job_seq[j]


@jit(_INNER)
def _compact_queue(st, n_sorted=0):
    """Drop from the queue the jobs that are no longer queued (after starts), keeping order.

    Returns how many survivors came from ``queue[:n_sorted]`` (a sorted prefix stays a
    sorted prefix of that length).
    """
    nq = 0
    sorted_kept = 0
    for i in range(st.sim_i[I_N_QUEUE]):
        j = st.queue[i]
        if st.job_status[j] == QUEUED:
            st.queue[nq] = j
            st.job_queue_pos[j] = nq
            nq += 1
            if i < n_sorted:
                sorted_kept += 1
    st.sim_i[I_N_QUEUE] = nq
    return sorted_kept


@jit(_INNER)
def _dequeue(st, jobs, n):
    """Take the first ``n`` of ``jobs`` (just started) out of the queue, each in O(1): the
    queue's last entry takes its place, so the queue's order changes. For the Python path
    of runs whose queue order nothing reads (jobs made of tasks: ``view.queued`` is sorted);
    the fused path keeps an ordered queue and :func:`_compact_queue`."""
    nq = st.sim_i[I_N_QUEUE]
    for i in range(n):
        j = jobs[i]
        pos = st.job_queue_pos[j]
        if pos < 0 or pos >= nq or st.queue[pos] != j:
            continue  # not in the queue
        nq -= 1
        last = st.queue[nq]
        st.queue[pos] = last
        st.job_queue_pos[last] = pos
        st.job_queue_pos[j] = -1
    st.sim_i[I_N_QUEUE] = nq
    st.sim_i[I_N_SORTED] = 0


@jit(_INNER)
def _repack_capacity(st):
    """GPUs a preemptive re-pack can hand out: all but those held by saving jobs."""
    cap = st.gpu_n_jobs.shape[0]
    for i in range(st.sim_i[I_N_RUN]):
        j = st.run[i]
        if st.job_status[j] == SAVING:
            cap -= st.job_n_gpus[j]
    return cap


@jit(_INNER)
def _apply_selection(st, cfg, n_sel, now):
    """The end of a preemptive re-pack: act on the selection ``st.order[:n_sel]``.

    Every holder (running or loading) not marked in ``st.job_mark`` is preempted; then the
    selected queued jobs are placed in selection order and the marks cleared. The
    holders afterwards are written to ``cand`` in that order (``I_N_HELD``), which the
    fused re-pack reads at the next decision. Returns how many jobs started.
    """
    i = 0
    while i < st.sim_i[I_N_RUN]:
        j = st.run[i]
        s = st.job_status[j]
        if (s == RUNNING or s == LOADING) and st.job_mark[j] == 0:
            _preempt(st, j, now)
            if st.job_status[j] == QUEUED:
                continue  # swap-removed from run: position i holds another job
        i += 1
    started = 0
    held = 0
    for i in range(n_sel):
        j = st.order[i]
        st.job_mark[j] = 0
        if st.job_status[j] == QUEUED and _place_consolidated(st, j, cfg.allow_spread):
            _start_job(st, j, now)
            started += 1
        s = st.job_status[j]
        if s == RUNNING or s == LOADING:
            st.cand[held] = j  # the holders, in this decision's order
            held += 1
    st.sim_i[I_N_HELD] = held
    return started


@jit(_INNER)
def fill(st, cfg, c, m, blocking, preemptive):
    """Give GPUs to the jobs in ``c[:m]`` in that order; return how many started.

    Non-preemptive: each queued job in order is placed if it fits (``blocking``:
    stop at the first that does not). Preemptive (the Tiresias simulator's
    re-pack): walk the order accumulating GPU demand against the cluster's
    capacity, select every job that fits in what is left, preempt the running
    jobs not selected, then place the selected queued jobs in order
    (:func:`_apply_selection`). The queue is then compacted. ``c`` may be the queue
    itself (non-preemptive) or ``cand``.
    """
    now = st.sim_f[F_NOW]
    started = 0
    if preemptive:
        cap = _repack_capacity(st)
        # select: \sum_{selected} g_j <= cap, greedily in order
        n_sel = 0
        for i in range(m):
            j = c[i]
            s = st.job_status[j]
            if s != QUEUED and s != RUNNING and s != LOADING:
                continue
            g = st.job_n_gpus[j]
            if g <= cap:
                st.job_mark[j] = 1
                st.order[n_sel] = j
                n_sel += 1
                cap -= g
            elif blocking:
                break
        started = _apply_selection(st, cfg, n_sel, now)
    else:
        for i in range(m):
            free = st.sim_i[I_FREE_GPUS]
            if free == 0:
                break
            j = c[i]
            if st.job_status[j] != QUEUED:
                continue
            if st.job_n_gpus[j] <= free and _place_consolidated(st, j, cfg.allow_spread):
                _start_job(st, j, now)
                started += 1
            elif blocking:
                break
    # the queue keeps only jobs still QUEUED
    if started > 0 or preemptive:
        _compact_queue(st, 0)
    return started


@jit(_JIT)
def check_order(st, order):
    """Check a Python policy's order before :func:`fill_order`; change nothing.

    Returns ``(problem, i)``: 0 when every entry is a job index, listed once, of a job
    that is queued or holds GPUs; else 1 (``order[i]`` is no job index), 2 (``order[i]``
    repeats an earlier entry) or 3 (``order[i]``'s job is pending, finished or rejected),
    for the first entry ``i`` that is wrong, kind 1 before 2 before 3.
    (``job_mark`` is the scratch: set here, cleared before returning.)
    """
    n = st.job_submit.shape[0]
    m = order.shape[0]
    for i in range(m):
        if order[i] < 0 or order[i] >= n:
            return 1, i
    dup = -1
    for i in range(m):
        j = order[i]
        if st.job_mark[j] != 0:
            dup = i
            break
        st.job_mark[j] = 1
    for k in range(m if dup < 0 else dup):
        st.job_mark[order[k]] = 0
    if dup >= 0:
        return 2, dup
    for i in range(m):
        s = st.job_status[order[i]]
        if s != QUEUED and s != RUNNING and s != LOADING and s != SAVING:
            return 3, i
    return 0, -1


@jit(_JIT)
def started_at(st, t, out):
    """Write to ``out`` the holders whose last start is at ``t`` (s), in ``run`` order;
    return how many."""
    m = 0
    for i in range(st.sim_i[I_N_RUN]):
        j = st.run[i]
        if st.job_last_start[j] == t:
            out[m] = j
            m += 1
    return m


@jit(_JIT)
def fill_order(state, cfg, order, blocking, preemptive):
    """Priority fill with an order computed in Python (see :func:`fill`)."""
    st = ref(state)
    m = order.shape[0]
    for i in range(m):
        st.cand[i] = order[i]
    return fill(st, cfg, st.cand, m, blocking, preemptive)


@jit(_INNER)
def _sort_queue(st, cfg):
    """Key the jobs appended to the queue since the last decision and insert them in order.

    A queued job's key never changes while it waits (its remaining work, attained
    service and place in its Tiresias list are frozen), so the sorted prefix stays sorted.
    """
    nq = st.sim_i[I_N_QUEUE]
    lo = min(st.sim_i[I_N_SORTED], nq)
    _compute_keys(st, cfg, st.queue, lo, nq)
    _sort_jobs(st, st.queue, lo, nq)
    st.sim_i[I_N_SORTED] = nq
    return nq


@jit(_INNER)
def _repack(st, cfg):
    """The preemptive re-pack of :func:`fill`, merging two sorted lists instead of one big one.

    Holders (running or loading) are kept in ``cand`` in the order of the last
    selection, re-keyed and re-sorted (near-linear); the queue is kept sorted. The merge
    walk selects jobs while \\sum g_j <= cap and stops as soon as nothing more can fit,
    so a long queue behind a full cluster costs nothing.
    Selection, preemptions and placements are those of ``fill`` on the merged order.
    """
    now = st.sim_f[F_NOW]
    if cfg.starve > 0.0:
        _starve(st, cfg, now)
    nq = _sort_queue(st, cfg)
    if nq == 0:
        # nothing waits: every holder still fits where it is; the re-pack changes nothing
        return 0
    cap = _repack_capacity(st)
    # in fused mode jobs start only here, so the last selection's holders are all of them
    h = 0
    for i in range(st.sim_i[I_N_HELD]):
        j = st.cand[i]
        s = st.job_status[j]
        if s == RUNNING or s == LOADING:
            st.cand[h] = j
            h += 1
    _compute_keys(st, cfg, st.cand, 0, h)
    _sort_jobs(st, st.cand, 0, h)
    a = 0
    b = 0
    n_sel = 0
    while cap > 0 and (a < h or b < nq):
        if b >= nq or (a < h and _key_less(st.job_key, st.job_key2, st.cand[a], st.queue[b])):
            j = st.cand[a]
            a += 1
        else:
            j = st.queue[b]
            b += 1
        g = st.job_n_gpus[j]
        if g <= cap:
            cap -= g
            st.job_mark[j] = 1
            st.order[n_sel] = j
            n_sel += 1
        elif cfg.blocking:
            break
    started = _apply_selection(st, cfg, n_sel, now)  # requeued jobs go after the sorted prefix
    if cfg.key == KEY_LAS:
        _las_front(st)
    # the survivors of the sorted prefix stay sorted, appended ones follow
    st.sim_i[I_N_SORTED] = _compact_queue(st, nq)
    return started


@jit(_INNER)
def _cycle_due(st, period):
    """Is a periodic policy's cycle due now? Keeps the next cycle in the wake-up timer.

    Mirrors :class:`gpusched.core.policy.Cycles` exactly (same tolerances): cycles fall
    on multiples of ``period``; the first is the first multiple at or after the first
    decision point; a cycle runs at the first decision point at or after its time; a
    period too small for the clock's resolution at ``now`` makes every decision point one.
    """
    now = st.sim_f[F_NOW]
    if now > period * 1e300:  # now / period would overflow: every decision point
        st.sim_f[F_WAKE] = np.nextafter(now, np.inf)
        return True
    k = now / period
    nxt = st.sim_f[F_WAKE]
    if nxt == np.inf:  # the first decision point
        nxt = np.ceil(k - 1e-9) * period
    if now < nxt - 1e-9:
        st.sim_f[F_WAKE] = nxt
        return False
    nxt = (np.floor(k + 1e-9) + 1.0) * period
    st.sim_f[F_WAKE] = nxt if nxt > now else np.nextafter(now, np.inf)
    return True


@jit(_INNER)
def _decide_fused(st, cfg):
    """One decision of a built-in priority policy, entirely in the kernel.

    The queue stays sorted by key between decisions (only newcomers are keyed and
    inserted), so a decision costs little more than the jobs it changes.
    """
    if cfg.period > 0.0:
        if not _cycle_due(st, cfg.period):
            return 0
        r = cfg.period / cfg.slot_s
        if st.sim_i[I_N_QUEUE] == 0 and r >= 1.0 and abs(r - np.rint(r)) <= 1e-9 * r:
            # nothing waits, and every cycle falls on a decision point: no cycle changes
            # anything before the next event; sleep until it (an infinite timer: the next
            # decision point finds the cycle again), as gpusched.core.policy.Cycles.sleep
            # where Cycles.can_sleep
            st.sim_f[F_WAKE] = np.inf
            return 0
    if cfg.preemptive:
        return _repack(st, cfg)
    nq = _sort_queue(st, cfg)
    if st.sim_i[I_FREE_GPUS] == 0 or nq == 0:
        return 0
    started = fill(st, cfg, st.queue, nq, cfg.blocking, False)
    st.sim_i[I_N_SORTED] = st.sim_i[I_N_QUEUE]
    return started


# --- Lazer's Alg. 1-2 (KEY_LAZER) --------------------------------------------------------
#
# The rule of policies/lazer.py's decide(), step for step (its docstring gives the reading
# of the paper); the two must give the same schedule (tests/test_lazer_fused.py). What a
# Python decision sees as one snapshot is kept here by marks: a job started or preempted at
# this decision point is taken (JF_TAKEN: no candidate for a later event of the point), and
# GPUs that a preemption released at once are blocked (gpu_link -2) until the point ends.
# X comes from the policy: the rule stops with ASK (I_ASK_JOB, F_ASK_ARG = p) and resumes
# the same arrival when called again with the answer in F_ANSWER.


@jit(_INNER)
def _link(st, gpu, value):
    """Set ``gpu_link[gpu]``, keeping the count of GPUs linked (not -1)."""
    if st.gpu_link[gpu] == -1 and value != -1:
        st.sim_i[I_N_LINKED] += 1
    elif st.gpu_link[gpu] != -1 and value == -1:
        st.sim_i[I_N_LINKED] -= 1
    st.gpu_link[gpu] = value


@jit(_INNER)
def _lz_free(st, gpu):
    """Is ``gpu`` free for a start at this decision point (idle, promised to none, not
    released here)?"""
    return st.gpu_n_jobs[gpu] == 0 and st.gpu_link[gpu] == -1


@jit(_INNER)
def _lz_n_free(st):
    """GPUs free for a start (see :func:`_lz_free`)."""
    if st.sim_i[I_N_LINKED] == 0:
        return st.sim_i[I_FREE_GPUS]
    n = 0
    for gpu in range(st.gpu_n_jobs.shape[0]):
        if _lz_free(st, gpu):
            n += 1
    return n


@jit(_INNER)
def _lz_server_free(st, s):
    n = 0
    for gpu in range(st.server_gpu_off[s], st.server_gpu_off[s + 1]):
        if _lz_free(st, gpu):
            n += 1
    return n


@jit(_INNER)
def _lz_take(st, j, k, s, want):
    """Assign up to ``want`` free GPUs of server ``s`` to job ``j`` from slot ``k``."""
    taken = 0
    for gpu in range(st.server_gpu_off[s], st.server_gpu_off[s + 1]):
        if taken == want:
            break
        if _lz_free(st, gpu):
            _assign(st, j, k + taken, gpu)
            taken += 1
    return taken


@jit(_INNER)
def _lz_touch(st, j):
    """Mark job ``j`` taken at this decision point."""
    st.job_flag[j] |= JF_TAKEN
    st.order[st.sim_i[I_N_TOUCHED]] = j
    st.sim_i[I_N_TOUCHED] += 1


@jit(_INNER)
def _lz_place_start(st, j, now):
    """Start ``j`` on free GPUs: the consolidated placement of :func:`_place_consolidated`
    over the GPUs free for a start (the policy's ``place_on``). Enough must be free."""
    if st.sim_i[I_N_LINKED] == 0:
        _place_consolidated(st, j, True)
    else:
        g = st.job_n_gpus[j]
        n_servers = st.server_free.shape[0]
        best = -1
        best_free = 1 << 30
        for s in range(n_servers):
            f = _lz_server_free(st, s)
            if f >= g and f < best_free:
                best = s
                best_free = f
        if best >= 0:
            _lz_take(st, j, 0, best, g)
        else:
            got = 0
            while got < g:
                top = -1
                top_free = 0
                for s in range(n_servers):
                    f = _lz_server_free(st, s)
                    if f > top_free:
                        top = s
                        top_free = f
                got += _lz_take(st, j, got, top, g - got)
    _start_job(st, j, now)
    _lz_touch(st, j)


@jit(_INNER)
def _lz_trained(st, k, now):
    """Has holder ``k`` trained since its last start (so a preemption makes it save)?"""
    s = st.job_status[k]
    return (s == RUNNING or s == LOADING) and now > st.job_phase_end[k] + EPS


@jit(_INNER)
def _lz_orchestrate(st, cfg, j, now):
    """Alg. 2 for job ``j``: -1 (no J_r), 0 (free GPUs suffice) or the size of J_r, whose
    jobs are then ``cand[:size]`` in orchestrator order (descending remaining duration,
    the later job first)."""
    g = st.job_n_gpus[j]
    idle = _lz_n_free(st)
    if g <= idle:
        return 0
    rem_j = st.job_remaining[j]
    loading_ok = (cfg.flags & FLAG_LOADING_IN_RQ) != 0
    m = 0
    for i in range(st.sim_i[I_N_RUN]):
        k = st.run[i]
        s = st.job_status[k]
        if s == LOADING and st.job_phase_end[k] > now + EPS:
            if not loading_ok:
                continue
        elif s != RUNNING and s != LOADING:
            continue  # saving
        if st.job_flag[k] & (JF_DRQ | JF_TAKEN):
            continue
        dt = _trained_for(st, k, now)  # the remaining a Python policy reads (synced)
        r = st.job_anchor_rem[k] - dt * st.job_rate[k] if dt == dt else st.job_remaining[k]
        if r > rem_j:  # Alg. 2 line 5
            st.job_key[k] = r
            st.cand[m] = k
            m += 1
    avail = idle
    n_sel = 0
    while avail < g and n_sel < m:  # lines 3-7: the longest first, until enough GPUs
        best = n_sel
        for t in range(n_sel + 1, m):
            a = st.cand[t]
            b = st.cand[best]
            if st.job_key[a] > st.job_key[b] or (st.job_key[a] == st.job_key[b] and a > b):
                best = t
        k = st.cand[best]
        st.cand[best] = st.cand[n_sel]
        st.cand[n_sel] = k
        avail += st.job_n_gpus[k]
        n_sel += 1
    if avail < g:
        return -1  # line 8
    return n_sel


@jit(_INNER)
def _lz_preempt_and_start(st, j, n_sel, now):
    """Alg. 1 line 5 / 10: preempt J_r (``cand[:n_sel]``) and start ``j`` on the free GPUs
    and then theirs (in J_r order, each job's lowest-numbered first); if a job of J_r
    saves, those GPUs are promised to ``j``, which starts when the saves have ended."""
    g = st.job_n_gpus[j]
    need = g
    for gpu in range(st.gpu_n_jobs.shape[0]):
        if need == 0:
            break
        if _lz_free(st, gpu):
            _link(st, gpu, j)
            need -= 1
    saves = False
    for t in range(n_sel):
        k = st.cand[t]
        if _lz_trained(st, k, now) and st.job_save_s[k] > 0.0:
            saves = True
        lo = st.job_alloc_off[k]
        hi = st.job_alloc_off[k + 1]
        while need > 0:  # its lowest-numbered GPUs not linked yet
            low = -1
            for a in range(lo, hi):
                gpu = st.alloc_gpu[a]
                if st.gpu_link[gpu] == -1 and (low < 0 or gpu < low):
                    low = gpu
            if low < 0:
                break
            _link(st, low, j)
            need -= 1
        for a in range(lo, hi):  # the rest is released here and not free until the end
            if st.gpu_link[st.alloc_gpu[a]] == -1:
                _link(st, st.alloc_gpu[a], -2)
    for t in range(n_sel):
        k = st.cand[t]
        _preempt(st, k, now)
        _lz_touch(st, k)
    if saves:
        st.job_flag[j] |= JF_WAITING
        st.wait_job[st.sim_i[I_N_WAITING]] = j
        st.sim_i[I_N_WAITING] += 1
    else:
        _lz_start_linked(st, j, now)


@jit(_INNER)
def _lz_start_linked(st, j, now):
    """Start ``j`` on the GPUs promised to it, lowest-numbered first."""
    k = 0
    for gpu in range(st.gpu_n_jobs.shape[0]):
        if st.gpu_link[gpu] == j:
            _link(st, gpu, -1)
            _assign(st, j, k, gpu)
            k += 1
    _start_job(st, j, now)
    _lz_touch(st, j)


@jit(_INNER)
def _lz_arrival(st, cfg, j, now):
    """Alg. 1 lines 1-7 for arrival ``j``; ASK when X is needed and not yet given."""
    n_sel = _lz_orchestrate(st, cfg, j, now)  # line 2
    if n_sel < 0:
        return 0  # line 3: WQ
    if n_sel == 0:
        _lz_place_start(st, j, now)
        return 0
    x = 0.0
    if cfg.asks:  # line 4
        if st.sim_i[I_ASK_JOB] == j and st.sim_i[I_ANSWERED] == 1:
            x = st.sim_f[F_ANSWER]
            st.sim_i[I_ASK_JOB] = -1
            st.sim_i[I_ANSWERED] = 0
        else:
            p = 0.0
            for t in range(n_sel):
                k = st.cand[t]
                if _lz_trained(st, k, now):
                    p = max(p, st.job_save_s[k])
            st.sim_i[I_ASK_JOB] = j
            st.sim_f[F_ASK_ARG] = p
            return ASK
    if x == 0.0:
        _lz_preempt_and_start(st, j, n_sel, now)  # line 5
        return 0
    st.job_flag[j] |= JF_DWQ  # lines 6-7
    for t in range(n_sel):
        k = st.cand[t]
        st.job_flag[k] |= JF_DRQ
        st.job_link[k] = j
    nt = st.sim_i[I_N_TIMERS]
    st.tmr_t[nt] = now + x
    st.tmr_job[nt] = j
    st.sim_i[I_N_TIMERS] = nt + 1
    return 0


@jit(_INNER)
def _lz_timer(st, cfg, j, now):
    """Alg. 1 lines 7-10: j leaves DWQ and its J_r DRQ; the orchestrator runs again."""
    st.job_flag[j] &= ~JF_DWQ
    for i in range(st.sim_i[I_N_RUN]):
        k = st.run[i]
        if st.job_flag[k] & JF_DRQ and st.job_link[k] == j:
            st.job_flag[k] &= ~JF_DRQ
            st.job_link[k] = -1
    n_sel = _lz_orchestrate(st, cfg, j, now)  # line 8
    if n_sel == 0:
        _lz_place_start(st, j, now)
    elif n_sel > 0:
        _lz_preempt_and_start(st, j, n_sel, now)  # line 10 (line 9: WQ)


@jit(_INNER)
def _lz_completion(st, cfg, now):
    """Alg. 1 lines 11-17: WQ by ascending remaining duration (ties: the earlier job) into
    the GPUs secured, first fit; this point's arrivals go through lines 1-10 instead."""
    nq = _sort_queue(st, cfg)
    secured = -1
    first_new = st.sim_i[I_FIRST_NEW]
    for i in range(nq):
        k = st.queue[i]
        if st.job_status[k] != QUEUED or k >= first_new:
            continue
        if st.job_flag[k] & (JF_DWQ | JF_WAITING | JF_TAKEN):
            continue
        if secured < 0:
            secured = _lz_n_free(st)  # line 12
        if secured == 0:
            break
        g = st.job_n_gpus[k]
        if g <= secured:  # line 15
            _lz_place_start(st, k, now)  # line 16
            secured -= g  # line 17


@jit(_INNER)
def _decide_lazer(st, cfg):
    """One decision point of Lazer (policies/lazer.py decide()), resumable: ASK stops it
    before an arrival's deferral and the next call continues from that arrival."""
    now = st.sim_f[F_NOW]
    if st.sim_i[I_PHASE] == 1:  # saves ended: promised starts, in the order promised
        w = 0
        for i in range(st.sim_i[I_N_WAITING]):
            j = st.wait_job[i]
            ready = True
            for gpu in range(st.gpu_n_jobs.shape[0]):
                if st.gpu_link[gpu] == j and st.gpu_n_jobs[gpu] != 0:
                    ready = False
                    break
            if ready:
                st.job_flag[j] &= ~JF_WAITING
                _lz_start_linked(st, j, now)
            else:
                st.wait_job[w] = j
                w += 1
        st.sim_i[I_N_WAITING] = w
        if st.sim_i[I_DONE_HERE]:
            _lz_completion(st, cfg, now)
        st.sim_i[I_PHASE] = 2
    while st.sim_i[I_CURSOR] < st.sim_i[I_NEXT_ARRIVAL]:  # arrivals, in submission order
        if _lz_arrival(st, cfg, st.sim_i[I_CURSOR], now) == ASK:
            return ASK
        st.sim_i[I_CURSOR] += 1
    while True:  # deferrals due, in timer order
        nt = st.sim_i[I_N_TIMERS]
        first = -1
        for i in range(nt):
            if st.tmr_t[i] <= now + EPS and (first < 0 or st.tmr_t[i] < st.tmr_t[first]):
                first = i
        if first < 0:
            break
        j = st.tmr_job[first]
        for i in range(first, nt - 1):  # keep the order the timers were set in
            st.tmr_t[i] = st.tmr_t[i + 1]
            st.tmr_job[i] = st.tmr_job[i + 1]
        st.sim_i[I_N_TIMERS] = nt - 1
        _lz_timer(st, cfg, j, now)
    for i in range(st.sim_i[I_N_TOUCHED]):  # the decision point ends
        st.job_flag[st.order[i]] &= ~JF_TAKEN
    st.sim_i[I_N_TOUCHED] = 0
    if st.sim_i[I_N_LINKED] > 0:
        for gpu in range(st.gpu_link.shape[0]):
            if st.gpu_link[gpu] == -2:
                _link(st, gpu, -1)
    st.sim_i[I_N_SORTED] = _compact_queue(st, min(st.sim_i[I_N_SORTED], st.sim_i[I_N_QUEUE]))
    wake = np.inf
    for i in range(st.sim_i[I_N_TIMERS]):
        wake = min(wake, st.tmr_t[i])
    st.sim_f[F_WAKE] = wake
    st.sim_i[I_PHASE] = 0
    return 0


@jit(_INNER)
def _record(st, cfg, k, tl):
    """Write timeline row ``k`` into the columns of ``tl``.

    Columns: time, busy GPUs, queued jobs, jobs holding GPUs, GPUs held by loading jobs,
    GPUs held by saving jobs (these two counted only when jobs have load or save
    times, ``cfg.phases``; zero otherwise), GPUs holding two or more jobs.
    """
    now = st.sim_f[F_NOW]
    tl.time_s[k] = now
    tl.busy_gpus[k] = st.gpu_n_jobs.shape[0] - st.sim_i[I_FREE_GPUS]
    tl.queued[k] = st.sim_i[I_N_QUEUE]
    tl.running[k] = st.sim_i[I_N_RUN]
    loading = 0
    saving = 0
    if cfg.phases:
        for i in range(st.sim_i[I_N_RUN]):
            j = st.run[i]
            s = st.job_status[j]
            if s == SAVING:
                saving += st.job_n_gpus[j]
            elif s == LOADING and st.job_phase_end[j] > now + EPS:
                loading += st.job_n_gpus[j]
    tl.loading_gpus[k] = loading
    tl.saving_gpus[k] = saving
    tl.shared_gpus[k] = st.sim_i[I_SHARED_GPUS]


@jit(_JIT)
def run_fused(state, cfg, tl, max_steps):
    """Run a built-in policy (``cfg.key``: every key but ``KEY_LAZER``) for up to
    ``max_steps`` decisions.

    Returns ``(rows, code)``: timeline rows written to ``tl`` (a
    :class:`~gpusched.core.state.Timeline`) from index 0, and a return code (LIMIT: call
    again to continue). Lazer's rule has its own entry, :func:`run_fused_lazer`, so that a
    run of any other policy neither compiles nor loads it (about 40 % of this path's
    compile time).
    """
    st = ref(state)
    dummy = st.cand[:0]  # no completions wanted; kernels allocate nothing (see _JIT)
    rows = 0
    limit = min(max_steps, tl.time_s.shape[0])
    while rows < limit:
        if st.ev_t.shape[0] > 0 and not _log_room(st):
            return rows, LIMIT  # the engine flushes the event log and calls again
        code, n_done, n_arrived = _step(st, cfg, dummy)
        if code != LIMIT:
            return rows, code
        _decide_fused(st, cfg)
        _record(st, cfg, rows, tl)
        rows += 1
    return rows, LIMIT


@jit(_JIT)
def run_fused_lazer(state, cfg, tl, max_steps):
    """:func:`run_fused` for Lazer's rule (``KEY_LAZER``, Alg. 1-2).

    Return code ASK as well: answer the rule's question (``I_ASK_JOB``) in ``F_ANSWER``,
    set ``I_ANSWERED``, and call again: the decision in progress resumes.
    """
    st = ref(state)
    dummy = st.cand[:0]
    rows = 0
    limit = min(max_steps, tl.time_s.shape[0])
    while rows < limit:
        if st.sim_i[I_PHASE] == 0:  # a new decision point (as in run_fused)
            if st.ev_t.shape[0] > 0 and not _log_room(st):
                return rows, LIMIT
            code, n_done, n_arrived = _step(st, cfg, dummy)
            if code != LIMIT:
                return rows, code
            st.sim_i[I_PHASE] = 1
            st.sim_i[I_FIRST_NEW] = st.sim_i[I_NEXT_ARRIVAL] - n_arrived
            st.sim_i[I_CURSOR] = st.sim_i[I_FIRST_NEW]
            st.sim_i[I_DONE_HERE] = 1 if n_done > 0 else 0
        if _decide_lazer(st, cfg) == ASK:
            return rows, ASK
        _record(st, cfg, rows, tl)
        rows += 1
    return rows, LIMIT


# --- entry points for Python callers ------------------------------------------------
#
# The kernel's own functions are compiled without a CPython wrapper (_INNER, see there).
# Python calls these thin entries (and the functions above decorated with _JIT); each
# forwards to the function of its name with a leading underscore, and is compiled only when
# Python first calls it.


@jit(_JIT)
def compact_queue(st, n_sorted):
    """Python's entry to :func:`_compact_queue`."""
    return _compact_queue(ref(st), n_sorted)


@jit(_JIT)
def dequeue(st, jobs, n):
    """Python's entry to :func:`_dequeue`."""
    _dequeue(ref(st), jobs, n)


@jit(_JIT)
def decision_time(e, slot_s, now):
    """Python's entry to :func:`_decision_time`."""
    return _decision_time(e, slot_s, now)


@jit(_JIT)
def first_decision_time(st, cfg):
    """Python's entry to :func:`_first_decision_time`."""
    return _first_decision_time(ref(st), cfg)


@jit(_JIT)
def next_event_time(st, cfg):
    """Python's entry to :func:`_next_event_time`."""
    return _next_event_time(ref(st), cfg)


@jit(_JIT)
def place_consolidated(st, j, allow_spread):
    """Python's entry to :func:`_place_consolidated`."""
    return _place_consolidated(ref(st), j, allow_spread)


@jit(_JIT)
def preempt(st, j, now):
    """Python's entry to :func:`_preempt`."""
    return _preempt(ref(st), j, now)


@jit(_JIT)
def record(st, cfg, k, tl):
    """Python's entry to :func:`_record`."""
    return _record(ref(st), cfg, k, tl)


@jit(_JIT)
def start_job(st, j, now):
    """Python's entry to :func:`_start_job`."""
    return _start_job(ref(st), j, now)


@jit(_JIT)
def step(st, cfg, out_done):
    """Python's entry to :func:`_step`."""
    return _step(ref(st), cfg, out_done)


@jit(_JIT)
def sync_all(st):
    """Python's entry to :func:`_sync_all`."""
    return _sync_all(ref(st))
