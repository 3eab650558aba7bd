"""Pieces the edge-cloud policies share: parameter-server assignment (A_ps) and job-level
(gang) scheduling of chunk jobs on the edge.

N. Wang, R. Zhou, L. Jiao, R. Zhang, B. Li and Z. Li, "Preemptive Scheduling for
Distributed Machine Learning Jobs in Edge-Cloud Networks", IEEE JSAC, 2022.

* :func:`assign_ps` is Alg. 5 (A_ps): at each slot a job that has a chunk on a worker
  keeps the PS it had (line 3-4), and otherwise gets one picked uniformly at random among
  the eligible ones (line 6): a free PS slot on any server, in the cloud for a job wholly
  there (eq. 2g). Every policy of the family uses it, since the engine refuses a running
  job without a PS (eq. 2e) and the paper proves the PS choice does not change the
  objective (Sec. IV-D).
* :class:`JobLevel` runs the paper's job-level baselines (SRTF [16], Tiresias-L [13]):
  "all-or-nothing resource allocation, which suspends or resumes an entire job". The
  paper does not say how such a scheduler maps chunks to workers or uses the cloud; a
  careful reading gives: a job asks for k = ``gang_workers`` workers of its type (its GPU
  count in the source trace; "the non-elastic job requirement"), at most the chunks it
  has left, and trains k chunks at a time, one per worker. At every decision the jobs are
  taken in the policy's priority order and each gets all of its k workers or none: the
  workers of its paused chunks (a chunk that has trained never migrates, so it resumes
  where its data is) plus edge workers of its type for new chunks, each shipped when it
  starts there (the worker held meanwhile): idle ones first, lowest transmission delay
  first, and only then workers of lower-priority jobs, which are paused whole. A job that has started no chunk and finds no room on the edge goes
  to the cloud (unbounded: k chunks at a time there, never paused: the cloud does not
  preempt), or, with ``edge_only`` (or without a cloud), waits. Without a cloud a job's k
  is also capped at the edge's workers of its type.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from gpusched.core.policy import Decision, HostPS, Preempt, Start
from gpusched.core.state import LOADING, QUEUED, RUNNING

__all__ = ["JobLevel", "assign_ps", "holding_after"]


def holding_after(view: Any, started: Iterable[int], preempted: Iterable[int]) -> set[int]:
    """Jobs with a chunk on a worker once a decision's starts and preemptions are applied."""
    tv = view.tasks
    gone = set(preempted)
    hold = {int(tv.parent[t]) for t in view.running.tolist() if t not in gone}
    hold.update(int(tv.parent[t]) for t in started)
    return hold


def assign_ps(
    view: Any,
    rng: np.random.Generator,
    holding: Iterable[int],
    in_cloud: Iterable[int] = (),
) -> list[HostPS]:
    """A_ps (Alg. 5): a PS for each job of ``holding`` that has none (see module doc).

    ``in_cloud``: jobs this decision places wholly in the cloud (their zeta_j is not 1 in
    the view until the engine applies the decision).
    """
    wholly = set(in_cloud)
    tv = view.tasks
    holding = set(holding)
    free = np.array(tv.ps_free, copy=True)
    for p in np.flatnonzero(np.asarray(tv.ps_server) >= 0).tolist():
        if p not in holding:  # its chunks all stop now: its PS is given back
            free[tv.ps_server[p]] += 1
    cloud = np.flatnonzero(tv.server_cloud)
    out = []
    for p in sorted(holding):
        if tv.ps_server[p] >= 0:
            continue  # line 3-4: it ran in the previous slot and keeps its PS
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


class JobLevel:
    """A job-level (gang) scheduler of chunk jobs (see the module doc).

    Parameters
    ----------
    key
        ``key(view, jobs) -> array``: the priority of each job of ``jobs`` (an index array
        of ``view.tasks``' jobs), smaller first; ties go to the earlier job.
    rng
        For the PS choice.
    edge_only
        Never use the cloud.
    """

    def __init__(
        self,
        key: Callable[[Any, np.ndarray], np.ndarray],
        rng: np.random.Generator,
        *,
        edge_only: bool = False,
    ) -> None:
        self.key = key
        self.rng = rng
        self.edge_only = edge_only
        #: jobs with chunks left -> their chunks never started, in order
        self.todo: dict[int, list[int]] = {}
        #: jobs with chunks left -> chunks started and not finished (bound to a worker)
        self.begun: dict[int, set[int]] = {}
        #: jobs placed in the cloud (never paused there)
        self.cloud_jobs: set[int] = set()
        self._by_type: dict[int, np.ndarray] = {}
        self._cloud = False

    def workers_of(self, view: Any, p: int) -> np.ndarray:
        """The edge workers of job ``p``'s type, lowest transmission delay first."""
        tv = view.tasks
        kind = int(tv.task_type[tv.first[p]])
        got = self._by_type.get(kind)
        if got is None:
            edge = np.asarray(tv.edge_workers)
            got = edge[tv.worker_type[edge] == kind]
            got = got[np.argsort(tv.server_delay[tv.worker_server[got]], kind="stable")]
            self._by_type[kind] = got
        return np.asarray(got)

    def uses_cloud(self, view: Any) -> bool:
        """May jobs go to the cloud (there is one, and not ``edge_only``)?"""
        return not self.edge_only and view.tasks.cloud_worker(0) >= 0

    def size(self, view: Any, p: int) -> int:
        """How many workers job ``p`` runs on at once (k, at most its chunks left)."""
        tv = view.tasks
        k = min(int(tv.gang[p]), len(self.todo[p]) + len(self.begun[p]))
        if not self._cloud:
            k = min(k, self.workers_of(view, p).size)
        return int(max(1, k))

    def _take_events(self, view: Any) -> None:
        """Arrivals join; finished chunks leave (and a job with its last one)."""
        tv = view.tasks
        for t in view.arrived.tolist():
            p = int(tv.parent[t])
            self.todo.setdefault(p, []).append(t)
            self.begun.setdefault(p, set())
        for t in view.finished.tolist():
            p = int(tv.parent[t])
            self.begun[p].discard(t)
            if not self.begun[p] and not self.todo[p]:
                del self.begun[p], self.todo[p]
                self.cloud_jobs.discard(p)

    def decide(self, view: Any, now: float) -> Decision:
        tv = view.tasks
        status = view.job_status
        self._cloud = self.uses_cloud(view)
        self._take_events(view)
        jobs = np.fromiter(self.todo, dtype=np.int64, count=len(self.todo))
        if jobs.size == 0:
            return Decision()
        jobs.sort()
        order = jobs[np.argsort(self.key(view, jobs), kind="stable")]
        taken = np.zeros(tv.worker_type.shape[0], dtype=bool)
        chosen: dict[int, list[int]] = {}  # job -> idle edge workers it gets for new chunks
        for p in order.tolist():
            k = self.size(view, p)
            if p in self.cloud_jobs:
                chosen[p] = []
                continue
            pinned = [int(tv.bound[t]) for t in self.begun[p]]  # its chunks stay there
            if taken[pinned].any():
                continue
            more = min(k - len(pinned), len(self.todo[p]))
            ws: list[int] = []
            if more > 0:
                taken[pinned] = True  # not for new chunks of its own
                cand = self.workers_of(view, p)
                cand = cand[~taken[cand]]
                taken[pinned] = False
                if cand.size < more:
                    if not pinned and self._cloud:
                        self.cloud_jobs.add(p)  # finds no room on the edge: the cloud takes it
                        chosen[p] = []
                    continue
                # idle workers first (a worker of a lower-priority job only when they run
                # out: preempting pins that job's chunk there), then lowest delay
                busy = view.gpu_n_jobs[cand] > 0
                ws = cand[np.argsort(busy, kind="stable")[:more]].tolist()
            taken[pinned + ws] = True
            chosen[p] = ws
        actions: list[Any] = []
        preempted = []
        for t in view.running.tolist():
            if int(tv.parent[t]) not in chosen and status[t] in (RUNNING, LOADING):
                actions.append(Preempt(t))
                preempted.append(t)
        started: list[int] = []
        for p, ws in chosen.items():
            for t in sorted(self.begun[p]):  # paused chunks resume where their data is
                if status[t] == QUEUED:
                    actions.append(Start(t, np.asarray([int(tv.bound[t])])))
                    started.append(t)
            if p in self.cloud_jobs:  # k chunks at a time, each on its own cloud worker
                busy = sum(1 for t in self.begun[p] if status[t] != QUEUED)
                ws = [-1] * max(0, self.size(view, p) - busy)
            for w in ws:
                if not self.todo[p]:
                    break
                t = self.todo[p].pop(0)  # ships now, holding its worker (a load phase)
                self.begun[p].add(t)
                actions.append(Start(t, np.asarray([w if w >= 0 else tv.cloud_worker(t)])))
                started.append(t)
        holding = holding_after(view, started, preempted)
        actions += assign_ps(view, self.rng, holding, self.cloud_jobs)
        return Decision(actions=actions)
