"""The engine: owns the state and the clock, calls the policy, applies and checks actions.

One round (a decision point): advance every job to the slot boundary (kernel) ->
admit arrivals -> ``policy.decide(view, now)`` -> validate and apply the decision ->
record the timeline. Built-in priority policies that declare :class:`~gpusched.core.policy.Fused`
run the whole loop inside the kernel instead (mode ``"fused"``); ``mode="python"``
forces the readable ``decide`` path, which the tests compare with the fused one.

Naming follows SimPy: :meth:`Engine.step` runs one decision point, :meth:`Engine.run`
runs to the end (or ``until``), :meth:`Engine.peek` tells when the next one is.
The engine never imports the TUI; :meth:`Engine.snapshot` hands out copies.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import numpy as np

from gpusched.core.checks import check_invariants
from gpusched.core.dispatch import TaskDispatch
from gpusched.core.events import EventLog, new_log
from gpusched.core.jit import KERNEL_MODULE, SWITCH, Kernels, compiled, is_cached, state_handle
from gpusched.core.jobs import JobTable
from gpusched.core.ledger import RESOURCES, Ledger
from gpusched.core.lifecycle import GangLifecycle
from gpusched.core.memory import trim_heap
from gpusched.core.policy import (
    Allocate,
    Decision,
    Dispatch,
    Fused,
    HostPS,
    Note,
    Preempt,
    Reject,
    Start,
    call_policy,
    fused_spec,
    policy_summary,
)
from gpusched.core.result import RunResult, Snapshot
from gpusched.core.roles import Roles
from gpusched.core.state import (
    ASK,
    F_ANSWER,
    F_ASK_ARG,
    F_NOW,
    F_WAKE,
    I_ANSWERED,
    I_ASK_JOB,
    I_EVER_SHARED,
    I_N_DECISIONS,
    I_N_FINISHED,
    I_N_PREEMPT,
    I_N_QUEUE,
    I_N_REJECTED,
    I_N_RUN,
    I_NEXT_ARRIVAL,
    KEY_LAZER,
    KEY_NONE,
    LIMIT,
    LOADING,
    QUEUED,
    REJECTED,
    RUNNING,
    SAVING,
    STUCK,
    UNTIL,
    KernelConfig,
    Timeline,
    new_state,
    new_timeline,
)
from gpusched.core.tasks import TaskBook
from gpusched.core.view import View, _frozen
from gpusched.errors import InvariantError, PolicyError
from gpusched.io.cluster import ClusterSpec

_CHUNK = 8192  # decision points per kernel call in fused mode (progress granularity)
#: values of ``Engine(kernels=...)``
KERNELS = ("auto", "compiled", "interpreted")
_NONE = _frozen(np.empty(0, dtype=np.int32))  # no job arrived / finished at a decision point
#: consecutive decision points at which a policy starts nothing while every job has
#: arrived, none holds a GPU and some wait: past this the run can make no progress
MAX_IDLE_DECISIONS = 10_000
#: slot boundaries ``k * slot`` are exact floats for k up to this (with margin below 2^53);
#: a run that would go past it (a policy's wake-up, a trace's horizon) is refused
MAX_EXACT_SLOTS = 2.0**50


class Engine(GangLifecycle, Roles, TaskDispatch):
    """Replay ``jobs`` on ``cluster`` under ``policy``.

    Parameters
    ----------
    jobs
        The job table (submission order).
    cluster
        The cluster spec.
    policy
        A policy instance (see :class:`gpusched.core.policy.Policy`).
    slot_s
        Slot length, s (> 0).
    until_s
        Stop at this simulated time, s; jobs not finished by then are reported as
        unfinished.
    mode
        ``"auto"`` (fused when the policy declares it), ``"fused"`` or ``"python"``.
    params, seed
        Recorded in the result's manifest.
    perf
        Optional performance model: an object with ``rate(job, gpus, config) -> float``
        giving the solo progress rate (s of ideal work per s) of a job on the GPUs it
        was just given with its configuration (``Start.config``, None by default), e.g.
        slower when a pipeline job is spread over servers. The engine applies it at
        every (re)start. Needs the Python path, since the fused kernel runs every job
        at its static rate. Optional: ``check_start(job, gpus, config, partners) ->
        str | None`` refuses a start (a reason), asked once per group of the job's GPUs
        that hold the same other jobs (``partners``, as ``(job, config)``); and
        ``interference() -> (kind, xi)`` gives each job's interference kind and the xi
        matrix for jobs sharing a GPU.
    load_s, save_s
        Optional per-job load time after each start and pause-and-save time after each
        preemption, s (default 0): the job holds its GPUs meanwhile and makes no progress.
    notice
        Optional context-manager factory wrapped around loading the kernels of the
        chosen path (the CLI's "compiling simulation kernels" note on a first run).
    roles
        Optional roles of jobs placed by roles on multi-resource machines (a job model's,
        see :mod:`gpusched.core.ledger`): ``mask``, ``worker``, ``ps``, ``max_workers`` and
        ``rate(job, workers, ps)``. When some job is one, the engine keeps the resource
        ledger, the policy must declare ``places_roles = True`` and act with
        :class:`~gpusched.core.policy.Allocate` / :class:`~gpusched.core.policy.Reject`.
    tasks, layout
        Optional: the jobs are made of tasks (``jobs`` then holds one row per task), a job
        model's task set (``parent``, ``first``, ``parents``, ``type_name``, ``gang``,
        ``rate(job, zeta)``), on the cluster's typed workers (a
        :class:`~gpusched.core.tasks.WorkerLayout`, whose ``cluster`` must be ``cluster``). The
        engine then keeps a :class:`~gpusched.core.tasks.TaskBook` and enforces its rules; the
        policy must declare ``runs_tasks = True``.
    events
        Keep the event log (:mod:`gpusched.core.events`): every start, preemption, save end,
        completion, rejection and placement, with the policy's reasons; the result's
        ``extra["events"]`` holds its table. Off by default: a run without it pays nothing.
    kernels
        ``"compiled"`` (Numba), ``"interpreted"`` (the same kernels as plain Python, see
        :mod:`gpusched.core.jit`) or ``"auto"``: compiled when this process has loaded them
        already, else interpreted until the run proves long (:data:`gpusched.core.jit.SWITCH`).
        The results are the same either way.
    """

    def __init__(
        self,
        jobs: JobTable,
        cluster: ClusterSpec,
        policy: Any,
        *,
        slot_s: float = 1.0,
        until_s: float = np.inf,
        mode: str = "auto",
        params: dict[str, Any] | None = None,
        seed: int = 0,
        perf: Any = None,
        load_s: np.ndarray | None = None,
        save_s: np.ndarray | None = None,
        notice: Callable[[], AbstractContextManager[Any]] | None = None,
        roles: Any = None,
        tasks: Any = None,
        layout: Any = None,
        events: bool = False,
        kernels: str = "auto",
    ) -> None:
        if not slot_s > 0 or not np.isfinite(slot_s):
            raise ValueError(f"slot must be a positive number of seconds, got {slot_s}")
        self.jobs = jobs
        self.cluster = cluster
        self.policy = policy
        self.name = str(getattr(policy, "name", type(policy).__name__))
        self.params = dict(params or {})
        self.seed = seed
        self.slot_s = float(slot_s)
        fused = call_policy(self.name, "fused", None, fused_spec, policy)
        if fused is not None and not isinstance(fused, Fused):
            raise PolicyError(
                f"policy '{self.name}': fused() must return a Fused or None, "
                f"got {type(fused).__name__}"
            )
        if mode == "fused" and fused is None:
            given = " with these parameters" if self.params else ""
            raise PolicyError(
                f"policy '{self.name}' has no fused kernel path{given}: run it with --engine "
                "python or auto (its decide() at each decision)"
            )
        if mode not in ("auto", "fused", "python"):
            raise ValueError(f"unknown engine mode {mode!r}")
        if mode == "fused" and (perf is not None or tasks is not None):
            raise PolicyError(
                "a placement-aware performance model or jobs made of tasks need the python "
                "engine path"
            )
        self.perf = perf
        plain = perf is None and tasks is None
        self.mode = "fused" if fused is not None and mode != "python" and plain else "python"
        kind, xi = self._interference(jobs)
        #: the event log (None: not kept)
        self.events: EventLog | None = None
        ev_size = (0, 0)
        if events:
            slots = int(cluster.server_gpus().sum()) * int(cluster.gpu_capacity)
            self.events, ev_size = new_log(slots, len(jobs), roles is not None)
        max_gang = cluster.n_gpus if cluster.allow_spread else int(cluster.server_gpus().max())
        room = self._setup_elastic(perf, np.asarray(jobs.n_gpus, dtype=np.int64), max_gang)
        lazer = self.mode == "fused" and fused is not None and fused.key == KEY_LAZER
        #: the kernels this run loads or compiles (see gpusched.core.warmup): its engine
        #: path, or "lazer" for Lazer's rule on the fused path (its own fused entry)
        self.path = "lazer" if lazer else self.mode
        self.state = new_state(
            jobs.submit_s,
            jobs.n_gpus,
            jobs.work_s,
            cluster.server_gpus(),
            gpu_capacity=cluster.gpu_capacity,
            load_s=load_s,
            save_s=save_s,
            kind=kind,
            xi=xi,
            events=ev_size,
            alloc_size=room,
            rule_queues=lazer,
        )
        st = self.state
        self._setup_progress(len(jobs))
        if self.events is not None:
            self.events.arm(st)
        if not (np.isfinite(st.job_load_s).all() and np.isfinite(st.job_save_s).all()):
            raise ValueError("load and save times must be finite")
        if (st.job_load_s < 0).any() or (st.job_save_s < 0).any():
            raise ValueError("load and save times must be >= 0")
        self.cfg = KernelConfig(
            slot_s=self.slot_s,
            until_s=float(until_s),
            key=fused.key if (fused and self.mode == "fused") else KEY_NONE,
            preemptive=bool(fused.preemptive) if fused else False,
            blocking=bool(fused.blocking) if fused else False,
            allow_spread=bool(cluster.allow_spread),
            thresholds=np.asarray(fused.thresholds if fused else (), dtype=np.float64),
            phases=bool((st.job_load_s > 0).any() or (st.job_save_s > 0).any())
            or tasks is not None,  # a task holding its worker while its data ships is loading
            period=float(fused.period) if (fused and self.mode == "fused") else 0.0,
            starve=float(fused.starve) if (fused and self.mode == "fused") else 0.0,
            flags=int(fused.flags) if (fused and self.mode == "fused") else 0,
            asks=bool(fused.asks) if (fused and self.mode == "fused") else False,
        )
        if kernels not in KERNELS:
            raise ValueError(f"unknown kernels {kernels!r}: expected one of {', '.join(KERNELS)}")
        self._done_buf = np.zeros(max(len(jobs), 1), dtype=np.int32)
        self._started_buf = np.zeros(max(len(jobs), 1), dtype=np.int32)
        self._tl_buf = new_timeline(0)  # the python path's chunk being filled
        self._notice = notice
        #: the kernels this run calls, bound to its state (see Kernels); interpreted until use_compiled
        self.k: Any = Kernels(
            self.state, "run_fused_lazer" if self.path == "lazer" else "run_fused"
        )
        #: "auto" while the run may still move to the compiled kernels (see _maybe_compile)
        from gpusched.core import warmup  # (it imports this module)

        self._auto = kernels == "auto" and not warmup.loaded(self.path)
        self._interp_s = 0.0  # s spent on the interpreted kernels
        self._cold: bool | None = None  # compiled kernels missing from Numba's cache?
        #: the compile this run waits for while it goes on interpreted (see _maybe_compile)
        self.compiling: Any = None
        done = self._done_buf if self.mode == "python" else None
        if kernels != "interpreted" and self.k.use_native(self.cfg, self._tl_buf, done):
            self._auto = False  # compiled ahead of time: loaded at once (gpusched.core.aot)
        else:
            if self._auto and len(jobs) > SWITCH.max_jobs:
                self._cold = not self._compiled_cached()
                self._auto = self._cold
                if self._cold:
                    self._compile_in_background()
            if kernels == "compiled" or (kernels == "auto" and not self._auto):
                self._use_compiled(notice if self._cold is not False else None)
            else:
                self.k.use_interpreted()
        #: the configuration each started job carries (Start.config), for its lifetime
        self._config: dict[int, Any] = {}
        self.view = View(
            self.state,
            cluster,
            self.slot_s,
            policy_name=self.name,
            knows_duration=bool(getattr(policy, "knows_duration", False)),
            configs=self._config,
        )
        self.view.perf = perf
        self._tl: list[Timeline] = []  # full timeline chunks
        self._tl_rows = 0
        self._delays: list[float] = []
        self._code = LIMIT
        self._idle = 0  # consecutive decisions that could make no progress (see _check_progress)
        self._wall = 0.0
        #: the policy's last Decision (python path), for viewers
        self.last_decision: Decision | None = None
        #: starts waiting for saves to end: job -> its GPUs (see _apply_start)
        self._pending: dict[int, np.ndarray] = {}
        #: the resource ledger of jobs placed by roles (None: a GPU-index run)
        self.ledger: Ledger | None = None
        self.roles = roles
        self._ledger_rows: list[np.ndarray] = []  # used resources per timeline row
        self._setup_ledger(roles)
        #: the record of tasks, for jobs made of tasks (None otherwise)
        self.book: TaskBook | None = None
        self._tier_rows: list[tuple[int, int]] = []  # busy edge and cloud workers per row
        self._setup_tasks(tasks, layout)
        prepare = getattr(policy, "prepare", None)
        if prepare is not None:
            call_policy(self.name, "prepare", None, prepare, jobs, cluster)

    # --- stepping ----------------------------------------------------------------------

    @property
    def now(self) -> float:
        """Current simulated time, s (-inf before the first decision point)."""
        return float(self.state.sim_f[F_NOW])

    @property
    def elastic(self) -> bool:
        """Jobs are elastic gangs: a job's GPU count may change from stint to stint."""
        return self._elastic is not None

    @property
    def finished(self) -> bool:
        """True once the run has ended (all jobs done, horizon reached, or stuck)."""
        return self._code != LIMIT

    def peek(self) -> float:
        """Simulated time of the next decision point, s (inf when none is left)."""
        st = self.state
        if self.finished:
            return np.inf
        if st.sim_f[F_NOW] == -np.inf:
            return float(self.k.first_decision_time(self.cfg))
        if st.sim_i[I_N_FINISHED] + st.sim_i[I_N_REJECTED] == len(self.jobs):
            return np.inf
        e = self.k.next_event_time(self.cfg)
        return np.inf if e == np.inf else float(self.k.decision_time(e, self.slot_s, self.now))

    def step(self, n: int = 1) -> bool:
        """Run up to ``n`` decision points; return False once the run has ended."""
        t0 = time.perf_counter()
        c0 = time.thread_time() if self._auto else 0.0
        if self.mode == "fused":
            self._run_fused(n)
        else:
            for _ in range(n):
                if self.finished:
                    break
                self._step_python()
        spent = time.perf_counter() - t0
        self._wall += spent
        if self._auto and not self.finished:
            # CPU time, not wall: on a busy machine the compile slows as much as the run
            self._maybe_compile(time.thread_time() - c0)
        return not self.finished

    @property
    def kernels(self) -> str:
        """The kernels the run calls now: ``"compiled"`` or ``"interpreted"``."""
        return "compiled" if self.k.compiled else "interpreted"

    def _use_compiled(self, notice: Callable[[], AbstractContextManager[Any]] | None) -> None:
        from gpusched.core.warmup import warm_up

        with notice() if notice is not None else nullcontext():
            warm_up(self.path)  # no-op when loaded (and in the warm-up's own engines)
            self.k.use_compiled(self.cfg, self._tl_buf, self._done_buf, self.mode == "python")
        self._auto = False

    def _maybe_compile(self, spent: float) -> None:
        """Move to the compiled kernels when the rest of the run would take longer
        interpreted than loading them (see :class:`gpusched.core.jit.Switch`); ``spent`` is
        the CPU time of the last step. When they are not in Numba's cache yet, they are
        compiled in another process while the run goes on, and the run moves once that
        process is done (see :mod:`gpusched.core.background`)."""
        self._interp_s += spent
        if self.compiling is not None:
            ready = self.compiling.poll()
            if ready is None:
                return  # still compiling: go on interpreted
            if ready:
                self._cold = False
                self._use_compiled(None)  # from the cache now
            else:
                self._auto = False  # the compile failed: end the run interpreted
            return
        if self._interp_s < SWITCH.min_s:
            return
        st = self.state
        n = max(len(self.jobs), 1)
        # progress: the mean of the jobs arrived and the jobs done (done alone stays 0 for
        # a while when the first jobs are long, which would project an endless run)
        done = (st.sim_i.item(I_N_FINISHED) + st.sim_i.item(I_N_REJECTED)) / n
        progress = (done + st.sim_i.item(I_NEXT_ARRIVAL) / n) / 2
        left = np.inf if progress == 0 else self._interp_s * (1 - progress) / progress
        if left <= SWITCH.load_s and self._interp_s < SWITCH.load_s:
            return
        if self._cold is None:
            self._cold = not self._compiled_cached()
        if self._cold:
            self._compile_in_background()
            return
        self._use_compiled(None)

    def _background_state(self) -> bool | str | None:
        if self.compiling is None:
            return None
        ready = self.compiling.poll()
        return "running" if ready is None else ready

    def _compile_in_background(self) -> None:
        from gpusched.core import background

        self.compiling = background.start(self.path)

    def _compiled_cached(self) -> bool:
        """Are this path's compiled kernels in Numba's cache (or loaded)?"""
        module = compiled(KERNEL_MODULE)
        st, cfg = state_handle(self.state), self.cfg
        if self.mode == "fused":
            return is_cached(getattr(module, self.k.fused_entry), (st, cfg, new_timeline(1), 1))
        return is_cached(module.step, (st, cfg, self._done_buf))

    def run(self, progress: Callable[[float, int, int], None] | None = None) -> RunResult:
        """Run to the end (or ``until_s``) and check the invariants.

        Parameters
        ----------
        progress
            Called now and then with (simulated time s, jobs finished, jobs total).
        """
        while not self.finished:
            if self.mode == "fused":
                self.step(SWITCH.chunk if self._auto else _CHUNK)
            else:
                self.step(256)
            if progress is not None:
                progress(self.now, int(self.state.sim_i[I_N_FINISHED]), len(self.jobs))
        return self.result()

    def _run_fused(self, n: int) -> None:
        st = self.state
        while n > 0 and not self.finished:
            if self._tl_rows == len(self._tl_buf.time_s):  # the chunk being filled is full
                if self._tl_rows:
                    self._tl.append(self._tl_buf)
                self._tl_buf = new_timeline(_CHUNK)
                self._tl_rows = 0
            at = self._tl_rows
            size = min(n, _CHUNK - at)
            rows, code = self.k.run_fused(self.cfg, Timeline(*(b[at:] for b in self._tl_buf)), size)
            if self.events is not None:
                self.events.ensure_room(st)
            self._tl_rows += rows
            if code == ASK:  # the rule's question; its decision resumes at the next call
                self._answer()
                n -= rows
                continue
            n -= max(rows, 1)
            self._set_code(code)

    def _answer(self) -> None:
        """Answer a fused rule's question with the policy's ``answer(view, now, job, arg)``
        (see :attr:`gpusched.core.policy.Fused.asks`)."""
        st = self.state
        now = self.now
        j = int(st.sim_i[I_ASK_JOB])
        hook = getattr(self.policy, "answer", None)
        if hook is None:
            raise PolicyError(f"policy '{self.name}': its fused rule asks, but it has no answer()")
        x = call_policy(
            self.name, "answer", now, hook, self.view, now, j, float(st.sim_f[F_ASK_ARG])
        )
        if isinstance(x, bool) or not isinstance(x, int | float | np.floating | np.integer):
            raise self._fail(j, now, f"answer() must return a number, got {x!r}")
        if not (np.isfinite(x) and x >= 0):
            raise self._fail(j, now, f"answer() must return a finite number >= 0, got {x!r}")
        st.sim_f[F_ANSWER] = float(x)
        st.sim_i[I_ANSWERED] = 1

    def _set_code(self, code: int) -> None:
        if code < 0:
            raise InvariantError(f"kernel reported invariant violation code {code} at t={self.now}")
        if code == STUCK:
            left = len(self.jobs) - int(
                self.state.sim_i[I_N_FINISHED] + self.state.sim_i[I_N_REJECTED]
            )
            raise PolicyError(
                f"policy '{self.name}' left {left} job(s) waiting with nothing running and "
                f"no wake-up at t={self.now:.6g} s: the run can never finish"
            )
        self._code = code

    def _step_python(self) -> None:
        st = self.state
        sim_i = st.sim_i
        first_arrival = sim_i.item(I_NEXT_ARRIVAL)
        events = self.events
        if events is not None:
            events.ensure_room(st)
        code, n_done, n_arrived = self.k.step(self.cfg, self._done_buf)
        if events is not None:
            events.ensure_room(st)
        if self.ledger is not None:
            for j in self._done_buf[:n_done].tolist():
                self.ledger.release(j, float(st.job_finish[j]))
        if self.book is not None:  # in finish order: a job's PS goes with its last chunk
            done = self._done_buf[:n_done]
            for j in done[np.argsort(st.job_finish[done], kind="stable")].tolist():
                self.book.released(j, float(st.job_finish[j]))
        if code != LIMIT:
            self._set_code(code)
            return
        arrived = (
            np.arange(first_arrival, first_arrival + n_arrived, dtype=np.int32)
            if n_arrived
            else _NONE
        )
        now = st.sim_f.item(F_NOW)
        if self._pending:
            self._honour_pending(now)
        if self._levels is not None:
            self._rerate_due(now)  # rates that change with progress (see core.sharing)
        view, policy = self.view, self.policy
        view.refresh(arrived, self._done_buf[:n_done].copy() if n_done else _NONE)
        if self._pending or view.pending.size:  # no array per decision when none wait
            view.pending = _frozen(np.fromiter(self._pending, dtype=np.int32))
        t0 = time.perf_counter()
        decision = call_policy(self.name, "decide", now, policy.decide, view, now)
        self._delays.append(time.perf_counter() - t0)
        self.last_decision = decision
        st.sim_f[F_WAKE] = np.inf
        wake = getattr(policy, "wake", None)
        if wake is None:
            self._apply(decision, now)
        else:
            # the queue and the holders change in a decision only by starts (the queue
            # shrinks, the holders grow) and preemptions (counted): while these three
            # counts stand, so do the view's queued and running
            before = (sim_i.item(I_N_QUEUE), sim_i.item(I_N_RUN), sim_i.item(I_N_PREEMPT))
            self._apply(decision, now)
            if before != (sim_i.item(I_N_QUEUE), sim_i.item(I_N_RUN), sim_i.item(I_N_PREEMPT)):
                view.invalidate()
            w = call_policy(self.name, "wake", now, wake, view, now)
            if w is not None:
                self._set_wake(self._as_time(w, "wake() returned", now), now)
        if self._levels is not None:
            self._milestone_wake()
        if self.ledger is not None and np.isfinite(self.cfg.until_s):
            # jobs placed by roles may wait for room until the horizon (then unfinished)
            st.sim_f[F_WAKE] = min(st.sim_f[F_WAKE], self.cfg.until_s + self.slot_s)
        self._check_progress(now)
        if self._tl_rows == len(self._tl_buf.time_s):
            if self._tl_rows:
                self._tl.append(self._tl_buf)
            self._tl_buf = new_timeline(_CHUNK)
            self._tl_rows = 0
        self.k.record(self.cfg, self._tl_rows, self._tl_buf)
        self._tl_rows += 1
        if self.ledger is not None:
            why = self.ledger.check()
            if why:
                raise InvariantError(f"at t={now:.6g} s: {why}")
            self._ledger_rows.append(self.ledger.used.sum(axis=0))
        if self.book is not None:
            cloud = self.book.cloud_busy
            self._tier_rows.append((int(self._tl_buf.busy_gpus[self._tl_rows - 1]) - cloud, cloud))

    # --- applying a decision -----------------------------------------------------------

    def _check_progress(self, now: float) -> None:
        """Stop a policy that keeps waking up while the run can make no progress.

        With every job arrived, no job holding GPUs and jobs waiting, only the policy
        can move the run on; a policy that answers wake-up after wake-up without
        starting anything would loop forever, its timeline growing. A run whose policy
        waited it past :data:`MAX_EXACT_SLOTS` slots is stopped too: beyond, slot
        boundaries are no longer exact and the clock would stall.
        """
        st = self.state
        sim_i = st.sim_i
        stalled = (
            sim_i.item(I_N_RUN) == 0
            and sim_i.item(I_N_QUEUE) > 0
            and sim_i.item(I_NEXT_ARRIVAL) == len(self.jobs)
        )
        self._idle = self._idle + 1 if stalled else 0
        if now > MAX_EXACT_SLOTS * self.slot_s:  # (the trace alone cannot get here)
            raise self._fail(
                None,
                now,
                f"the run went past the last time its clock holds exactly "
                f"({MAX_EXACT_SLOTS * self.slot_s:.3g} s: 2^50 slots of {self.slot_s:g} s), "
                "waiting on the policy's wake-ups; check its parameters",
            )
        if self._idle > MAX_IDLE_DECISIONS:
            raise self._fail(
                None,
                now,
                f"made no progress over {MAX_IDLE_DECISIONS:,} decisions: "
                f"{int(st.sim_i[I_N_QUEUE])} job(s) wait, nothing runs, no job is left to "
                "arrive, and the policy keeps asking to be woken without starting any",
            )

    def _apply(self, decision: Any, now: float) -> None:
        st = self.state
        if not isinstance(decision, Decision):
            raise self._fail(
                None, now, f"decide() must return a Decision, got {type(decision).__name__}"
            )
        if not isinstance(decision.actions, list | tuple):
            raise self._fail(
                None,
                now,
                f"Decision.actions must be a list of Start/Preempt, got "
                f"{type(decision.actions).__name__}",
            )
        preemptive, blocking = decision.preemptive, decision.blocking
        if type(preemptive) is not bool or type(blocking) is not bool:
            for flag, value in (("preemptive", preemptive), ("blocking", blocking)):
                if type(value) is not bool and not isinstance(value, np.bool_):
                    raise self._fail(
                        None, now, f"Decision.{flag} must be True or False, got {value!r}"
                    )
        if self.ledger is not None:
            self._check_room(decision.actions, now)
        log = self.events
        since = 0
        started = False  # a Start left its job in the kernel's queue until compact_queue
        tasks = self.book is not None  # (started tasks leave the queue by dequeue)
        self._n_deq = 0
        for action in decision.actions:
            kind = type(action)
            if kind is Dispatch:  # the commonest action of task runs, which has no reason
                self._apply_dispatch(action, now)  # type: ignore[arg-type]
                continue
            reason = getattr(action, "reason", None)
            if reason is not None and not isinstance(reason, str):
                raise self._fail(
                    None, now, f"{type(action).__name__}.reason must be a str, got {reason!r}"
                )
            if log is not None and reason:
                since = log.logged(st)
            if kind is Start and tasks and reason is None:
                self._apply_task_start(action, now)  # type: ignore[arg-type]
                started = True
                continue
            if isinstance(action, Note):
                j = self._check_job(action.job, now)
                if log is not None and reason:
                    log.note(st, now, "note", j, reason)
                continue
            if isinstance(action, Start):
                if tasks:
                    self._apply_task_start(action, now)
                else:
                    self._apply_start(action, now)
                started = True
            elif isinstance(action, Preempt):
                if started:  # the job may have started in this decision: queue it once
                    self._drop_started()
                    started = False
                self._apply_preempt(action, now)
            elif isinstance(action, Dispatch):
                self._apply_dispatch(action, now)
            elif isinstance(action, HostPS):
                self._apply_host_ps(action, now)
            elif isinstance(action, Allocate):
                if started:  # it may pause a job started in this decision
                    self.k.compact_queue(0)
                self._apply_allocate(action, now)
                started = True
            elif isinstance(action, Reject):
                self._apply_reject(action, now)
            else:
                raise self._fail(None, now, f"unknown action {action!r}")
            if log is not None and reason:
                log.reason(st, since, now, int(action.job), reason)
        if decision.actions:
            self._drop_started()  # once: drop the jobs the Starts took out of the queue
        if decision.order is not None and self.ledger is not None:
            raise self._fail(
                None, now, "gives an order, but jobs placed by roles are started with Allocate"
            )
        if decision.order is not None and self.book is not None:
            raise self._fail(
                None, now, "gives an order, but tasks are started on their workers with Start"
            )
        if decision.order is not None:
            self._apply_order(decision.order, blocking, preemptive, now)
        if decision.wake_at is not None:
            self._set_wake(self._as_time(decision.wake_at, "Decision.wake_at", now), now)
        if self.perf is not None and (decision.actions or decision.order is not None):
            self._apply_perf(now)  # (a decision that starts nothing changes no rate)
        if self.book is not None:
            no_ps = self.book.after_decision(now)
            if no_ps:
                raise self._fail(
                    None,
                    now,
                    f"job '{self.book.job_id[no_ps[0]]}' has tasks on workers but no parameter "
                    "server (eq. 2e): give it one with HostPS",
                )

    def _drop_started(self) -> None:
        """Take the jobs this decision started out of the kernel's queue: tasks by
        ``dequeue`` (O(1) each; their queue order is read by nothing), others by
        ``compact_queue`` (keeping the order)."""
        if self.book is not None:
            self.k.dequeue(self._deq, self._n_deq)
            self._n_deq = 0
        else:
            self.k.compact_queue(0)

    def _apply_order(self, given: Any, blocking: bool, preemptive: bool, now: float) -> None:
        """Fill the GPUs greedily in the order ``given`` (Decision.order), after checking it."""
        order = given
        if not (  # the common case: already what the kernel takes
            type(order) is np.ndarray
            and order.dtype == np.int32
            and order.ndim == 1
            and order.flags.c_contiguous
        ):
            try:
                order = np.asarray(given)
            except (ValueError, TypeError):
                order = np.asarray([[None]], dtype=object)
            if order.ndim != 1 or (order.size and order.dtype.kind not in "iu"):
                raise self._fail(None, now, "order must be a 1-D array of job indices")
            order = np.ascontiguousarray(order, dtype=np.int32)
        problem, at = self.k.check_order(order)
        if problem == 1:
            raise self._fail(None, now, f"unknown job index {int(order[at])} in order")
        if problem == 2:
            raise self._fail(None, now, "order lists a job twice")
        if problem == 3:
            j = int(order[at])
            raise self._status_problem(j, now, (QUEUED, RUNNING, LOADING, SAVING)) or (
                self._fail(j, now, "bad")
            )
        self.k.fill_order(self.cfg, order, bool(blocking), bool(preemptive))

    def _set_wake(self, w: float, now: float) -> None:
        if not w > now:
            raise self._fail(None, now, f"asked to wake at {w!r} s, which is not after now")
        sim_f = self.state.sim_f
        if w < sim_f[F_WAKE]:
            sim_f[F_WAKE] = w

    # --- results -----------------------------------------------------------------------

    def _stopped_at(self) -> float:
        now = self.now
        if np.isfinite(now):
            return now
        return float(self.jobs.submit_s[0]) if len(self.jobs) else 0.0

    def stop(self) -> None:
        """End the run now (as ``until_s`` would): jobs left are reported as unfinished."""
        if not self.finished:
            self._code = UNTIL

    def timeline(self) -> dict[str, np.ndarray]:
        """The timeline so far: time (s), busy GPUs, queued jobs, jobs holding GPUs,
        GPUs held by loading and by saving jobs, and GPUs holding two or more jobs."""
        if len(self._tl) + (self._tl_rows > 0) > 1:
            # one chunk from now on, the rows of the chunk being filled moved into it (the
            # next row starts a new one), joined a column at a time: one copy of the
            # timeline is held, not two (memory: 1M jobs, 2M rows, 60 MB each)
            parts: list[list[Any]] = [list(c) for c in self._tl]
            if self._tl_rows:
                parts.append([b[: self._tl_rows] for b in self._tl_buf])
                self._tl_buf = new_timeline(0)
                self._tl_rows = 0
            self._tl = []
            cols = []
            many = len(parts) > 2  # (not a viewer's read: one chunk and the rows since)
            for k in range(len(Timeline._fields)):
                cols.append(np.concatenate([p[k] for p in parts]))
                for p in parts:
                    p[k] = None
                if many:
                    trim_heap()  # the column's chunks (small blocks the allocator keeps)
            self._tl = [Timeline(*cols)]
        if self._tl:
            tl = self._tl[0]._asdict()  # (the arrays themselves: the caller must not write them)
        else:
            tl = {
                k: b[: self._tl_rows].copy()
                for k, b in zip(Timeline._fields, self._tl_buf, strict=True)
            }
        if self.ledger is not None:  # resources held by role jobs, per resource
            held = np.asarray(self._ledger_rows).reshape(-1, len(RESOURCES))
            for r, name in enumerate(RESOURCES):
                tl[f"held_{name}"] = held[:, r]
        if self.book is not None:  # busy workers per tier
            rows = np.asarray(self._tier_rows, dtype=np.int64).reshape(-1, 2)
            tl["busy_edge"] = rows[:, 0]
            tl["busy_cloud"] = rows[:, 1]
        return tl

    def sync(self) -> None:
        """Bring every running job's accounting (remaining, executed, attained) up to now."""
        if np.isfinite(self.now):
            self.k.sync_all()

    def snapshot(self) -> Snapshot:
        """Copies of the state a viewer draws."""
        self.sync()
        st = self.state
        return Snapshot(
            now=self.now,
            n_jobs=len(self.jobs),
            n_finished=int(st.sim_i[I_N_FINISHED]),
            job_status=st.job_status.copy(),
            gpu_job=st.gpu_job.copy(),
            queued=st.queue[: st.sim_i[I_N_QUEUE]].copy(),
            running=st.run[: st.sim_i[I_N_RUN]].copy(),
            timeline=self.timeline(),
        )

    def result(self) -> RunResult:
        """Check the invariants and package the run."""
        self.sync()
        tl = self.timeline()
        extra: dict[str, Any] = {}
        if self.ledger is not None:
            self.ledger.settle(self.now if np.isfinite(self.now) else 0.0)
            why = self.ledger.check()
            if why:
                raise InvariantError(why)
            ran = ~np.isnan(self.state.job_first_start)
            if (ran & (self.state.job_status == REJECTED)).any():
                raise InvariantError("a rejected job ran")
            extra["ledger"] = {
                "resources": list(RESOURCES),
                "held_s": self.ledger.held_s.tolist(),
                "capacity": self.ledger.capacity.sum(axis=0).tolist(),
            }
        if self.book is not None:
            book = self.book
            book.ledger.settle(self.now if np.isfinite(self.now) else 0.0)
            lay = book.layout
            placed = book.bound >= 0
            cloud = np.zeros(book.bound.shape[0], dtype=bool)
            cloud[placed] = lay.server_cloud[lay.worker_server[book.bound[placed]]]
            extra["tasks"] = {
                "parent": book.parent,
                "first": book.first,
                "parents": book.tasks.parents,
                "worker": book.bound.copy(),
                "cloud": cloud,
                "transfer_s": book.transfer_s.copy(),
                "n_migrations": book.n_migrations.copy(),
                "migrate_s": book.migrate_s.copy(),
                "n_cloud_workers": int(book.view.cloud_workers.shape[0]),
                "zeta": book.zeta.copy(),
                "n_edge_workers": int(book.view.edge_workers.shape[0]),
                "ps_held_s": float(book.ledger.held_s[0]),
            }
        if self.events is not None:
            end = self.now if np.isfinite(self.now) else self._stopped_at()
            extra["events"] = self.events.table(self.state, self.jobs.job_id, end)
        held = self.held_gpu_s()
        if held is not None:  # elastic gangs: GPU-s held per job (their sizes varied)
            extra["held_gpu_s"] = held
        hook = getattr(self.policy, "summary", None)
        if hook is not None:  # the policy's own summary keys (e.g. prediction accuracy)
            extra["policy_summary"] = policy_summary(
                self.name, call_policy(self.name, "summary", None, hook)
            )
        hook = getattr(self.policy, "notes", None)
        if hook is not None:  # the policy's own notes on the run (printed; in the manifest)
            notes = call_policy(self.name, "notes", None, hook) or ()
            if not isinstance(notes, list | tuple):
                raise PolicyError(
                    f"policy '{self.name}': notes() must return a list of strings, got "
                    f"{type(notes).__name__}"
                )
            extra["policy_notes"] = [str(n) for n in notes]
        check_invariants(
            self.state,
            tl,
            self.cluster.gpu_capacity,
            stopped=self._code == UNTIL,
            constant_rate=(  # chunks re-rate when their job first reaches the edge
                self.perf is None
                and self.ledger is None
                and self.book is None
                and not self.state.sim_i[I_EVER_SHARED]
            ),
        )
        return RunResult(
            jobs=self.jobs,
            cluster=self.cluster,
            policy_name=self.name,
            params=self.params,
            seed=self.seed,
            slot_s=self.slot_s,
            mode=self.mode,
            state=self.state,
            timeline=tl,
            wall_s=self._wall,
            stopped_at=self._stopped_at() if self._code == UNTIL else None,
            sched_delay_s=np.asarray(self._delays) if self.mode == "python" else None,
            extra={
                "n_decisions": int(self.state.sim_i[I_N_DECISIONS]),
                "perf": type(self.perf).__name__ if self.perf is not None else None,
                "kernels": self.kernels,  # the ones that ended the run
                # ran interpreted because Numba's cache lacks the compiled kernels
                "uncompiled": self.kernels == "interpreted" and self._cold is True,
                # compiled in the background during the run: None (not), True (done, in
                # the cache), False (failed) or "running" (still, after the run)
                "background_compile": self._background_state(),
                **extra,
            },
        )
