"""Pieces the edge-cloud policies share: parameter-server assignment (A_ps) and job-level
(gang) scheduling of chunk jobs.

N. Wang, R. Zhou, L. Jiao, R. Zhang, B. Li and Z. Li, "Preemptive Scheduling for
Distributed Machine Learning Jobs in Edge-Cloud Networks", IEEE JSAC, 2022.

* :func:`assign_ps` is Alg. 5 (A_ps): at each slot a job that has a chunk on a worker
  keeps the PS it had (line 3-4), and otherwise gets one picked uniformly at random among
  the eligible ones (line 6): a free PS slot on any server, in the cloud for a job wholly
  there (eq. 2g). Every policy of the family uses it, since the engine refuses a running
  job without a PS (eq. 2e) and the paper proves the PS choice does not change the
  objective (Sec. IV-D).
* :class:`JobLevel` runs the paper's job-level baselines (SRTF [16], Tiresias-L [13]):
  "all-or-nothing resource allocation, which suspends or resumes an entire job" (Sec.
  V-A). The paper says no more of how such a scheduler maps chunks to workers; what its
  comparison implies, and the reading here:

  - **Allowance.** A job asks for a fixed number k_j of workers of its type, "the
    non-elastic job requirement" (Sec. V-C), and trains k_j chunks at a time, one per
    worker (constraint 2c allows every schedule up to D_j). By default (``workers =
    "chunks"``) k_j = min(D_j, the edge's workers of its type): the most the job could
    use there, so that the baselines are handicapped by all-or-nothing and job-level
    preemption, as the paper says ("the under-utilization of resources in SRTF and
    Tiresias-L results from the non-elastic job requirement"), not by being denied the
    parallelism A_online gets. ``workers = "trace"`` gives k_j = ``gang_workers`` (the
    Philly GPU count the workload writes, "the worker requirement of each job is computed
    according to the number of GPUs of the real trace", Sec. V-A; k = 1 for most jobs), an
    ablation. As chunks finish k shrinks to the chunks left.
  - **All or nothing.** At every decision the jobs are taken in the policy's priority
    order and each gets all of its k workers of its type or none (a job that does not fit
    is skipped); a job left out is paused whole (its running chunks preempted).
  - **Migration** (``migrate``, default true). A job-level scheduler resumes a job on
    whatever workers are free, "migrating jobs' datasets among different servers" (Sec.
    I) -- the data migration A_online avoids (Sec. V-B, Fig. 6). A paused chunk resumes
    on its own worker if that is free, else on another of its type, its data shipped
    again (that server's delay, a load phase; the policy declares ``migrates``). New
    chunks take idle workers first, then those freed by paused jobs, lowest delay first,
    each shipped as it starts. ``migrate = false``: a chunk that trained stays on its
    worker, and its job waits for it (an ablation).
  - **Where** (``edge_only``, default true). SRTF [16] and Tiresias [13] are GPU-cluster
    schedulers; the paper pairs them with A_online-E (edge only) against A_online and
    BatchSche (which use the cloud) when it explains Fig. 8 ("the JCT rates of A_online
    and BatchSche get larger. On the contrary, the JCT rates of A_online-E and Tiresias-L
    become smaller", Sec. V-C) and compares schedulers "in their category". With
    ``edge_only = false`` (an ablation) a job that has started no chunk and finds no room
    on the edge goes to the cloud and stays there, never paused: k chunks at a time on an
    unbounded cloud, or as many of its k as a bounded cloud has idle workers of its type.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from gpusched.core.policy import Decision, HostPS, Preempt, Start
from gpusched.core.state import QUEUED
from gpusched.errors import PolicyError

__all__ = ["WORKER_RULES", "JobLevel", "assign_ps"]


def assign_ps(
    view: Any,
    rng: np.random.Generator,
    started: Iterable[int],
    preempted: Iterable[int] = (),
    in_cloud: Iterable[int] = (),
) -> list[HostPS]:
    """A_ps (Alg. 5): a PS for each job that holds a worker after the decision and has none.

    ``started`` and ``preempted`` are the decision's task Starts and Preempts: a job keeps
    the PS it had while a chunk of it holds a worker (lines 3-4); a job left holding none
    gives it back; a job that starts holding one gets a PS picked uniformly at random among
    the eligible ones (line 6): a free slot on any server, in the cloud for a job wholly
    there (eq. 2g). ``in_cloud``: jobs this decision places wholly in the cloud (their
    zeta_j is not 1 in the view until the engine applies the decision). The work is in the
    decision's actions, not in the jobs running (``view.tasks.n_hold``).
    """
    tv = view.tasks
    parent = tv.parent
    gain = {int(parent[t]) for t in started}
    drop: dict[int, int] = {}
    for t in preempted:
        p = int(parent[t])
        drop[p] = drop.get(p, 0) + 1
    ps_server = tv.ps_server
    need = sorted(p for p in gain if ps_server[p] < 0)
    if not need:
        return []
    free = np.array(tv.ps_free, copy=True)
    for p, n in drop.items():
        if p not in gain and ps_server[p] >= 0 and tv.n_hold[p] - n <= 0:
            free[ps_server[p]] += 1  # its chunks all stop now: its PS is given back
    wholly = set(in_cloud)
    cloud = np.flatnonzero(tv.server_cloud)
    out = []
    for p in need:
        if tv.zeta[p] == 1 or p in wholly:
            pool = cloud
        else:
            pool = np.flatnonzero(free >= 1)
        if pool.size == 0:
            continue  # the engine reports the job without a PS
        s = int(rng.choice(pool))  # line 6: a random eligible PS
        free[s] -= 1
        out.append(HostPS(p, s))
    return out


class _Free:
    """Workers free for a decision's chosen jobs, in order of preference; taken once."""

    __slots__ = ("_members", "at", "left", "order", "taken")

    def __init__(self, order: list[int]) -> None:
        self.order = order
        self.taken: set[int] = set()
        self.at = 0  # everything before this is taken
        self.left = len(order)
        self._members = set(order)

    def has(self, w: int) -> bool:
        return w in self._members and w not in self.taken

    def take(self, w: int) -> None:
        self.taken.add(w)
        self.left -= 1

    def first(self, avoid: int = -1) -> int:
        """Take the first free worker other than ``avoid`` (-1: none left)."""
        order, taken = self.order, self.taken
        while self.at < len(order) and order[self.at] in taken:
            self.at += 1
        for i in range(self.at, len(order)):
            w = order[i]
            if w != avoid and w not in taken:
                self.take(w)
                return w
        return -1


#: ``workers`` rules of :class:`JobLevel`
WORKER_RULES = ("chunks", "trace")


class JobLevel:
    """A job-level (gang) scheduler of chunk jobs (see the module doc).

    Parameters
    ----------
    key
        ``key(view, jobs) -> array``: the priority of each job of ``jobs`` (an index array
        of ``view.tasks``' jobs), smaller first; ties go to the earlier job. It may read
        :meth:`left`, :meth:`attained` and :meth:`k_now`.
    rng
        For the PS choice.
    workers
        k_j: ``"chunks"`` (min(D_j, edge workers of its type)) or ``"trace"``
        (``gang_workers``).
    migrate
        Paused chunks may resume on another worker of their type (their data shipped
        again).
    edge_only
        Never use the cloud.
    clairvoyant
        The key reads :meth:`left` (the work left: a policy that knows durations); else
        the work is not tracked (a non-clairvoyant policy may not read it).
    static_keys
        The key of a job that holds no worker does not change, and a running job's only
        falls (SRTF's remaining time): then the jobs of a worker type that nothing happened
        to (no arrival, no chunk finished) keep their schedule, and a decision looks only at
        the types something happened to (the same schedules, a decision's work in
        proportion to its events).
    levels
        ``levels(view, jobs) -> array``: for a key that changes only in steps while a job
        runs (Tiresias-L's queue level), the step of each job; with ``static_keys``, a type
        whose running jobs changed step is decided again too.
    """

    def __init__(
        self,
        key: Callable[[Any, np.ndarray], np.ndarray],
        rng: np.random.Generator,
        *,
        workers: str = "chunks",
        migrate: bool = True,
        edge_only: bool = True,
        clairvoyant: bool = True,
        static_keys: bool = False,
        levels: Callable[[Any, np.ndarray], np.ndarray] | None = None,
    ) -> None:
        if workers not in WORKER_RULES:
            raise ValueError(f"workers must be one of {WORKER_RULES}, got {workers!r}")
        self.key = key
        self.rng = rng
        self.rule = workers
        self.migrate = migrate
        self.edge_only = edge_only
        self.clairvoyant = clairvoyant
        self.static_keys = static_keys
        self.levels = levels
        self._level: np.ndarray | None = None  # each job's step when last decided
        self.touched: set[int] = set()  # worker types with an arrival or a finished chunk
        self.wake_types: dict[int, float] = {}  # type -> when a paused chunk's data is there
        self.ready = False
        self.wake = np.inf
        #: jobs with chunks left -> their chunks started and not finished
        self.begun: dict[int, set[int]] = {}
        #: jobs placed in the cloud (never paused there)
        self.cloud_jobs: set[int] = set()

    # --- set-up --------------------------------------------------------------------------

    def _setup(self, view: Any) -> None:
        tv = view.tasks
        n = tv.n_parents
        first = np.asarray(tv.first, dtype=np.int64)
        self.lo = first[:-1]
        self.hi = first[1:]
        self.ptr = self.lo.copy()  # each job's next chunk never started
        self.n_begun = np.zeros(n, dtype=np.int64)
        self.kind = np.asarray(tv.task_type)[self.lo].astype(np.int64)
        self.rem_s = np.zeros(n)  # work left of the chunks not holding a worker
        self.exe_s = np.zeros(n)  # time trained by the chunks not holding a worker
        self.k_job = np.ones(n, dtype=np.int64)
        self.rate0 = np.array([tv.rate(j, 0) for j in range(n)], dtype=np.float64)
        self.live = np.empty(0, dtype=np.int64)  # jobs arrived and not done, ascending
        self.in_cloud = np.asarray(tv.server_cloud)[np.asarray(tv.worker_server)]
        edge = np.asarray(tv.edge_workers)
        clouds = np.asarray(tv.cloud_workers)
        delay = np.asarray(tv.server_delay)[np.asarray(tv.worker_server)]
        n_types = len(tv.types)
        #: per type: edge workers, lowest transmission delay first; a bounded cloud's
        self.edge_of = []
        self.cloud_of = []
        for ty in range(n_types):
            mine = edge[tv.worker_type[edge] == ty]
            self.edge_of.append(mine[np.argsort(delay[mine], kind="stable")])
            self.cloud_of.append(clouds[tv.worker_type[clouds] == ty])
        self.n_edge = np.array([w.size for w in self.edge_of], dtype=np.int64)
        self.unbounded = bool(tv.unbounded_cloud)
        # k_j of every job of the trace (the rule needs no duration: D_j and the cluster)
        d = self.hi - self.lo
        on_edge = self.n_edge[self.kind]
        cloud = np.array([self.uses_cloud(int(ty)) for ty in self.kind], dtype=bool)
        if self.rule == "chunks":
            k = np.where(on_edge > 0, np.minimum(d, on_edge), d)
        else:
            k = np.minimum(np.asarray(tv.gang, dtype=np.int64), d)
            k = np.where(cloud, k, np.minimum(k, on_edge))
        self.k_job = np.maximum(1, k)
        self.ready = True

    def _arrive(self, view: Any, p: int) -> None:
        """Job ``p`` arrives: its requirement k_j and sums."""
        tv = view.tasks
        lo, hi = int(self.lo[p]), int(self.hi[p])
        ty = int(self.kind[p])
        if self.n_edge[ty] == 0 and not self.uses_cloud(ty):
            raise PolicyError(
                f"job '{tv.job_id[p]}' needs workers of type '{tv.types[ty]}' and the edge "
                "has none" + ("" if self.edge_only else " (nor has the cloud)")
            )
        if self.clairvoyant:
            self.rem_s[p] = float(np.sum(view.job_remaining[lo:hi]))
        self.begun[p] = set()
        self.live = np.insert(self.live, np.searchsorted(self.live, p), p)

    def uses_cloud(self, ty: int) -> bool:
        """May jobs of type ``ty`` go to the cloud (there is one with such workers, and not
        ``edge_only``)?"""
        if self.edge_only:
            return False
        return self.unbounded or self.cloud_of[ty].size > 0

    # --- what keys read ------------------------------------------------------------------

    def k_now(self, jobs: np.ndarray) -> np.ndarray:
        """How many workers each job runs on at once: k_j, at most its chunks left."""
        left = self.hi[jobs] - self.ptr[jobs] + self.n_begun[jobs]
        out: np.ndarray = np.maximum(1, np.minimum(self.k_job[jobs], left))
        return out

    def _live_sums(self, view: Any, values: np.ndarray) -> np.ndarray:
        run = view.running
        return np.bincount(view.tasks.parent[run], weights=values[run], minlength=self.lo.shape[0])

    def left(self, view: Any, jobs: np.ndarray) -> np.ndarray:
        """Work each job has left (s at zeta_j = 1; its chunks never started count whole)."""
        out: np.ndarray = self.rem_s[jobs] + self._live_sums(view, view.job_remaining)[jobs]
        return out

    def attained(self, view: Any, jobs: np.ndarray) -> np.ndarray:
        """Worker-time each job's chunks have trained (Tiresias's attained service), s."""
        exe = np.asarray(view.job_executed, dtype=np.float64)
        out: np.ndarray = self.exe_s[jobs] + self._live_sums(view, exe)[jobs]
        return out

    # --- events --------------------------------------------------------------------------

    def _take_events(self, view: Any) -> None:
        """Arrivals join; finished chunks leave (and a job with its last one)."""
        tv = view.tasks
        for p in sorted({int(tv.parent[t]) for t in view.arrived.tolist()}):
            self._arrive(view, p)
            self.touched.add(int(self.kind[p]))
        exe = view.job_executed
        done = []
        for t in view.finished.tolist():
            p = int(tv.parent[t])
            self.touched.add(int(self.kind[p]))
            self.begun[p].discard(t)
            self.n_begun[p] -= 1
            self.exe_s[p] += float(exe[t])
            if self.n_begun[p] == 0 and self.ptr[p] == self.hi[p]:
                done.append(p)
        if done:
            for p in done:
                del self.begun[p]
                self.cloud_jobs.discard(p)
            gone = np.searchsorted(self.live, np.asarray(done, dtype=np.int64))
            self.live = np.delete(self.live, gone)  # (live is sorted; done are in it)

    def _start(self, view: Any, t: int, w: int, acts: list[Any], started: list[int]) -> None:
        p = int(view.tasks.parent[t])
        if self.clairvoyant:
            self.rem_s[p] -= float(view.job_remaining[t])
        self.exe_s[p] -= float(view.job_executed[t])
        self._to_w.append(w)  # one Start of all the decision's tasks (decide)
        started.append(t)

    def _preempt(self, view: Any, t: int, acts: list[Any], preempted: list[int]) -> None:
        p = int(view.tasks.parent[t])
        if self.clairvoyant:
            self.rem_s[p] += float(view.job_remaining[t])
        self.exe_s[p] += float(view.job_executed[t])
        preempted.append(t)  # one Preempt of all the decision's (decide)

    def _new_chunk(self, p: int) -> int:
        t = int(self.ptr[p])
        self.ptr[p] += 1
        self.n_begun[p] += 1
        self.begun[p].add(t)
        return t

    # --- the decision --------------------------------------------------------------------

    def decide(self, view: Any, now: float) -> Decision:
        if not self.ready:
            self._setup(view)
        self.wake = np.inf  # a paused chunk's data still in transit: decide again then
        self._take_events(view)
        live = self.live
        if live.size == 0:
            return Decision()
        acts: list[Any] = []
        started: list[int] = []
        preempted: list[int] = []
        self._to_w: list[int] = []  # the workers of ``started``'s tasks
        if self.migrate and self.static_keys:  # only the types something happened to
            due = [ty for ty, at in self.wake_types.items() if at <= now + 1e-9]
            for ty in due:
                del self.wake_types[ty]
            touched = self.touched
            touched.update(due)
            if self.levels is not None:  # a running job stepped to another level
                run = view.running
                if run.size:
                    n_jobs = self.lo.shape[0]
                    jobs = np.flatnonzero(np.bincount(view.tasks.parent[run], minlength=n_jobs))
                    now_level = self.levels(view, jobs)
                    if self._level is None:
                        self._level = np.zeros(self.lo.shape[0], dtype=np.int64)
                    moved = jobs[now_level != self._level[jobs]]
                    self._level[jobs] = now_level
                    touched.update(self.kind[moved].tolist())
            mask = np.zeros(len(self.edge_of), dtype=bool)
            mask[list(touched)] = True
            touched.clear()
            live = live[mask[self.kind[live]]]
        else:
            mask = np.ones(len(self.edge_of), dtype=bool)
        order = live[np.argsort(self.key(view, live), kind="stable")] if live.size else live
        edge_jobs = order[~np.isin(order, list(self.cloud_jobs))] if self.cloud_jobs else order
        if self.migrate:
            chosen = self._fill_counts(edge_jobs)
            self._assign_moving(view, now, chosen, acts, started, preempted, mask)
        else:
            self._fill_pinned(view, now, edge_jobs, acts, started, preempted)
        if not self.edge_only:
            self._run_cloud(view, order, acts, started)
        if preempted:  # (nothing else in acts: a Preempt of them all, then a Start)
            acts.append(Preempt(np.asarray(preempted, dtype=np.int64)))
        if started:  # after the Preempts, which free workers: as if each came first
            acts.append(Start(np.asarray(started, dtype=np.int64), np.asarray(self._to_w)))
        acts += assign_ps(view, self.rng, started, preempted, self.cloud_jobs)
        wake, self.wake = self.wake, np.inf
        return Decision(actions=acts, wake_at=None if wake == np.inf else wake)

    def _wait_for(self, ty: int, at: float) -> None:
        """Decide again at ``at`` (a paused chunk of type ``ty`` gets its data then)."""
        self.wake = min(self.wake, at)
        self.wake_types[ty] = min(self.wake_types.get(ty, np.inf), at)

    def _to_cloud(self, p: int) -> bool:
        """Job ``p`` found no room on the edge: the cloud takes it if it started nothing."""
        if self.ptr[p] == self.lo[p] and self.uses_cloud(int(self.kind[p])):
            self.cloud_jobs.add(p)
            return True
        return False

    def _fill_counts(self, jobs: np.ndarray) -> list[int]:
        """All-or-nothing in priority order, by worker counts per type (chunks may move):
        the jobs that run, in priority order."""
        kk = self.k_now(jobs)
        kinds = self.kind[jobs]
        chosen_pos: list[int] = []
        by_kind = np.argsort(kinds, kind="stable")  # grouped by type, each in priority order
        cuts = np.flatnonzero(np.diff(kinds[by_kind])) + 1
        for pos in np.split(by_kind, cuts) if jobs.size else ():
            ty = int(kinds[pos[0]])
            ks = kk[pos]
            cap = int(self.n_edge[ty])
            i = 0
            while cap > 0 and i < pos.size:
                fits = np.flatnonzero(ks[i:] <= cap)
                if fits.size == 0:
                    break
                i += int(fits[0])
                chosen_pos.append(int(pos[i]))
                cap -= int(ks[i])
                i += 1
        chosen_pos.sort()
        if not self.edge_only:  # the rest that started nothing go to the cloud
            skipped = np.ones(jobs.size, dtype=bool)
            skipped[chosen_pos] = False
            for p in jobs[skipped].tolist():
                self._to_cloud(p)
        return [int(jobs[i]) for i in chosen_pos]

    def _assign_moving(
        self,
        view: Any,
        now: float,
        chosen: list[int],
        acts: list[Any],
        started: list[int],
        preempted: list[int],
        types: np.ndarray,
    ) -> None:
        """Workers for the chosen jobs: running chunks stay; paused ones resume on their
        worker if free, else move; new chunks take free workers (module doc). Only jobs of
        ``types`` (a mask) are decided."""
        tv = view.tasks
        status = view.job_status
        parent = tv.parent
        holder = view.gpu_job[:, 0]
        keep = np.zeros(self.lo.shape[0], dtype=bool)
        keep[chosen] = True
        free: dict[int, _Free] = {}
        for ty in sorted({int(self.kind[p]) for p in chosen}):
            ws = self.edge_of[ty]
            h = holder[ws]
            idle = ws[h < 0]
            busy = ws[h >= 0]
            gone = busy[~keep[parent[holder[busy]]]]
            free[ty] = _Free(idle.tolist() + gone.tolist())
        run = view.running
        if run.size:  # jobs left out are paused whole (not in the cloud)
            par = parent[run]
            out = ~keep[par] & ~self.in_cloud[tv.bound[run]] & types[self.kind[par]]
            for t in run[out].tolist():
                self._preempt(view, t, acts, preempted)
        kk = self.k_now(np.asarray(chosen, dtype=np.int64)).tolist()
        ready = tv.ready
        n_hold = tv.n_hold.tolist()  # per job, its chunks holding a worker (all begun)
        for p, k in zip(chosen, kk, strict=True):
            mine = free[int(self.kind[p])]
            begun = self.begun[p]
            # every begun chunk holds a worker: none paused (no need to look at each)
            paused = (
                [] if len(begun) == n_hold[p] else sorted(t for t in begun if status[t] == QUEUED)
            )
            need = k - (len(begun) - len(paused))
            for t in paused[:need]:
                w = int(tv.bound[t])
                here = ready[t] <= now + 1e-9  # (preempted while its data was shipping)
                if here and mine.has(w):
                    mine.take(w)  # its data is there
                else:
                    w = mine.first(avoid=w)  # it moves: its data ships again
                    if w < 0:  # its own worker is the only one left: wait for the data
                        self._wait_for(int(self.kind[p]), float(ready[t]))
                        continue
                self._start(view, t, w, acts, started)
                need -= 1
            for _ in range(min(need, mine.left)):
                if self.ptr[p] == self.hi[p]:
                    break
                self._start(view, self._new_chunk(p), mine.first(), acts, started)

    def _fill_pinned(
        self,
        view: Any,
        now: float,
        order: np.ndarray,
        acts: list[Any],
        started: list[int],
        preempted: list[int],
    ) -> None:
        """All-or-nothing in priority order when chunks never move: a job runs only if the
        workers of its paused chunks are free for it."""
        tv = view.tasks
        status = view.job_status
        taken = np.zeros(tv.worker_type.shape[0], dtype=bool)
        chosen: dict[int, list[int]] = {}  # job -> idle edge workers it gets for new chunks
        kk = self.k_now(order).tolist()
        ready = tv.ready
        for p, k in zip(order.tolist(), kk, strict=True):
            pinned = [int(tv.bound[t]) for t in self.begun[p]]  # its chunks stay there
            shipping = [
                float(ready[t]) for t in self.begun[p] if status[t] == QUEUED and ready[t] > now
            ]
            if shipping:  # preempted while its data was shipping: wait for it
                self._wait_for(int(self.kind[p]), min(shipping))
                continue
            if taken[pinned].any():
                if not self.edge_only:
                    self._to_cloud(p)
                continue
            more = min(k - len(pinned), int(self.hi[p] - self.ptr[p]))
            ws: list[int] = []
            if more > 0:
                taken[pinned] = True  # not for new chunks of its own
                cand = self.edge_of[int(self.kind[p])]
                cand = cand[~taken[cand]]
                taken[pinned] = False
                if cand.size < more:
                    if not pinned and not self.edge_only:
                        self._to_cloud(p)
                    continue
                # idle workers first (a worker of a lower-priority job only when they run
                # out: preempting pins that job's chunk there), then lowest delay
                busy = view.gpu_n_jobs[cand] > 0
                ws = cand[np.argsort(busy, kind="stable")[:more]].tolist()
            taken[pinned + ws] = True
            chosen[p] = ws
        for t in view.running.tolist():
            p = int(tv.parent[t])
            if p not in chosen and not self.in_cloud[tv.bound[t]]:
                self._preempt(view, t, acts, preempted)
        for p, ws in chosen.items():
            for t in sorted(self.begun[p]):  # paused chunks resume where their data is
                if status[t] == QUEUED:
                    self._start(view, t, int(tv.bound[t]), acts, started)
            for w in ws:
                if self.ptr[p] == self.hi[p]:
                    break
                self._start(view, self._new_chunk(p), w, acts, started)

    def _run_cloud(self, view: Any, order: np.ndarray, acts: list[Any], started: list[int]) -> None:
        """Cloud jobs in priority order: k chunks at a time (an unbounded cloud), or as many
        as the bounded cloud's idle workers of their type allow; never paused there."""
        if not self.cloud_jobs:
            return
        tv = view.tasks
        status = view.job_status
        idle: dict[int, list[int]] = {}
        for p in order.tolist():
            if p not in self.cloud_jobs:
                continue
            running = sum(1 for t in self.begun[p] if status[t] != QUEUED)
            more = int(self.k_now(np.asarray([p]))[0]) - running
            ty = int(self.kind[p])
            for _ in range(max(0, more)):
                if self.ptr[p] == self.hi[p]:
                    break
                if self.unbounded:
                    t = self._new_chunk(p)
                    self._start(view, t, tv.cloud_worker(t), acts, started)
                    continue
                if ty not in idle:
                    ws = self.cloud_of[ty]
                    idle[ty] = ws[view.gpu_n_jobs[ws] == 0].tolist()
                if not idle[ty]:
                    break
                self._start(view, self._new_chunk(p), idle[ty].pop(0), acts, started)


def tie_q(x: float) -> float:
    """Q rounded to 32 significant bits, for comparisons: values equal but for the last
    bits of float rounding (eq. 5's terms summed in another order) tie, and a tie goes to
    the lower index."""
    if x == 0.0 or not math.isfinite(x):
        return x
    m, e = math.frexp(x)
    return math.ldexp(round(m * 4294967296.0), e - 32)


def tie_q_many(x: np.ndarray) -> np.ndarray:
    """:func:`tie_q` of every value of ``x`` (the same values: frexp, ldexp and rounding
    half to even are exact in both)."""
    m, e = np.frexp(x)
    out: np.ndarray = np.ldexp(np.round(m * 4294967296.0), e - 32)
    return out


class ChunkRows:
    """Every worker's unfinished chunks, one row per worker (in no order), for eq. 5.

    ``ids[r, :n[r]]`` are the chunks placed on the worker of row ``r = of[w]`` (the edge's
    and a bounded cloud's workers; an unbounded cloud's have none) and not finished; a
    chunk's slot is ``slot[t]``. HAPRF's order (key, then chunk) is applied where it
    matters: the next chunk a worker takes (a heap per worker of its ready chunks) and
    the reference walk of eq. 5 in :mod:`policies.a_online`; eq. 5's sums do not depend
    on it, so the policy's ``q_many`` evaluates them for all of a job's candidate workers
    at once over these rows.
    """

    __slots__ = ("ids", "n", "of", "slot")

    def __init__(self, workers: np.ndarray, n_workers: int, n_tasks: int) -> None:
        self.of = np.full(n_workers, -1, dtype=np.int64)
        self.of[workers] = np.arange(workers.shape[0])
        self.ids = np.full((workers.shape[0], 8), -1, dtype=np.int64)
        self.n = np.zeros(workers.shape[0], dtype=np.int64)
        self.slot = np.full(n_tasks, -1, dtype=np.int64)

    def row(self, w: int) -> np.ndarray:
        r = self.of[w]
        return self.ids[r, : self.n[r]]

    def insert(self, w: int, t: int) -> None:
        w = int(self.of[w])
        k = int(self.n[w])
        if k == self.ids.shape[1]:  # full: twice the room for every worker
            more = np.full_like(self.ids, -1)
            self.ids = np.concatenate([self.ids, more], axis=1)
        self.ids[w, k] = t
        self.slot[t] = k
        self.n[w] = k + 1

    def remove(self, w: int, t: int) -> None:
        w = int(self.of[w])
        k = int(self.slot[t])
        last = int(self.n[w]) - 1
        moved = int(self.ids[w, last])
        self.ids[w, k] = moved
        self.slot[moved] = k
        self.ids[w, last] = -1
        self.slot[t] = -1
        self.n[w] = last
