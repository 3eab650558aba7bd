"""BatchSche as the edge-cloud paper describes it: batches of jobs, each placed at least cost.

Wang et al., "Preemptive Scheduling for Distributed Machine Learning Jobs in Edge-Cloud
Networks", IEEE JSAC 2022, Sec. V-A, baseline BatchSche [11]: it "first groups the
uncompleted jobs into multiple batches, then schedules batches one by one to minimize the
overall resource cost"; Sec. V-C: "Due to the low resource price of the cloud with
unlimited capacities, BatchSche schedules jobs to the cloud with a very high probability";
Sec. V-B: it "rarely has communication overhead between workers and PSs, but the time to
upload datasets to the cloud is relatively larger than to the edge".

The paper gives no more than that, so every rule here is a guess, chosen to match those
sentences:

* a batch is the jobs that arrived in one slot; batches are scheduled in arrival order,
  a batch's jobs in index order, each once, never preempted;
* a job's resource cost is a price per worker-slot times the worker-slots it needs:
  D_j chunk times, at eq. 1's speed for where it runs (zeta_j = 1 wholly in the cloud);
  the edge's price is 1, the cloud's ``cloud_price`` (default 0.5: "the low resource
  price of the cloud");
* on the edge a job may only take workers of its type that are idle at that moment, as
  many as ``gang_workers`` (at most D_j); its chunks are dealt to them round robin and
  each worker trains its own one after another; the workers stay the job's until its
  chunks there are done. In the cloud every chunk gets its own worker and starts when its
  data arrives;
* the job goes where its cost is lower (the cloud on a tie). With the default price a
  job costs less in the cloud whenever it fits nowhere better, so nearly every job goes
  there; ``-p cloud_price=1.5`` makes the edge win for jobs with little communication.
"""

from __future__ import annotations

import heapq
from typing import Annotated

import numpy as np

from gpusched.algorithms.edge_cloud import assign_ps, holding_after
from gpusched.core.policy import Decision, Dispatch, Range, Start
from gpusched.core.state import FINISHED, QUEUED
from gpusched.errors import PolicyError


class BatchSchePolicy:
    """Batches by arrival slot; each job on the edge or in the cloud at least cost."""

    name = "batchsche"
    knows_duration = True
    needs_predictor = False
    work_conserving = False
    runs_tasks = True
    needs_tasks = True

    def __init__(
        self,
        *,
        cloud_price: Annotated[float, Range(0, 1e6, lo_open=True)] = 0.5,
        rng: np.random.Generator | None = None,
    ):
        self.cloud_price = float(cloud_price)
        self._rng = rng if rng is not None else np.random.default_rng(0)
        self.prepare(None, None)

    def prepare(self, jobs, cluster) -> None:
        """Start of a run: no worker is reserved."""
        self.lists: dict[int, list[int]] = {}  # edge worker -> chunks left, in order
        self.due: list[tuple[float, int]] = []  # (ready time, chunk) of cloud chunks
        self.waiting: list[int] = []  # jobs no batch could place yet (no cloud, no idle worker)
        self._started: set[int] = set()  # chunks this decision starts

    def _chunk_time(self, view, j: int, zeta: int) -> float:
        tv = view.tasks
        return float(view.job_duration[tv.first[j]]) / tv.rate(j, zeta)

    def _place(self, view, j: int, now: float, actions: list) -> None:
        """Schedule job ``j`` at least cost (see module doc)."""
        tv = view.tasks
        lo, hi = int(tv.first[j]), int(tv.first[j + 1])
        kind = int(tv.task_type[lo])
        edge = tv.edge_workers
        idle = edge[(tv.worker_type[edge] == kind) & (view.gpu_n_jobs[edge] == 0)]
        idle = np.asarray([w for w in idle.tolist() if w not in self.lists], dtype=np.int64)
        k = min(int(tv.gang[j]), hi - lo, idle.size)
        d = hi - lo
        cost_edge = d * self._chunk_time(view, j, 0) if k >= 1 else np.inf
        cloud = tv.cloud_worker(lo)
        cost_cloud = self.cloud_price * d * self._chunk_time(view, j, 1) if cloud >= 0 else np.inf
        if cost_cloud == np.inf and cost_edge == np.inf:
            if tv.cloud_worker(lo) < 0 and not (tv.worker_type[edge] == kind).any():
                raise PolicyError(
                    f"policy '{self.name}': job '{tv.job_id[j]}' needs workers of type "
                    f"'{tv.types[kind]}' and there are none"
                )
            return  # no idle worker now: the job waits for the next batch
        if cost_cloud <= cost_edge:
            self.to_cloud.add(j)
            arrive = now + float(tv.server_delay[tv.worker_server[cloud]])
            for t in range(lo, hi):
                actions.append(Dispatch(t, tv.cloud_worker(t)))
                heapq.heappush(self.due, (arrive, t))
            return
        delay = tv.server_delay[tv.worker_server[idle]]
        ws = idle[np.argsort(delay, kind="stable")[:k]].tolist()
        chunks = list(range(lo, hi))
        for i, w in enumerate(ws):
            mine = chunks[i::k]
            actions.append(Start(mine[0], np.asarray([w])))  # ships while holding the worker
            actions += [Dispatch(t, w) for t in mine[1:]]
            self.lists[w] = mine
        self._started.update(c[0] for c in (chunks[i::k] for i in range(k)))

    def decide(self, view, now: float) -> Decision:
        tv = view.tasks
        status = view.job_status
        actions: list = []
        self._started = set()
        self.to_cloud: set[int] = set()  # jobs this decision sends to the cloud
        for w, mine in list(self.lists.items()):  # workers whose chunks are all done are free
            while mine and status[mine[0]] == FINISHED:
                mine.pop(0)
            if not mine:
                del self.lists[w]
        batch = self.waiting + sorted({int(tv.parent[t]) for t in view.arrived.tolist()})
        self.waiting = []
        for j in batch:  # the batch of this slot (and jobs no earlier batch could place)
            n_before = len(actions)
            self._place(view, j, now, actions)
            if len(actions) == n_before:
                self.waiting.append(j)
        wake = np.inf
        for w, mine in self.lists.items():
            t = mine[0]
            if status[t] == QUEUED and t not in self._started:
                ready = tv.ready[t]
                if ready > now + 1e-9:
                    wake = min(wake, float(ready))
                    continue
                actions.append(Start(t, np.asarray([w])))
                self._started.add(t)
        while self.due and self.due[0][0] <= now + 1e-9:
            _, t = heapq.heappop(self.due)
            actions.append(Start(t, np.asarray([tv.cloud_worker(t)])))
            self._started.add(t)
        if self.due:
            wake = min(wake, self.due[0][0])
        actions += assign_ps(view, self._rng, holding_after(view, self._started, ()), self.to_cloud)
        return Decision(actions=actions, wake_at=None if wake == np.inf else wake)
