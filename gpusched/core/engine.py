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

import numbers
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpusched.core.events import EventLog, new_log
from gpusched.core.jit import SWITCH, compiled, interpreted, is_cached, load_cached
from gpusched.core.jobs import JobTable
from gpusched.core.ledger import RESOURCES, Ledger, LedgerView, capacities
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
)
from gpusched.core.state import (
    F_NOW,
    F_RESIDUAL,
    F_WAKE,
    FINISHED,
    I_EVER_SHARED,
    I_N_DECISIONS,
    I_N_FINISHED,
    I_N_PREEMPT,
    I_N_QUEUE,
    I_N_REJECTED,
    I_N_RUN,
    I_NEXT_ARRIVAL,
    KEY_LAS,
    KEY_NONE,
    LIMIT,
    LOADING,
    PENDING,
    QUEUED,
    REJECTED,
    RUNNING,
    SAVING,
    STATUS_NAMES,
    STUCK,
    UNTIL,
    XI_DEFAULT,
    KernelConfig,
    SimState,
    Timeline,
    new_state,
    new_timeline,
)
from gpusched.core.tasks import TaskBook
from gpusched.core.view import View, _frozen
from gpusched.errors import InvariantError, PolicyError, TraceError, show_name
from gpusched.io.cluster import ClusterSpec

_CHUNK = 8192  # decision points per kernel call in fused mode (progress granularity)
_KERNEL = "gpusched.core.kernel"  #: the kernel module (compiled, or its interpreted twin)
#: values of ``Engine(kernels=...)``
KERNELS = ("auto", "compiled", "interpreted")
_NONE = _frozen(np.empty(0, dtype=np.int32))  # no job arrived / finished at a decision point
#: consecutive decision points at which a policy starts nothing while every job has
#: arrived, none holds a GPU and some wait: past this the run can make no progress
MAX_IDLE_DECISIONS = 10_000


@dataclass(slots=True)
class Snapshot:
    """Copies of what a viewer needs at one moment (safe to hand to another thread)."""

    now: float
    n_jobs: int
    n_finished: int
    job_status: np.ndarray
    gpu_job: np.ndarray
    queued: np.ndarray
    running: np.ndarray
    timeline: dict[str, np.ndarray]


@dataclass(slots=True)
class RunResult:
    """Everything a finished (or stopped) run produced; :mod:`gpusched.results.metrics` reads it."""

    jobs: JobTable
    cluster: ClusterSpec
    policy_name: str
    params: dict[str, Any]
    seed: int
    slot_s: float
    mode: str
    state: SimState
    timeline: dict[str, np.ndarray]
    wall_s: float
    stopped_at: float | None
    sched_delay_s: np.ndarray | None
    extra: dict[str, Any] = field(default_factory=dict)


class _Kernels:
    """The kernels one run calls: the interpreted twin's plain functions or the compiled ones.

    :meth:`use_interpreted` takes the plain functions of :mod:`gpusched.core.kernel`'s
    interpreted twin (see :mod:`gpusched.core.jit`); nothing imports Numba. :meth:`use_compiled`
    takes its Numba dispatchers, and binds the ones the Python path calls to their compiled
    entry points for this run: the dispatcher types every argument at every call, which for
    the state tuple's ~60 arrays costs 13-27 us a call, several calls per decision point,
    against about 1.5 us for the compiled entry point itself. The engine knows the types
    (the state, its config and timeline are fixed for the run; jobs are ``int``, times
    ``float``, GPU lists ``int32``), so it asks the dispatcher once for the entry point of
    those types (loading or compiling it as a call would) and calls that. Every call below
    must pass exactly these types (``compact_queue`` its second argument explicitly).
    Without the JIT (``NUMBA_DISABLE_JIT=1``) the plain functions are used.
    """

    #: kernels the Python path calls (bound when compiled)
    PYTHON_PATH = (
        "step record compact_queue start_on start_job place_consolidated preempt set_rate "
        "fill_order check_order started_at"
    ).split()
    #: kernels called a few times per run (left to the dispatcher)
    OTHERS = ("run_fused", "first_decision_time", "next_event_time", "decision_time", "sync_all")

    def __init__(self) -> None:
        self.compiled = False
        self.use_interpreted()

    def use_interpreted(self) -> None:
        """Call the plain Python functions of the kernel's interpreted twin."""
        module = interpreted(_KERNEL)
        for name in self.PYTHON_PATH + list(self.OTHERS):
            setattr(self, name, getattr(module, name))
        self.compiled = False

    def use_compiled(
        self, st: SimState, cfg: KernelConfig, tl: Timeline, done: np.ndarray, python: bool
    ) -> None:
        """Call the compiled kernels (loaded from Numba's cache, or compiled), the Python
        path's (if ``python``) bound to these types."""
        import numba
        from numba import types

        module = compiled(_KERNEL)
        typeof: Callable[[Any], Any] = numba.typeof
        S, C = typeof(st), typeof(cfg)
        i, f, b = types.int64, types.float64, types.boolean
        gpus = typeof(np.empty(0, np.int32))
        if not python:  # loaded now, without Numba's slower way of a first call
            load_cached(module.run_fused, (S, C, typeof(tl), i))
        load_cached(module.sync_all, (S,))
        for name in self.OTHERS:
            setattr(self, name, getattr(module, name))
        self.compiled = True
        if not python:
            return

        def bind(name: str, *sig: Any) -> None:
            fn = getattr(module, name)
            if not hasattr(fn, "compile"):  # NUMBA_DISABLE_JIT
                setattr(self, name, fn)
                return
            load_cached(fn, sig)
            setattr(self, name, fn.compile(sig))  # the entry point loaded, or compiled now

        bind("step", S, C, typeof(done))
        bind("record", S, C, i, typeof(tl))
        bind("compact_queue", S, i)
        bind("start_on", S, i, gpus, f)
        bind("start_job", S, i, f)
        bind("place_consolidated", S, i, b)
        bind("preempt", S, i, f)
        bind("set_rate", S, i, f)
        bind("fill_order", S, C, gpus, b, b)
        bind("check_order", S, gpus)
        bind("started_at", S, f, gpus)


class Engine:
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
            raise PolicyError(f"policy '{self.name}' has no fused kernel path for these parameters")
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
        )
        st = self.state
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
        )
        if kernels not in KERNELS:
            raise ValueError(f"unknown kernels {kernels!r}: expected one of {', '.join(KERNELS)}")
        self._done_buf = np.zeros(max(len(jobs), 1), dtype=np.int32)
        self._started_buf = np.zeros(max(len(jobs), 1), dtype=np.int32)
        self._tl_buf = new_timeline(0)  # the python path's chunk being filled
        self._notice = notice
        #: the kernels this run calls (see _Kernels); interpreted until use_compiled
        self.k: Any = _Kernels()
        #: "auto" while the run may still move to the compiled kernels (see _maybe_compile)
        self._auto = kernels == "auto" and self.mode not in _warm
        self._interp_s = 0.0  # s spent on the interpreted kernels
        self._cold: bool | None = None  # compiled kernels missing from Numba's cache?
        if self._auto and len(jobs) > SWITCH.max_jobs:
            self._cold = not self._compiled_cached()
            self._auto = self._cold
        if kernels == "compiled" or (kernels == "auto" and not self._auto):
            self._use_compiled(notice if self._cold is not False else None)
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

    def _setup_ledger(self, roles: Any) -> None:
        """Keep the resource ledger when some job is placed by roles (DESIGN.md,
        "Multi-resource machines and elastic jobs"); refuse what cannot run."""
        places = bool(getattr(self.policy, "places_roles", False))
        mask = None if roles is None else np.asarray(roles.mask, dtype=bool)
        if mask is None or not mask.any():
            if places and len(self.jobs):
                raise PolicyError(
                    f"policy '{self.name}' allocates workers and parameter servers, but no "
                    "job of this trace is placed by roles (num_gpus 0 with the "
                    "parameter-server columns)"
                )
            return
        name = show_name(self.jobs.source or "<trace>")
        if not mask.all():
            raise TraceError(
                f"{name}: {int(mask.sum())} job(s) are placed by roles (num_gpus 0) and "
                f"{int((~mask).sum())} are gangs on GPU indices; a run holds one kind only"
            )
        if not places:
            raise PolicyError(
                f"policy '{self.name}' places gangs on GPU indices, but the {int(mask.sum())} "
                f"jobs of {name} are placed by roles (workers and parameter servers, "
                "num_gpus 0): use a policy that allocates them (fifo-ps, drf, dorm, oasis, "
                "pd-ors)"
            )
        self._refuse_phases("jobs placed by roles (--load-s/--save-s must be 0)")
        self.ledger = Ledger(capacities(self.cluster), roles.worker, roles.ps, roles.max_workers)
        self.view.ledger = LedgerView(self.ledger, mask)

    def _refuse_phases(self, what: str) -> None:
        """Load and save phases are modelled for gang jobs only: refuse them for ``what``."""
        st = self.state
        if (st.job_load_s > 0).any() or (st.job_save_s > 0).any():
            raise PolicyError(f"load and save phases are not modelled for {what}")

    def _setup_tasks(self, tasks: Any, layout: Any) -> None:
        """Keep the task book when the jobs are made of tasks (DESIGN.md, "Tasks, typed
        workers and tiers"); refuse a policy that cannot run them."""
        runs = bool(getattr(self.policy, "runs_tasks", False))
        needs = bool(getattr(self.policy, "needs_tasks", False))
        if tasks is None:
            if needs and len(self.jobs):
                raise PolicyError(
                    f"policy '{self.name}' schedules jobs made of data chunks on typed workers, "
                    "but this trace has none (rows with the 'chunks' column)"
                )
            return
        if not runs:
            raise PolicyError(
                f"policy '{self.name}' places gangs on GPUs, but the jobs of "
                f"{show_name(self.jobs.source or '<trace>')} are made of data chunks on typed "
                "workers: use a policy that runs them (a-online, a-online-e, srtf, tiresias-l, "
                "batchsche)"
            )
        self._refuse_phases(
            "jobs made of tasks (--load-s/--save-s must be 0; shipping a chunk's data is the load)"
        )
        self.book = TaskBook(tasks, layout, self.state, self.k)
        self.view.tasks = self.book.view

    def _interference(self, jobs: JobTable) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Per-job interference kinds and the xi matrix (SJF-BSBF paper, eq. 5-6).

        From the performance model's ``interference()`` when it has one (else one kind and
        :data:`~gpusched.core.state.XI_DEFAULT`), then the policy's ``interference(xi)`` hook
        may replace the matrix (the paper's Fig. 6b injects one ratio for every pair).
        """
        kind: np.ndarray | None = None
        xi: np.ndarray | None = None
        got = getattr(self.perf, "interference", None)
        if got is not None:
            kind, xi = got()
        hook = getattr(self.policy, "interference", None)
        if hook is not None:
            base = np.full((1, 1), XI_DEFAULT) if xi is None else np.asarray(xi, np.float64)
            xi = call_policy(self.name, "interference", None, hook, base.copy())
            try:
                ok = np.asarray(xi, dtype=np.float64)
            except (TypeError, ValueError):
                ok = np.empty((0, 0))
            if ok.shape != base.shape or not (np.isfinite(ok).all() and (ok >= 1).all()):
                raise PolicyError(
                    f"policy '{self.name}': interference() must return a {base.shape[0]}x"
                    f"{base.shape[1]} matrix of finite ratios >= 1"
                )
            xi = ok
        return kind, xi

    # --- stepping ----------------------------------------------------------------------

    @property
    def now(self) -> float:
        """Current simulated time, s (-inf before the first decision point)."""
        return float(self.state.sim_f[F_NOW])

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
            return float(self.k.first_decision_time(st, self.cfg))
        if st.sim_i[I_N_FINISHED] + st.sim_i[I_N_REJECTED] == len(self.jobs):
            return np.inf
        e = self.k.next_event_time(st, self.cfg)
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
        with notice() if notice is not None else nullcontext():
            warm_up(self.mode)  # no-op when loaded (and in the warm-up's own engines)
            self.k.use_compiled(
                self.state, self.cfg, self._tl_buf, self._done_buf, self.mode == "python"
            )
        self._auto = False

    def _maybe_compile(self, spent: float) -> None:
        """Move to the compiled kernels when the rest of the run would take longer
        interpreted than loading them (see :class:`gpusched.core.jit.Switch`); ``spent`` is
        the CPU time of the last step."""
        self._interp_s += spent
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
        if self._cold and left <= SWITCH.compile_s:
            return
        self._use_compiled(self._notice if self._cold else None)

    def _compiled_cached(self) -> bool:
        """Are this path's compiled kernels in Numba's cache (or loaded)?"""
        module = compiled(_KERNEL)
        st, cfg = self.state, self.cfg
        if self.mode == "fused":
            return is_cached(module.run_fused, (st, cfg, new_timeline(1), 1))
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
            size = min(n, _CHUNK)
            buf = new_timeline(size)
            rows, code = self.k.run_fused(st, self.cfg, buf, size)
            if self.events is not None:
                self.events.ensure_room(st)
            self._tl.append(Timeline(*(b[:rows] for b in buf)))
            n -= max(rows, 1)
            self._set_code(code)

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
        code, n_done, n_arrived = self.k.step(st, self.cfg, self._done_buf)
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
        if self.ledger is not None and np.isfinite(self.cfg.until_s):
            # jobs placed by roles may wait for room until the horizon (then unfinished)
            st.sim_f[F_WAKE] = min(st.sim_f[F_WAKE], self.cfg.until_s + self.slot_s)
        self._check_progress(now)
        if self._tl_rows == len(self._tl_buf.time_s):
            if self._tl_rows:
                self._tl.append(self._tl_buf)
            self._tl_buf = new_timeline(_CHUNK)
            self._tl_rows = 0
        self.k.record(st, self.cfg, self._tl_rows, self._tl_buf)
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

    def _fail(self, job: int | None, now: float, what: str) -> PolicyError:
        who = f" job '{self.jobs.job_id[job]}' (index {job})" if job is not None else ""
        return PolicyError(f"policy '{self.name}' at t={now + 0.0:.6g} s:{who} {what}")

    def _check_job(self, j: Any, now: float) -> int:
        if isinstance(j, bool) or not isinstance(j, int | np.integer):
            raise self._fail(None, now, f"job index must be an integer, got {j!r}")
        idx = int(j)
        if not 0 <= idx < len(self.jobs):
            raise self._fail(
                None, now, f"unknown job index {idx} (there are {len(self.jobs)} jobs)"
            )
        return idx

    def _as_time(self, value: Any, what: str, now: float) -> float:
        """A policy's time value as a float (s), or a PolicyError naming what was wrong."""
        if type(value) is not float and (
            isinstance(value, bool) or not isinstance(value, numbers.Real)
        ):
            raise self._fail(None, now, f"{what} {value!r}: expected a time in s (a number)")
        t = float(value)
        if t != t:  # NaN
            raise self._fail(None, now, f"{what} NaN: expected a time in s")
        return t

    def _check_progress(self, now: float) -> None:
        """Stop a policy that keeps waking up while the run can make no progress.

        With every job arrived, no job holding GPUs and jobs waiting, only the policy
        can move the run on; a policy that answers wake-up after wake-up without
        starting anything would loop forever, its timeline growing.
        """
        st = self.state
        sim_i = st.sim_i
        stalled = (
            sim_i.item(I_N_RUN) == 0
            and sim_i.item(I_N_QUEUE) > 0
            and sim_i.item(I_NEXT_ARRIVAL) == len(self.jobs)
        )
        self._idle = self._idle + 1 if stalled else 0
        if self._idle > MAX_IDLE_DECISIONS:
            raise self._fail(
                None,
                now,
                f"made no progress over {MAX_IDLE_DECISIONS:,} decisions: "
                f"{int(st.sim_i[I_N_QUEUE])} job(s) wait, nothing runs, no job is left to "
                "arrive, and the policy keeps asking to be woken without starting any",
            )

    def _status_problem(self, j: int, now: float, allowed: tuple[int, ...]) -> PolicyError | None:
        status = int(self.state.job_status[j])
        if status in allowed:
            return None
        if status == PENDING:
            return self._fail(
                j,
                now,
                f"acted on before its arrival (submitted at {self.state.job_submit[j]:.6g} s)",
            )
        return self._fail(j, now, f"is {STATUS_NAMES[status]}, cannot be acted on this way")

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
        for action in decision.actions:
            reason = getattr(action, "reason", None)
            if reason is not None and not isinstance(reason, str):
                raise self._fail(
                    None, now, f"{type(action).__name__}.reason must be a str, got {reason!r}"
                )
            if log is not None and reason:
                since = log.logged(st)
            if isinstance(action, Note):
                j = self._check_job(action.job, now)
                if log is not None and reason:
                    log.note(st, now, "note", j, reason)
                continue
            if isinstance(action, Start):
                if self.book is not None:
                    self._apply_task_start(action, now)
                else:
                    self._apply_start(action, now)
                started = True
            elif isinstance(action, Preempt):
                j = self._check_job(action.job, now)
                err = self._status_problem(j, now, (RUNNING, LOADING))
                if err:
                    raise err
                if started:  # the job may have started in this decision: queue it once
                    self.k.compact_queue(st, 0)
                    started = False
                if self.ledger is not None:
                    self.ledger.release(j, now)
                if self.book is not None:
                    why = self.book.preempt_problem(j)
                    if why:
                        raise self._fail(j, now, why)
                    self.k.preempt(st, j, now)
                    self.book.released(j, now, in_decision=True)
                else:
                    self.k.preempt(st, j, now)
            elif isinstance(action, Dispatch):
                self._apply_dispatch(action, now)
            elif isinstance(action, HostPS):
                self._apply_host_ps(action, now)
            elif isinstance(action, Allocate):
                if started:  # it may pause a job started in this decision
                    self.k.compact_queue(st, 0)
                self._apply_allocate(action, now)
                started = True
            elif isinstance(action, Reject):
                self._apply_reject(action, now)
            else:
                raise self._fail(None, now, f"unknown action {action!r}")
            if log is not None and reason:
                log.reason(st, since, now, int(action.job), reason)
        if decision.actions:
            self.k.compact_queue(st, 0)  # once: drop the jobs the Starts took out of the queue
        if decision.order is not None and self.ledger is not None:
            raise self._fail(
                None, now, "gives an order, but jobs placed by roles are started with Allocate"
            )
        if decision.order is not None and self.book is not None:
            raise self._fail(
                None, now, "gives an order, but tasks are started on their workers with Start"
            )
        if decision.order is not None:
            order = decision.order
            if not (  # the common case: already what the kernel takes
                type(order) is np.ndarray
                and order.dtype == np.int32
                and order.ndim == 1
                and order.flags.c_contiguous
            ):
                try:
                    order = np.asarray(decision.order)
                except (ValueError, TypeError):
                    order = np.asarray([[None]], dtype=object)
                if order.ndim != 1 or (order.size and order.dtype.kind not in "iu"):
                    raise self._fail(None, now, "order must be a 1-D array of job indices")
                order = np.ascontiguousarray(order, dtype=np.int32)
            problem, at = self.k.check_order(st, order)
            if problem == 1:
                raise self._fail(None, now, f"unknown job index {int(order[at])} in order")
            if problem == 2:
                raise self._fail(None, now, "order lists a job twice")
            if problem == 3:
                j = int(order[at])
                raise self._status_problem(j, now, (QUEUED, RUNNING, LOADING, SAVING)) or (
                    self._fail(j, now, "bad")
                )
            self.k.fill_order(st, self.cfg, order, bool(blocking), bool(preemptive))
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

    def _apply_perf(self, now: float) -> None:
        """Set the progress rate of every job (re)started at ``now`` from its placement."""
        st = self.state
        n = self.k.started_at(st, now, self._started_buf)
        for j in self._started_buf[:n].tolist():
            gpus = st.alloc_gpu[st.job_alloc_off[j] : st.job_alloc_off[j + 1]]
            rate = float(self.perf.rate(int(j), gpus, self._config.get(j)))
            if not 0 < rate < np.inf:  # (not NaN, not inf)
                raise InvariantError(
                    f"performance model gave rate {rate} for job {self.jobs.job_id[j]}"
                )
            self.k.set_rate(st, j, rate)

    def _set_wake(self, w: float, now: float) -> None:
        if not w > now:
            raise self._fail(None, now, f"asked to wake at {w!r} s, which is not after now")
        sim_f = self.state.sim_f
        if w < sim_f[F_WAKE]:
            sim_f[F_WAKE] = w

    def _counts(self, j: int, value: Any, what: str, now: float) -> np.ndarray:
        """An Allocate's counts per machine as int64, or a PolicyError saying what is wrong."""
        assert self.ledger is not None
        h = self.ledger.n_machines
        try:
            arr = np.asarray(value)
        except (ValueError, TypeError):
            arr = np.asarray([None], dtype=object)
        if arr.shape != (h,) or not np.issubdtype(arr.dtype, np.integer):
            raise self._fail(
                j,
                now,
                f"Allocate.{what} must be {h} integer counts (one per machine), got {value!r}",
            )
        if (arr < 0).any():
            raise self._fail(j, now, f"Allocate.{what} has a negative count: {arr.tolist()}")
        return arr.astype(np.int64)

    def _apply_allocate(self, action: Allocate, now: float) -> None:
        """Start, resize or pause a job placed by roles (DESIGN.md, "elastic jobs")."""
        st = self.state
        j = self._check_job(action.job, now)
        if self.ledger is None:
            raise self._fail(j, now, "Allocate is for jobs placed by roles; this run has none")
        err = self._status_problem(j, now, (QUEUED, RUNNING))
        if err:
            raise err
        w = self._counts(j, action.workers, "workers", now)
        s = self._counts(j, action.ps, "ps", now)
        why = self.ledger.job_problem(j, w, s)
        if why:
            raise self._fail(j, now, why)
        if self.events is not None:
            self.events.note(st, now, "allocate", j, _placement(w, s))
        queued = st.job_status[j] == QUEUED
        if int(w.sum()) == 0:  # pause: back to the queue, keeping its progress
            if not queued:
                self.ledger.release(j, now)
                self.k.preempt(st, j, now)
            return
        rate = float(self.roles.rate(j, w, s))
        if not (rate > 0 and np.isfinite(rate)):
            raise InvariantError(f"role model gave rate {rate} for job {self.jobs.job_id[j]}")
        self.ledger.set(j, w, s, now)
        if queued:
            self.k.start_on(st, j, np.empty(0, np.int32), now)
        self.k.set_rate(st, j, rate)

    def _check_room(self, actions: Any, now: float) -> None:
        """All of a decision's Allocates must fit together (capacity of every resource of
        every machine, after the whole decision: jobs may swap machines in one)."""
        assert self.ledger is not None
        changes: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        if not isinstance(actions, list | tuple):
            return  # _apply reports it
        for action in actions:
            if isinstance(action, Allocate):
                j = self._check_job(action.job, now)
                w = self._counts(j, action.workers, "workers", now)
                changes[j] = (w, self._counts(j, action.ps, "ps", now))
            elif isinstance(action, Preempt | Reject):
                j = self._check_job(action.job, now)
                z = np.zeros(self.ledger.n_machines, dtype=np.int64)
                changes[j] = (z, z)
        why = self.ledger.room_problem(changes)
        if why:
            raise self._fail(None, now, f"Allocate {why}")

    def _task_worker(self, j: int, value: Any, now: float) -> int:
        """A task action's worker as an int, or a PolicyError."""
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise self._fail(j, now, f"worker must be an integer index, got {value!r}")
        return int(value)

    def _apply_task_start(self, action: Start, now: float) -> None:
        """Start a task on its one worker (the rules of :mod:`gpusched.core.tasks`)."""
        assert self.book is not None
        st = self.state
        j = self._check_job(action.job, now)
        err = self._status_problem(j, now, (QUEUED,))
        if err:
            raise err
        gpus = action.gpus
        try:
            arr = np.asarray(gpus) if gpus is not None else None
        except (ValueError, TypeError):
            arr = None
        if arr is None or arr.shape != (1,):
            raise self._fail(j, now, f"a task starts on exactly one named worker, got {gpus!r}")
        w = self._task_worker(j, arr[0].item() if arr.dtype != object else arr[0], now)
        why = self.book.start_problem(j, w, now)
        if why:
            raise self._fail(j, now, why)
        if st.gpu_n_jobs[w] > 0:
            holder = self.jobs.job_id[st.gpu_job[w, 0]]
            raise self._fail(j, now, f"worker {w} is busy (with task '{holder}'; eq. 2d)")
        if action.config is not None:
            raise self._fail(j, now, "gives a config, but tasks take none")
        self.book.before_start(j, w, now)
        self.k.start_on(st, j, np.asarray([w], dtype=np.int32), now)
        self.book.after_start(j)

    def _apply_dispatch(self, action: Dispatch, now: float) -> None:
        """Place a queued task on a worker without starting it."""
        if self.book is None:
            raise self._fail(None, now, "Dispatch is for jobs made of tasks; this run has none")
        j = self._check_job(action.job, now)
        err = self._status_problem(j, now, (QUEUED,))
        if err:
            raise err
        w = self._task_worker(j, action.worker, now)
        if self.book.bound[j] >= 0:
            raise self._fail(j, now, f"is placed already (on worker {int(self.book.bound[j])})")
        why = self.book.place_problem(j, w)
        if why:
            raise self._fail(j, now, why)
        self.book.dispatch(j, w, now)
        if self.events is not None:
            ready = float(self.book.ready[j])
            self.events.note(self.state, now, "dispatch", j, f"worker {w}, ready at {ready:.6g} s")

    def _apply_host_ps(self, action: HostPS, now: float) -> None:
        """Put a job's parameter server on a server."""
        book = self.book
        if book is None:
            raise self._fail(None, now, "HostPS is for jobs made of tasks; this run has none")
        p = action.job
        if (
            isinstance(p, bool)
            or not isinstance(p, int | np.integer)
            or not 0 <= p < book.n_parents
        ):
            raise self._fail(None, now, f"HostPS: unknown job index {p!r} (of {book.n_parents})")
        s = self._task_worker(None, action.server, now)  # type: ignore[arg-type]
        why = book.ps_problem(int(p), s, now)
        if why:
            raise self._fail(None, now, f"HostPS: job '{book.job_id[int(p)]}' {why}")
        book.host_ps(int(p), s, now)

    def _apply_reject(self, action: Reject, now: float) -> None:
        """End a queued job that never ran with status rejected."""
        st = self.state
        j = self._check_job(action.job, now)
        err = self._status_problem(j, now, (QUEUED,))
        if err:
            raise err
        if not np.isnan(st.job_first_start[j]):
            raise self._fail(j, now, "has run already; only a job that never ran may be rejected")
        st.job_status[j] = REJECTED
        st.sim_i[I_N_REJECTED] += 1
        if self.events is not None:
            self.events.note(st, now, "reject", j)

    def _apply_start(self, action: Start, now: float) -> None:
        st = self.state
        j = self._check_job(action.job, now)
        if self.ledger is not None:
            raise self._fail(j, now, "is placed by roles: start it with Allocate, not Start")
        err = self._status_problem(j, now, (QUEUED,))
        if err:
            raise err
        g = int(st.job_n_gpus[j])
        self._take_config(j, action.config, now)
        if action.gpus is None:
            self._check_start(j, np.empty(0, np.int32), now)  # alone: only its config
            if not self.k.place_consolidated(st, j, self.cfg.allow_spread):
                raise self._fail(j, now, f"needs {g} GPUs but only {self.view.free_gpus} are idle")
            self.k.start_job(st, j, now)
            return
        try:
            gpus = np.asarray(action.gpus)
        except (ValueError, TypeError):
            gpus = np.asarray([None], dtype=object)
        if gpus.ndim != 1 or gpus.size != g or gpus.dtype.kind not in "iu":
            raise self._fail(j, now, f"needs exactly {g} GPU indices, got {action.gpus!r}")
        n_gpus = st.gpu_n_jobs.shape[0]
        as_list = gpus.tolist()  # small lists: Python is cheaper than numpy calls here
        if g and (min(as_list) < 0 or max(as_list) >= n_gpus):
            raise self._fail(j, now, f"unknown GPU index in {as_list} (cluster has {n_gpus})")
        if len(set(as_list)) != g:
            raise self._fail(j, now, f"lists a GPU twice: {as_list}")
        gpus = np.asarray(as_list, dtype=np.int32)
        if not self.cfg.allow_spread and len(set(st.gpu_server[gpus].tolist())) > 1:
            raise self._fail(j, now, "spans servers but the cluster forbids spreading")
        if self._pending:
            self._check_promised(j, gpus, now)
        if g and st.gpu_n_jobs[gpus].max() >= st.gpu_job.shape[1]:
            full, busy = self._blockers(gpus)
            if busy.size == 0:
                # DESIGN.md "Job lifecycle": a start onto GPUs still saving is honoured
                # when the save ends (the save end is a decision point)
                self._pending[j] = gpus
                return
            gpu = int(gpus[full][0])
            holder = self.jobs.job_id[st.gpu_job[gpu, 0]]
            raise self._fail(j, now, f"GPU {gpu} is already allocated (to job '{holder}')")
        self._check_start(j, gpus, now)
        self.k.start_on(st, j, gpus, now)

    def _check_promised(self, j: int, gpus: np.ndarray, now: float) -> None:
        """Refuse a start of a job whose start already waits, or onto GPUs promised to
        another job's waiting start."""
        if j in self._pending:
            raise self._fail(j, now, "already has a start waiting for saves to end")
        for other, promised in self._pending.items():
            both = np.intersect1d(gpus, promised)
            if both.size:
                raise self._fail(
                    j,
                    now,
                    f"GPU {int(both[0])} is promised to job '{self.jobs.job_id[other]}' "
                    "(its start waits for a save to end)",
                )

    def _take_config(self, j: int, config: Any, now: float) -> None:
        """Record a Start's job configuration; it stays the job's for its lifetime."""
        if config is None:
            return
        if self.perf is None or not hasattr(self.perf, "check_start"):
            raise self._fail(j, now, "gives a config, but no performance model reads one")
        old = self._config.get(j)
        started = not np.isnan(self.state.job_first_start[j])
        if (old is not None or started) and old != config:
            raise self._fail(
                j, now, f"config {config!r} differs from the {old!r} it first started with"
            )
        self._config[j] = config

    def _check_start(self, j: int, gpus: np.ndarray, now: float) -> None:
        """Let the performance model refuse a start (bad config, no memory beside partners)."""
        check = getattr(self.perf, "check_start", None)
        if check is None:
            return
        st = self.state
        config = self._config.get(j)
        if st.gpu_job.shape[1] <= 2:
            # the callers refuse full GPUs, so (C <= 2) each of its GPUs holds at most one
            # other job, in slot 0 (slots are packed): the same groups and order as below
            who = st.gpu_job[gpus, 0] if gpus.size else gpus
            ps = sorted(set(who.tolist())) or [-1]
            for p in ps:
                on = gpus if len(ps) == 1 else gpus[who == p]
                why = check(j, on, config, [(p, self._config.get(p))] if p >= 0 else [])
                if why:
                    raise self._fail(j, now, str(why))
            return
        rows = st.gpu_job[gpus]
        beside = [tuple(sorted(set(row[row >= 0].tolist()) - {j})) for row in rows]
        for group in sorted(set(beside)) or [()]:  # the jobs beside it, GPU by GPU
            on = gpus[[b == group for b in beside]]
            why = check(j, on, config, [(p, self._config.get(p)) for p in group])
            if why:
                raise self._fail(j, now, str(why))

    def _blockers(self, gpus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Which of ``gpus`` are full (a mask), and the jobs on them that are not saving."""
        st = self.state
        full = st.gpu_n_jobs[gpus] >= st.gpu_job.shape[1]
        holders = st.gpu_job[gpus[full]]
        holders = holders[holders >= 0]
        return full, holders[st.job_status[holders] != SAVING]

    def _honour_pending(self, now: float) -> None:
        """Start every pending job whose GPUs the saving jobs have released, in the order
        the starts were asked for; drop those the policy started otherwise meanwhile."""
        st = self.state
        for j, gpus in list(self._pending.items()):
            if st.job_status[j] != QUEUED:
                del self._pending[j]  # started by an order fill meanwhile
                continue
            full, taken = self._blockers(gpus)
            if not full.any():
                del self._pending[j]
                self._check_start(j, gpus, now)
                self.k.start_on(st, j, gpus, now)
                continue
            if taken.size:
                raise self._fail(
                    j,
                    now,
                    f"its start waiting for saves to end on GPUs {gpus.tolist()} found one "
                    f"taken by job '{self.jobs.job_id[taken[0]]}'",
                )
        self.k.compact_queue(st, 0)
        if self.perf is not None:
            self._apply_perf(now)

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
        chunks = self._tl + [Timeline(*(b[: self._tl_rows] for b in self._tl_buf))]
        tl = {k: np.concatenate([getattr(c, k) for c in chunks]) for k in Timeline._fields}
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
            self.k.sync_all(self.state)

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
                "zeta": book.zeta.copy(),
                "n_edge_workers": int(book.view.edge_workers.shape[0]),
                "ps_held_s": float(book.ledger.held_s[0]),
            }
        if self.events is not None:
            end = self.now if np.isfinite(self.now) else self._stopped_at()
            extra["events"] = self.events.table(self.state, self.jobs.job_id, end)
        hook = getattr(self.policy, "summary", None)
        if hook is not None:  # the policy's own summary keys (e.g. prediction accuracy)
            extra["policy_summary"] = dict(call_policy(self.name, "summary", None, hook) or {})
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
                **extra,
            },
        )


def _placement(workers: np.ndarray, ps: np.ndarray) -> str:
    """A role job's counts per machine in words: ``workers 2@m0 1@m3; ps 1@m0``."""
    if not workers.any():
        return "paused"

    def per(c: np.ndarray) -> str:
        return " ".join(f"{int(c[m])}@m{m}" for m in np.flatnonzero(c).tolist())

    return f"workers {per(workers)}; ps {per(ps)}"


def check_invariants(
    st: SimState,
    tl: dict[str, np.ndarray],
    capacity: int,
    *,
    stopped: bool,
    constant_rate: bool = True,
) -> None:
    """Raise :class:`InvariantError` if the run broke a rule of the model.

    Checked: no GPU over its job capacity and none counted busy beyond the cluster,
    time strictly increasing, every job finished unless the run was stopped early,
    work conserved (a finished job has no work left and, when every job keeps a
    constant rate, ran exactly work / rate), JCT = wait + load + train + save for every
    finished job, JCT >= run time, starts after submission.
    """
    n_gpus = st.gpu_n_jobs.shape[0]
    if st.gpu_n_jobs.size and (st.gpu_n_jobs.max() > capacity or st.gpu_n_jobs.min() < 0):
        raise InvariantError("a GPU holds more jobs than its capacity")
    if tl["busy_gpus"].size and tl["busy_gpus"].max() > n_gpus:
        raise InvariantError("more GPUs busy than the cluster has")
    if tl["time_s"].size > 1 and not (np.diff(tl["time_s"]) > 0).all():
        raise InvariantError("simulated time is not strictly increasing")
    done = st.job_status == FINISHED
    ended = done | (st.job_status == REJECTED)
    if not stopped and not ended.all():
        raise InvariantError(f"{int((~ended).sum())} job(s) never finished")
    if (st.job_status == SAVING).any() and not stopped:
        raise InvariantError("a job is still saving at the end")
    if st.sim_f[F_RESIDUAL] > 1e-6:
        raise InvariantError(
            f"work not conserved: a job finished with {float(st.sim_f[F_RESIDUAL]):.3g} of its "
            "work left or overdone"
        )
    ran = st.job_executed[done] * st.job_rate[done]
    work = st.job_work[done]
    if (st.job_remaining[done] != 0).any() or (
        constant_rate and not np.allclose(ran, work, rtol=1e-9, atol=1e-6)
    ):
        raise InvariantError("work not conserved: a finished job ran more or less than its work")
    jct = st.job_finish[done] - st.job_submit[done]
    parts = (
        st.job_wait_s[done]
        + st.job_load_spent_s[done]
        + st.job_executed[done]
        + st.job_save_spent_s[done]
    )
    if not np.allclose(parts, jct, rtol=1e-9, atol=1e-6):
        bad = int(np.flatnonzero(~np.isclose(parts, jct, rtol=1e-9, atol=1e-6))[0])
        raise InvariantError(
            f"a job's wait + load + train + save ({float(parts[bad])!r} s) is not its JCT "
            f"({float(jct[bad])!r} s)"
        )
    if (jct < st.job_executed[done] - 1e-6).any():
        raise InvariantError("a job finished sooner than its run time after submission")
    started = ~np.isnan(st.job_first_start)
    if (st.job_first_start[started] < st.job_submit[started] - 1e-9).any():
        raise InvariantError("a job started before it was submitted")


class _WarmUpPolicy:
    """A throw-away policy that makes the Python path call every kernel entry point once."""

    name = "warm-up"
    knows_duration = False
    work_conserving = False
    needs_predictor = False

    def decide(self, view: View, now: float) -> Decision:
        queued = view.queued
        if view.running.size:
            return Decision(actions=[Preempt(int(view.running[0]))], wake_at=now + 1.0)
        if queued.size > 1:
            free = np.flatnonzero(view.gpu_n_jobs == 0)[:1]
            return Decision(actions=[Start(int(queued[0]), free.astype(np.int32))])
        return Decision(order=np.asarray(queued), preemptive=True)


_warm: set[str] = set()


def compiled_in_cache(mode: str = "python") -> bool:
    """Are the compiled kernels of engine path ``mode`` loaded, or in Numba's cache?"""
    if mode in _warm:
        return True
    return _warm_up_engine(mode, "interpreted")._compiled_cached()


def warm_up(mode: str = "python") -> None:
    """Load the kernels of one engine path now (compiling them on the first run after install).

    Numba loads (or compiles) a kernel at its first call; without this, the first run
    of a process would pay that inside its ``wall_s`` (about a second from the cache,
    tens of seconds on a first run). Runs a tiny simulation on the ``"fused"`` or
    ``"python"`` path; later calls for the same path return at once.
    """
    if mode in _warm:
        return
    _warm.add(mode)
    _warm_up_engine(mode, "compiled").run()


def _warm_up_engine(mode: str, kernels: str) -> Engine:
    """A three-job engine that calls every kernel of path ``mode`` once it runs."""
    from gpusched.io.cluster import ClusterSpec

    cluster = ClusterSpec.homogeneous(1, 2, name="warm-up")
    table = JobTable(
        job_id=np.array(["a", "b", "c"], dtype=object),
        submit_s=np.array([0.0, 0.0, 1.0]),
        n_gpus=np.array([1, 1, 2], dtype=np.int32),
        work_s=np.array([2.0, 3.0, 1.0]),
        row=np.arange(3),
    )
    if mode == "fused":
        return Engine(table, cluster, _WarmUpFused(), mode="fused", kernels=kernels)
    return Engine(table, cluster, _WarmUpPolicy(), mode="python", perf=_UnitRate(), kernels=kernels)


class _WarmUpFused(_WarmUpPolicy):
    def fused(self) -> Fused:
        return Fused(KEY_LAS, preemptive=True, thresholds=(1.0,))


class _UnitRate:
    """A performance model that keeps every job at rate 1 (exercises ``set_rate``)."""

    def rate(self, job: int, gpus: np.ndarray, config: Any = None) -> float:
        return 1.0
