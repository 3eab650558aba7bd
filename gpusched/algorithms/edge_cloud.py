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
  count in the source trace; "the non-elastic job requirement"), at most D_j. At every
  decision the jobs are taken in the policy's priority order. A job not started yet gets
  k idle edge workers of its type (lowest transmission delay first) if there are that
  many; else it goes to the cloud (unbounded, so it never waits; k chunks at a time
  there too), or, with ``edge_only`` (or without a cloud), waits. At its first start its
  chunks are dealt to its k workers round robin and shipped at once; each worker then
  trains its chunks one after the other. A started edge job runs only if all of its
  workers that still have chunks are free of higher-priority jobs: its chunks never
  migrate, so a job paused whole by higher-priority ones resumes on the same workers.
  Cloud jobs are never paused (the cloud does not preempt). Without a cloud a job's k is
  also capped at the edge's workers of its type.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from gpusched.policy import Decision, Dispatch, HostPS, Preempt, Start
from gpusched.state import LOADING, QUEUED, RUNNING

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
    """A job-level (gang) scheduler of chunk jobs on the edge (see module doc).

    Parameters
    ----------
    key
        ``key(view, jobs) -> array``: the priority of each job of ``jobs`` (an index array
        of ``view.tasks``' jobs), smaller first; ties go to the earlier job.
    rng
        For the PS choice.
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
        #: jobs placed in the cloud (their lanes are keyed -1, -2, ...)
        self.cloud_jobs: set[int] = set()
        #: chunk -> the key of its lane: its edge worker, or -1 - i for cloud lane i
        self.lane_of: dict[int, int] = {}
        #: jobs arrived with chunks left -> how many chunks they have left
        self.n_left: dict[int, int] = {}
        #: started jobs -> worker -> its chunks still to train there, in order
        self.left: dict[int, dict[int, list[int]]] = {}

    def workers_of(self, view: Any, p: int) -> np.ndarray:
        """The workers a job asks for at its first start: count and type (module doc)."""
        tv = view.tasks
        kind = int(tv.task_type[tv.first[p]])
        edge = np.asarray(tv.edge_workers)
        return np.asarray(edge[tv.worker_type[edge] == kind])

    def uses_cloud(self, view: Any) -> bool:
        return not self.edge_only and view.tasks.cloud_worker(0) >= 0

    def size(self, view: Any, p: int) -> int:
        """How many workers job ``p`` runs on at once."""
        tv = view.tasks
        k = min(int(tv.gang[p]), int(tv.first[p + 1] - tv.first[p]))
        if not self.uses_cloud(view):
            k = min(k, self.workers_of(view, p).size)
        return int(max(1, k))

    def _take_events(self, view: Any) -> None:
        """Arrivals join; finished chunks leave their worker's list (and a job its last)."""
        tv = view.tasks
        for t in view.arrived.tolist():
            p = int(tv.parent[t])
            self.n_left[p] = self.n_left.get(p, 0) + 1
        for t in view.finished.tolist():
            p = int(tv.parent[t])
            self.n_left[p] -= 1
            plan = self.left.get(p)
            if plan is not None:
                w = self.lane_of.pop(t)
                plan[w].remove(t)
                if not plan[w]:
                    del plan[w]
            if self.n_left[p] == 0:
                del self.n_left[p]
                self.left.pop(p, None)
                self.cloud_jobs.discard(p)

    def decide(self, view: Any, now: float) -> Decision:
        tv = view.tasks
        status = view.job_status
        self._take_events(view)
        jobs = np.fromiter(self.n_left, dtype=np.int64, count=len(self.n_left))
        if jobs.size == 0:
            return Decision()
        jobs.sort()
        order = jobs[np.argsort(self.key(view, jobs), kind="stable")]
        taken = np.zeros(tv.worker_type.shape[0], dtype=bool)
        chosen: dict[int, dict[int, list[int]]] = {}
        fresh: set[int] = set()
        for p in order.tolist():
            plan = self.left.get(p)
            if plan is not None:
                if p not in self.cloud_jobs:
                    need = list(plan)
                    if taken[need].any():
                        continue
                    taken[need] = True
                chosen[p] = plan
                continue
            k = self.size(view, p)
            cand = self.workers_of(view, p)
            cand = cand[~taken[cand]]
            chunks = list(range(int(tv.first[p]), int(tv.first[p + 1])))
            if cand.size >= k:
                delay = tv.server_delay[tv.worker_server[cand]]
                ws = cand[np.argsort(delay, kind="stable")[:k]].tolist()
                taken[ws] = True
            elif self.uses_cloud(view):
                ws = [-1 - i for i in range(k)]
                self.cloud_jobs.add(p)
            else:
                continue
            chosen[p] = {w: chunks[i::k] for i, w in enumerate(ws)}
            for w, ts in chosen[p].items():
                for t in ts:
                    self.lane_of[t] = w
            fresh.add(p)
        actions: list[Any] = []
        preempted = []
        for t in view.running.tolist():
            if int(tv.parent[t]) not in chosen and status[t] in (RUNNING, LOADING):
                actions.append(Preempt(t))
                preempted.append(t)
        started: list[int] = []
        wake = np.inf
        for p, plan in chosen.items():
            if p in fresh:  # its first start: every chunk ships now
                self.left[p] = plan
                for w, ts in plan.items():
                    actions += [Dispatch(t, w if w >= 0 else tv.cloud_worker(t)) for t in ts[1:]]
            for w, ts in plan.items():
                nxt = ts[0]
                if status[nxt] != QUEUED:
                    continue  # its chunk trains there
                if w < 0:
                    w = tv.cloud_worker(nxt)
                ready = tv.ready[nxt]
                if ready == ready and ready > now + 1e-9:  # placed, its data still ships
                    wake = min(wake, float(ready))
                    continue
                actions.append(Start(nxt, np.asarray([w])))
                started.append(nxt)
        holding = holding_after(view, started, preempted)
        actions += assign_ps(view, self.rng, holding, self.cloud_jobs)
        return Decision(actions=actions, wake_at=None if wake == np.inf else wake)
