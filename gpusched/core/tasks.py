"""Jobs made of tasks on typed workers in tiers: the core of the edge-cloud family.

docs/architecture.md, "Jobs made of tasks": a job may consist of tasks (data chunks),
each placed, started, preempted and finished on its own, pinned to its worker once it is
placed (no migration, unless the policy declares ``migrates = True``: below), ready only
after its transmission delay to the chosen server; the job's completion time is its last
task's. Servers declare typed workers (the cluster TOML's ``workers``), and a tier may be
unbounded (the cloud, ``unbounded = true``). One engine runs it all: every task is a row
of the simulation state that needs one worker, and the workers are the state's "GPUs"
(:class:`WorkerLayout`). An unbounded cloud gets one worker per task, so it never runs out
(each task ``t`` has its own, :meth:`TaskView.cloud_worker`); a bounded cloud (a cloud
group with a ``workers`` table) has those workers only (:attr:`TaskView.cloud_workers`).

The rules the engine enforces with :class:`TaskBook` (a :class:`~gpusched.errors.PolicyError`
names the task and the rule):

* a task runs on one worker of its job's worker type (the cloud's serve every type);
* placing a task binds it to that worker for good (the paper's eq. 2a and "we do not
  allow migrating jobs' data chunks among servers"); its data is shipped then and takes
  the server's ``delay_s`` (Δ of eq. 2i): a job's tasks placed on a server at once all
  arrive ``delay_s`` later, or, on a server with ``ship = "serial"``, one after another
  over one link per job and server (:meth:`TaskView.ship_times`).
  :class:`~gpusched.core.policy.Dispatch` places a task without starting it: the worker
  stays free for others meanwhile and the task may start from its ready time on. A
  :class:`~gpusched.core.policy.Start` of a task never placed places it at once, and the
  task holds its worker while its data arrives (a load phase);
* migration is opt-in: a policy that declares ``migrates = True`` (the edge-cloud paper's
  job-level baselines, whose schedulers "migrate jobs' datasets among different servers")
  may Start a placed task that holds no worker (preempted, or dispatched and waiting) on
  another worker of its type; the task is bound there instead and its data ships again,
  taking that server's delay as a load phase (counted per task: ``n_migrations``, and the
  delay in ``transfer_s``). A policy that does not declare it (A_online) is refused;
* one task per worker at a time (eq. 2d) -- the state's GPU capacity;
* the cloud never preempts (Sec. III: "Preemption is allowed in servers except for the
  cloud");
* every job with a task holding a worker has exactly one parameter server (eq. 2e), on
  a server with a free PS slot (2f) -- the cloud's are unbounded -- and a job wholly in
  the cloud has it in the cloud (2g). Policies place it with
  :class:`~gpusched.core.policy.HostPS`; a job that holds no worker any more gives it back at
  that moment. The PS slots are a resource ledger (:mod:`gpusched.core.ledger`), whose
  integral gives PS utilisation per tier.

How fast a task runs is its job model's (``rate(job, zeta)``: the paper's eq. 1, with
``zeta`` = 1 while every placed task of the job sits in the cloud). When a job's first task
placed on the edge ends its all-cloud state, its running tasks are re-rated at that moment.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gpusched.core.ledger import Ledger
from gpusched.core.state import LOADING, RUNNING
from gpusched.errors import ClusterError, TraceError, show_name, show_value
from gpusched.io.cluster import ClusterSpec, ServerGroup

__all__ = ["TaskBook", "TaskView", "WorkerLayout", "has_workers", "worker_layout"]

#: Worker type code of a worker that serves every type (the cloud's).
ANY_TYPE = -1


def has_workers(cluster: ClusterSpec) -> bool:
    """Does the cluster declare typed workers or an unbounded cloud (edge-cloud)?"""
    return any(g.workers or g.unbounded for g in cluster.groups)


@dataclass(frozen=True, slots=True)
class WorkerLayout:
    """The workers of an edge-cloud cluster, numbered as the simulation's GPUs.

    Attributes
    ----------
    cluster
        The cluster the kernel runs: the same servers, each with one "GPU" per worker
        (the unbounded cloud with ``n_cloud`` of them).
    types
        Worker type names, in order of first appearance; codes index this tuple.
    worker_type
        Type code per worker (:data:`ANY_TYPE` for the cloud's).
    worker_server
        Server of each worker.
    server_cloud
        Bool per server: in the cloud tier.
    server_delay
        Transmission delay of one data chunk to each server, s.
    ps_slots
        Parameter-server slots per server (inf for the unbounded cloud).
    cloud_first
        Index of the unbounded cloud's first worker (-1 without an unbounded cloud).
    cloud_n
        Workers of the unbounded cloud (0 without one): ``cloud_first:cloud_first +
        cloud_n``.
    server_serial
        Bool per server: a job's chunks ship there one after another (``ship``).
    """

    cluster: ClusterSpec
    types: tuple[str, ...]
    worker_type: np.ndarray
    worker_server: np.ndarray
    server_cloud: np.ndarray
    server_delay: np.ndarray
    ps_slots: np.ndarray
    cloud_first: int
    cloud_n: int = 0
    server_serial: np.ndarray | None = None

    @property
    def n_workers(self) -> int:
        return int(self.worker_type.shape[0])


def worker_layout(cluster: ClusterSpec, n_cloud: int) -> WorkerLayout:
    """The workers of ``cluster``, with ``n_cloud`` workers in its unbounded cloud."""
    types: list[str] = []
    groups = []
    codes: list[np.ndarray] = []
    ps: list[float] = []
    cloud_first = -1
    n = 0
    clouds = [g for g in cluster.groups if g.unbounded]
    if len(clouds) > 1:
        raise ClusterError(
            f"{show_name(cluster.source)}: cluster '{cluster.name}' has {len(clouds)} unbounded "
            "clouds; at most one"
        )
    for g in cluster.groups:
        for t, _ in g.workers:
            if t not in types:
                types.append(t)
        per = [types.index(t) for t, _ in g.workers]
        row = np.repeat(np.asarray(per, dtype=np.int16), [c for _, c in g.workers])
        gpus = n_cloud if g.unbounded else int(row.shape[0])
        if g.unbounded:
            cloud_first = n
            row = np.full(n_cloud, ANY_TYPE, dtype=np.int16)
        if g.tier == "cloud" and g.workers and not g.ps_unbounded and g.ps < int(row.shape[0]):
            raise ClusterError(
                f"{show_name(cluster.source)}: cluster '{cluster.name}': a bounded cloud server "
                f"has {int(row.shape[0])} workers but {g.ps} PS slots: a job wholly in the cloud "
                'has its PS there (eq. 2g), so give one per worker, or ps = "unbounded"'
            )
        for _ in range(g.count):
            codes.append(row)
            ps.append(np.inf if g.unbounded or g.ps_unbounded else float(g.ps))
            n += gpus
        groups.append(
            ServerGroup(
                count=g.count,
                gpus=gpus,
                gpu_type="worker",
                rack=g.rack,
                tier=g.tier,
                delay_s=g.delay_s,
                workers=g.workers,
                ps=g.ps,
                unbounded=g.unbounded,
                ship=g.ship,
                ps_unbounded=g.ps_unbounded,
            )
        )
    spec = ClusterSpec(
        name=cluster.name,
        description=cluster.description,
        groups=tuple(groups),
        nic_gbps=cluster.nic_gbps,
        intra_gbyte_s=cluster.intra_gbyte_s,
        gpu_capacity=1,
        allow_spread=True,
        source=cluster.source,
    )
    worker_type = np.concatenate(codes) if codes else np.empty(0, np.int16)
    n_edge = int((worker_type != ANY_TYPE).sum())
    if cloud_first < 0 and sum(ps) < n_edge:
        raise ClusterError(
            f"{show_name(cluster.source)}: cluster '{cluster.name}' has {n_edge} workers but "
            f"{sum(ps):g} parameter-server slots and no unbounded cloud: every running job needs "
            "a PS (eq. 2e), so give at least one PS slot per worker or a cloud (unbounded, or "
            'with ps = "unbounded")'
        )
    return WorkerLayout(
        cluster=spec,
        types=tuple(types),
        worker_type=worker_type,
        worker_server=spec.gpu_server(),
        server_cloud=np.asarray(cluster.server_tier() == "cloud"),
        server_delay=np.asarray(cluster.server_delay_s(), dtype=np.float64),
        ps_slots=np.asarray(ps, dtype=np.float64),
        cloud_first=cloud_first,
        cloud_n=n_cloud if cloud_first >= 0 else 0,
        server_serial=np.asarray(cluster.server_serial(), dtype=bool),
    )


def _ro(a: np.ndarray) -> np.ndarray:
    """A read-only view of ``a`` (live: the engine updates ``a`` itself)."""
    v = a.view()
    v.flags.writeable = False
    return v


class TaskView:
    """What a policy sees of the tasks (``view.tasks``): live read-only arrays.

    Attributes
    ----------
    parent, first, n_parents
        Job of each task; tasks of job ``p`` are ``first[p]:first[p + 1]``.
    job_id
        The jobs' ids (as in the trace).
    task_type, types
        Worker type code each task needs, and the type names the codes index.
    worker_type, worker_server, server_cloud, server_delay, ps_slots
        Per worker: type code (-1: any, the cloud's) and server; per server: in the cloud,
        transmission delay (s) and PS slots (inf in the cloud).
    edge_workers
        Indices of the workers not in the cloud.
    cloud_workers
        Indices of a bounded cloud's workers (typed; empty without one). An unbounded
        cloud's are not listed: each task has its own (:meth:`cloud_worker`).
    unbounded_cloud
        Does the cluster have an unbounded cloud?
    server_serial
        Per server: a job's chunks ship there one after another (``ship = "serial"``).
    bound, ready
        Per task: the worker it is placed on (-1: not placed) and the time from which it
        may start there (s; NaN: not placed).
    zeta
        Per job: 1 while every placed task sits in the cloud, 0 once one is on the edge,
        -1 before any is placed (eq. 1's zeta_j).
    ps_server
        Per job: the server of its parameter server (-1: none).
    gang
        Per job: the workers a job-level (gang) policy gives it at once.
    n_migrations
        Per task: times it was placed on another worker after its first placement
        (policies that declare ``migrates = True``).
    n_hold
        Per job: its tasks holding a worker now (before the decision's actions apply).
    """

    def __init__(self, book: TaskBook) -> None:
        self._book = book
        lay = book.layout
        self.parent = _ro(book.parent)
        self.first = _ro(book.first)
        self.n_parents = book.n_parents
        self.job_id = _ro(book.job_id)
        self.task_type = _ro(book.task_type)
        self.types = lay.types
        self.worker_type = _ro(lay.worker_type)
        self.worker_server = _ro(lay.worker_server)
        self.server_cloud = _ro(lay.server_cloud)
        self.server_delay = _ro(lay.server_delay)
        self.ps_slots = _ro(lay.ps_slots)
        in_cloud = lay.server_cloud[lay.worker_server]
        self.edge_workers = _ro(np.flatnonzero(~in_cloud))
        self.cloud_workers = _ro(np.flatnonzero(in_cloud & (lay.worker_type != ANY_TYPE)))
        self.unbounded_cloud = lay.cloud_first >= 0
        serial = lay.server_serial
        self.server_serial = _ro(
            np.zeros(lay.server_cloud.shape[0], dtype=bool) if serial is None else serial
        )
        self.bound = _ro(book.bound)
        self.ready = _ro(book.ready)
        self.zeta = _ro(book.zeta)
        self.ps_server = _ro(book.ps_server)
        self.gang = _ro(book.gang)
        self.n_migrations = _ro(book.n_migrations)
        self.n_hold = _ro(book.n_hold)

    def cloud_worker(self, task: int) -> int:
        """The cloud worker reserved for ``task`` (-1 without a cloud)."""
        first = self._book.layout.cloud_first
        return -1 if first < 0 else first + int(task)

    def ship_times(self, job: int, server: int, now: float, n: int = 1) -> np.ndarray:
        """When ``n`` more chunks of ``job`` placed on ``server`` at ``now``, one after the
        other, would be there (s): each ``delay_s`` after ``now``, or on a server with
        ``ship = "serial"`` one after another behind the job's chunks still in transit there.
        The engine's own rule (a Dispatch or Start of those chunks gives exactly these)."""
        return self._book.ship_times(int(job), int(server), float(now), int(n))

    def rate(self, job: int, zeta: int) -> float:
        """Progress rate of a task of ``job`` (s of work per s) with the given zeta_j."""
        return float(self._book.rate(job, zeta))

    @property
    def ps_free(self) -> np.ndarray:
        """Free parameter-server slots per server now (inf in the cloud), a copy."""
        free = self._book.ledger.free[:, 0].copy()
        free.flags.writeable = False
        return free


class TaskBook:
    """The engine's record of tasks: placements, ready times, zeta, PSs (see module doc).

    Parameters
    ----------
    tasks
        The job model's tasks: ``parent``, ``first``, ``parents`` (the jobs' table),
        ``type_name`` (worker type each task needs), ``gang`` and ``rate(job, zeta)``.
    layout
        The cluster's workers.
    state
        The simulation state (one row per task).
    kernels
        The engine's kernels (its ``set_rate`` re-rates running tasks).
    """

    def __init__(self, tasks: Any, layout: WorkerLayout, state: Any, kernels: Any) -> None:
        self.tasks = tasks
        self.layout = layout
        self.st = state
        self.kernels = kernels
        self.parent = np.asarray(tasks.parent, dtype=np.int64)
        self.first = np.asarray(tasks.first, dtype=np.int64)
        self.n_parents = int(self.first.shape[0] - 1)
        self.job_id = np.asarray(tasks.parents.job_id)
        self.gang = np.asarray(tasks.gang, dtype=np.int64)
        self.rate = tasks.rate
        names = np.asarray(tasks.type_name, dtype=object)
        code = {t: k for k, t in enumerate(layout.types)}
        self.task_type = np.array([code.get(t, -2) for t in names.tolist()], dtype=np.int16)
        if (self.task_type == -2).any():
            t = int(np.flatnonzero(self.task_type == -2)[0])
            p = int(self.parent[t])
            line = int(tasks.parents.row[p]) + 2
            src = show_name(tasks.parents.source or "<trace>")
            raise TraceError(
                f"{src}:{line}: column 'worker_type': cluster '{layout.cluster.name}' has no "
                f"worker of type {show_value(str(names[t]))} (it has: "
                f"{', '.join(layout.types) or 'none'})"
            )
        self._check_rates(tasks)
        n = self.parent.shape[0]
        self.bound = np.full(n, -1, dtype=np.int32)
        self.ready = np.full(n, np.nan)
        self.transfer_s = np.zeros(n)
        self.n_migrations = np.zeros(n, dtype=np.int32)
        self.migrate_s = np.zeros(n)  # transmission time of the moves
        #: may a placed task that holds no worker start on another one (the policy's
        #: ``migrates``; set by the engine)
        self.migrates = False
        #: (job, server) -> when its last chunk shipped there arrives (``ship = "serial"``)
        self._link: dict[tuple[int, int], float] = {}
        self.zeta = np.full(self.n_parents, -1, dtype=np.int8)
        self.ps_server = np.full(self.n_parents, -1, dtype=np.int32)
        self.n_hold = np.zeros(self.n_parents, dtype=np.int64)
        self.cloud_busy = 0
        s = layout.server_cloud.shape[0]
        self.ledger = Ledger(
            layout.ps_slots.reshape(s, 1),
            np.zeros((self.n_parents, 1)),
            np.ones((self.n_parents, 1)),
            np.full(self.n_parents, 1),
        )
        self._one = np.zeros(s, dtype=np.int64)
        self._cloud_w: list[bool] = layout.server_cloud[layout.worker_server].tolist()
        self._touched: set[int] = set()
        #: a job of _touched may have been left holding no worker but a PS since
        #: ps_problem last dropped those (released, or host_ps of a job holding none)
        self._may_drop = False
        self.view = TaskView(self)

    def _check_rates(self, tasks: Any) -> None:
        """Every job's rate at zeta 0 and 1 is finite and > 0, or a TraceError names its
        row: policies divide by it (a job model's trace checks should catch it first)."""
        #: rate(p, zeta) per job and zeta (the job model's, read once: starts use it)
        self._rates = np.empty((self.n_parents, 2))
        for p in range(self.n_parents):
            for zeta in (0, 1):
                r = float(self.rate(p, zeta))
                self._rates[p, zeta] = r
                if not (np.isfinite(r) and r > 0):
                    src = show_name(tasks.parents.source or "<trace>")
                    line = int(tasks.parents.row[p]) + 2
                    raise TraceError(
                        f"{src}:{line}: job '{self.job_id[p]}': its values give its chunks a "
                        f"rate of {r!r} at zeta = {zeta}; expected a finite number > 0"
                    )

    # --- checks ----------------------------------------------------------------------

    def in_cloud(self, w: int) -> bool:
        return self._cloud_w[w]

    def place_problem(self, t: int, w: int) -> str | None:
        """Why task ``t`` may not be placed on (or run on) worker ``w`` (None: it may)."""
        lay = self.layout
        if not 0 <= w < lay.n_workers:
            return f"unknown worker {w} (the cluster has {lay.n_workers})"
        kind = int(lay.worker_type[w])
        if kind != ANY_TYPE and kind != int(self.task_type[t]):
            return (
                f"needs a worker of type '{lay.types[self.task_type[t]]}', and worker {w} is "
                f"'{lay.types[kind]}'"
            )
        first = lay.cloud_first
        if first >= 0 and first <= w < first + lay.cloud_n and w != first + t:
            return f"must use its own cloud worker {first + t} (view.tasks.cloud_worker)"
        b = int(self.bound[t])
        if b >= 0 and b != w and not self.migrates:
            return (
                f"is placed on worker {b}: its data stays there (no migration; a policy that "
                "declares migrates = True may move it)"
            )
        return None

    def place_many_ok(self, ts: np.ndarray, ws: np.ndarray) -> bool:
        """Would :meth:`place_problem` find no problem with any pair (never-placed tasks)?
        (Its worker-type and own-cloud-worker checks serve :meth:`start_many_ok` too.)"""
        lay = self.layout
        kind = lay.worker_type[ws]
        if not ((kind == ANY_TYPE) | (kind == self.task_type[ts])).all():
            return False
        first = lay.cloud_first
        if first >= 0:
            own = (ws >= first) & (ws < first + lay.cloud_n)
            if (own & (ws != first + ts)).any():
                return False
        return True

    def start_problem(self, t: int, w: int, now: float) -> str | None:
        """Why task ``t`` may not start on worker ``w`` now (None: it may)."""
        if w >= 0 and self.bound[t] == w:  # placed there (checked then): its data may be missing
            if now < self.ready[t] - 1e-9:
                return f"is not ready on worker {w} before t={self.ready[t]:.6g} s (its data ships)"
            return None
        why = self.place_problem(t, w)
        if why:
            return why
        if self.bound[t] == w and now < self.ready[t] - 1e-9:
            return f"is not ready on worker {w} before t={self.ready[t]:.6g} s (its data ships)"
        return None

    def start_many_ok(self, ts: np.ndarray, ws: np.ndarray, now: float) -> bool:
        """Would :meth:`start_problem` find no problem with any pair (workers in range)?"""
        b = self.bound[ts]
        if ((b == ws) & (b >= 0)).all():  # placed there (checked then): their data may be missing
            return not (now < self.ready[ts] - 1e-9).any()
        if not self.place_many_ok(ts, ws):  # worker types and own cloud workers
            return False
        here = b == ws
        if not self.migrates and not ((b < 0) | here).all():
            return False
        return not (here & (now < self.ready[ts] - 1e-9)).any()

    def preempt_many_ok(self, ts: np.ndarray) -> bool:
        """Would :meth:`preempt_problem` find no problem with any task of ``ts``?"""
        b = self.bound[ts]
        return not (self.layout.server_cloud[self.layout.worker_server[b]] & (b >= 0)).any()

    def preempt_problem(self, t: int) -> str | None:
        """Why a holding task may not be preempted (None: it may): not in the cloud."""
        b = int(self.bound[t])
        if b >= 0 and self.in_cloud(b):
            return "runs in the cloud, which does not preempt (Sec. III)"
        return None

    # --- changes ---------------------------------------------------------------------

    def ship_times(self, p: int, server: int, now: float, n: int) -> np.ndarray:
        """See :meth:`TaskView.ship_times`."""
        lay = self.layout
        delay = float(lay.server_delay[server])
        serial = lay.server_serial is not None and bool(lay.server_serial[server])
        if not serial:
            return np.full(n, now + delay)
        start = max(now, self._link.get((p, server), now))
        return start + delay * np.arange(1, n + 1, dtype=np.float64)

    def _bind(self, t: int, w: int, now: float) -> float:
        """Place task ``t`` on worker ``w`` at ``now`` (or move it there, migrating); return
        the time until its data is there."""
        lay = self.layout
        server = int(lay.worker_server[w])
        p = int(self.parent[t])
        if lay.server_serial is not None and lay.server_serial[server]:
            at = max(now, self._link.get((p, server), now)) + float(lay.server_delay[server])
            self._link[(p, server)] = at
            delay = at - now
        else:
            delay = float(lay.server_delay[server])
        if self.bound[t] >= 0:
            self.n_migrations[t] += 1
            self.migrate_s[t] += delay
        self.bound[t] = w
        self.ready[t] = now + delay
        self.transfer_s[t] += delay
        cloud = bool(lay.server_cloud[server])
        if self.zeta[p] == -1:
            self.zeta[p] = 1 if cloud else 0
        elif self.zeta[p] == 1 and not cloud:
            self._leave_cloud(p)
        return delay

    def _leave_cloud(self, p: int) -> None:
        """Job ``p`` is no longer wholly in the cloud: zeta_j = 0, its running tasks slow
        down at once (eq. 1)."""
        self.zeta[p] = 0
        st = self.st
        lo, hi = int(self.first[p]), int(self.first[p + 1])
        status = st.job_status[lo:hi]
        for k in np.flatnonzero((status == RUNNING) | (status == LOADING)).tolist():
            self.kernels.set_rate(lo + k, float(self.rate(p, 0)))

    def dispatch(self, t: int, w: int, now: float) -> None:
        """Place queued task ``t`` on worker ``w`` without starting it (checked)."""
        self._bind(t, w, now)

    def dispatch_many(self, ts: np.ndarray, ws: np.ndarray, now: float) -> None:
        """:meth:`dispatch` of every pair at once (checked; none placed before): the same
        ready times, transfers and zeta_j as one by one in this order."""
        lay = self.layout
        servers = lay.worker_server[ws]
        serial = lay.server_serial
        if serial is not None and serial[servers].any():
            for t, w in zip(ts.tolist(), ws.tolist(), strict=True):
                self._bind(t, w, now)
            return
        delay = lay.server_delay[servers]
        self.bound[ts] = ws
        self.ready[ts] = now + delay
        self.transfer_s[ts] += delay
        parents = self.parent[ts]
        edge = ~lay.server_cloud[servers]
        for p in np.unique(parents).tolist():  # zeta_j: as _bind, chunk after chunk
            mine = parents == p
            if self.zeta[p] == -1:
                self.zeta[p] = 0 if edge[mine].any() else 1
            elif self.zeta[p] == 1 and edge[mine].any():
                self._leave_cloud(p)

    def before_start(self, t: int, w: int, now: float) -> None:
        """Make ready to start task ``t`` on worker ``w`` (checked): place it if it is not,
        its data shipping while it holds the worker; set its rate."""
        st = self.st
        if self.bound[t] != w:  # never placed, or moving (a policy that migrates)
            st.job_load_s[t] = self._bind(t, w, now)
        p = int(self.parent[t])
        st.job_solo_rate[t] = self._rates[p, self.zeta[p]]

    def after_start(self, t: int) -> None:
        """Task ``t`` holds its worker: a later start on it ships nothing."""
        self.st.job_load_s[t] = 0.0
        p = int(self.parent[t])
        self.n_hold[p] += 1
        self._touched.add(p)
        if self._cloud_w[self.bound[t]]:
            self.cloud_busy += 1

    def start_many(self, ts: list[int], ws: list[int], now: float, start_on: Any) -> None:
        """Start every task ``ts[i]`` on worker ``ws[i]`` (checked), in that order: for each,
        :meth:`before_start`, ``start_on(t, [w], now)`` (the kernel's), :meth:`after_start`."""
        st = self.st
        load = st.job_load_s
        solo = st.job_solo_rate
        bound = self.bound
        parent = self.parent
        zeta = self.zeta
        rates = self._rates
        n_hold = self.n_hold
        cloud_w = self._cloud_w
        touched = self._touched
        one = np.zeros(1, dtype=np.int32)
        for t, w in zip(ts, ws, strict=True):
            if bound[t] != w:  # never placed, or moving (a policy that migrates)
                load[t] = self._bind(t, w, now)
            p = int(parent[t])
            solo[t] = rates[p, zeta[p]]
            one[0] = w
            start_on(t, one, now)
            load[t] = 0.0  # it holds its worker: a later start on it ships nothing
            n_hold[p] += 1
            touched.add(p)
            if cloud_w[w]:
                self.cloud_busy += 1

    def released(self, t: int, at: float, *, in_decision: bool = False) -> None:
        """Task ``t`` gave its worker back at ``at`` (finished, or preempted by a decision).

        A job left holding no worker gives its parameter server back at ``at``; within a
        decision, only at its end (:meth:`after_decision`), so that a job whose chunk is
        preempted and another started in the same decision keeps its PS (Alg. 5 line 3).
        """
        p = int(self.parent[t])
        n = self.n_hold[p] - 1
        self.n_hold[p] = n
        if self._cloud_w[self.bound[t]]:
            self.cloud_busy -= 1
        self._touched.add(p)
        self._may_drop = True
        if not in_decision and n == 0 and self.ps_server[p] >= 0:  # (_drop_idle_ps)
            self.ledger.release(p, at)
            self.ps_server[p] = -1

    def _drop_idle_ps(self, p: int, at: float) -> None:
        if self.n_hold[p] == 0 and self.ps_server[p] >= 0:
            self.ledger.release(p, at)
            self.ps_server[p] = -1

    def ps_problem(self, p: int, server: int, now: float) -> str | None:
        """Why job ``p`` may not have its parameter server on ``server`` now (the PSs of
        jobs this decision left holding no worker count as free)."""
        if self._may_drop:  # (else each is as the last call left it: nothing to drop)
            for q in self._touched:
                self._drop_idle_ps(q, now)
            self._may_drop = False
        lay = self.layout
        if not 0 <= server < lay.server_cloud.shape[0]:
            return f"unknown server {server}"
        if self.zeta[p] == 1 and not lay.server_cloud[server]:
            return "sits wholly in the cloud, so its parameter server must too (eq. 2g)"
        if self.ps_server[p] != server:
            one = self._one.copy()
            one[server] = 1
            why = self.ledger.room_problem({p: (one, one)})
            if why:
                return f"finds no free parameter-server slot on server {server}"
        return None

    def host_ps(self, p: int, server: int, now: float) -> None:
        """Give job ``p`` its parameter server on ``server`` (checked)."""
        if self.ps_server[p] == server:
            return
        one = self._one.copy()
        one[server] = 1
        self.ledger.set(p, one, one, now)
        self.ps_server[p] = server
        self._touched.add(p)
        if self.n_hold[p] == 0:
            self._may_drop = True

    def after_decision(self, now: float) -> list[int]:
        """End a decision at ``now``: jobs left holding no worker give their PS back; return
        the jobs that hold a worker but no parameter server (eq. 2e; the policy's error)."""
        bad = []
        for p in sorted(self._touched):
            self._drop_idle_ps(p, now)
            if self.n_hold[p] > 0 and self.ps_server[p] < 0:
                bad.append(p)
        self._touched.clear()
        self._may_drop = False
        return bad
