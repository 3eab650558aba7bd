"""BatchSche as the edge-cloud paper runs it: jobs scheduled in batches, each at least cost.

Wang et al., "Preemptive Scheduling for Distributed Machine Learning Jobs in Edge-Cloud
Networks", IEEE JSAC 2022, Sec. V-A, baseline BatchSche [11]: it "first groups the
uncompleted jobs into multiple batches, then schedules batches one by one to minimize the
overall resource cost"; Sec. V-C: "Due to the low resource price of the cloud with
unlimited capacities, BatchSche schedules jobs to the cloud with a very high probability";
Sec. V-B: it "rarely has communication overhead between workers and PSs, but the time to
upload datasets to the cloud is relatively larger than to the edge"; Sec. II: the
scheduling in [11] "is non-preemptive", and the compact-exponential technique "adopted in
[11] [...] reserves all resources that each job needs".

[11] is Q. Zhang, R. Zhou, C. Wu, L. Jiao, Z. Li, "Online scheduling of heterogeneous
distributed machine learning jobs", ACM MobiHoc 2020, doi 10.1145/3397166.3409128. Its text
was not available to us; its abstract (the same as its journal version's, IEEE TCC 2022,
doi 10.1109/TCC.2022.3143153) says: the algorithm decides "the execution time window, the
number and the type of concurrent workers and parameter servers for each job upon its
arrival", and "consists of (i) an online scheduling framework that groups unprocessed ML
training jobs into a batch iteratively, and (ii) a batch scheduling algorithm that
configures each ML job to maximize the total weight of scheduled jobs in the current
iteration", with "a good parameterized competitive ratio". The rules here read that:

* **Batches** (``batches = "geometric"``, the default): iterations at geometrically
  growing times, the framework of Hall, Schulz, Shmoys and Wein ("Scheduling to minimize
  average completion time", Math. Oper. Res. 1997) that such a batch-iteration algorithm
  with a parameterised ratio rests on: the first at the first arrival t_0, the next at
  t_0 + 1 slot, then each window ``ratio`` times longer than the time since t_0 (with
  ``ratio`` = 2, the classic doubling: t_0 + 1, 2, 4, 8, ...). At an iteration every job
  arrived and not scheduled yet is in the batch; the batch's jobs that can finish by the
  end of the window are scheduled there, shortest (earliest possible finish) first -- with
  equal weights, the most jobs, "the total weight of scheduled jobs" -- and the others
  wait for the next iteration. ``ratio`` is the parameter of the competitive ratio; 2 is
  our choice (the paper and the abstract give none). ``batches = "slot"``: a batch is the
  jobs that arrived in one slot, placed at once if anywhere is free (an ablation; the
  earlier reading of this module).
* **Cost.** A job's cost is the price of each worker it reserves times the worker-slots
  it needs there (its chunks' times at eq. 1's speed, zeta_j = 1 wholly in the cloud).
  Prices follow the compact-exponential technique of [28] (R. Zhou, Z. Li, C. Wu, Z. Huang,
  IEEE/ACM ToN 2017) that [11] adopts: a server's price is L (U/L)^(u), u the fraction of
  its workers busy or reserved; the cloud's capacity is unbounded, so u = 0 there and its
  price stays L -- "the low resource price of the cloud with unlimited capacities"
  (L = 1). U/L (``price_ratio``, default 2) is not given anywhere: with an unbounded cloud
  it decides nothing (the cloud is cheaper whenever it fits: its price is the lowest and a
  job wholly there trains fastest), with a bounded cloud (the testbed's machine) it does;
  2 is our choice. ``cloud_price`` > 0 fixes the cloud's price instead (with
  ``price_ratio = 1`` and ``batches = "slot"``, ``cloud_price = 0.5`` and ``workers =
  "trace"`` this module's earlier rules, an ablation).
* **Workers.** "the number and the type of concurrent workers" are the algorithm's: a job
  takes k = min(D_j, idle workers of its type) workers (``workers = "chunks"``; ``"trace"``:
  at most its ``gang_workers``), the cheapest idle ones (then lowest delay), on the edge or
  on a bounded cloud, reserved until its chunks there are done: its chunks are dealt to
  them round robin and each worker trains its own one after another. On an unbounded
  cloud every chunk has its own worker and starts when its data arrives. Never preempted.
* Where both fit, the job goes to the lower cost (the cloud on a tie).

Why this module is longer than ~200 lines: the edge-cloud paper describes BatchSche in a
few lines, so the readings above (batches, prices, workers) are ours or its source's,
each kept beside its code with the earlier rules as options for the ablation of
docs/a-online.md.
"""

from __future__ import annotations

import heapq
from typing import Annotated

import numpy as np

from gpusched.algorithms.edge_cloud import assign_ps
from gpusched.core import portable
from gpusched.core.policy import Decision, Dispatch, Range, Start
from gpusched.core.state import FINISHED, QUEUED
from gpusched.errors import ParamError, PolicyError

BATCHES = ("geometric", "slot")
WORKERS = ("chunks", "trace")


class BatchSchePolicy:
    """Batches at geometric times; each job where it finishes in the window at least cost."""

    name = "batchsche"
    knows_duration = True
    needs_predictor = False
    work_conserving = False
    runs_tasks = True
    needs_tasks = True

    def __init__(
        self,
        *,
        batches: str = "geometric",
        ratio: Annotated[float, Range(1, 1e6, lo_open=True)] = 2.0,
        price_ratio: Annotated[float, Range(1, 1e6)] = 2.0,
        cloud_price: Annotated[float, Range(0, 1e6)] = 0.0,
        workers: str = "chunks",
        rng: np.random.Generator | None = None,
    ):
        for what, value, allowed in (("batches", batches, BATCHES), ("workers", workers, WORKERS)):
            if value not in allowed:
                raise ParamError(
                    f"policy '{self.name}': {what} must be one of {', '.join(allowed)}, "
                    f"got '{value}'"
                )
        self.batches = batches
        self.ratio = float(ratio)
        self.price_ratio = float(price_ratio)
        self.cloud_price = float(cloud_price)
        self.workers = workers
        self._rng = rng if rng is not None else np.random.default_rng(0)
        self.prepare(None, None)

    def prepare(self, jobs, cluster) -> None:
        """Start of a run: no worker is reserved, no iteration has run."""
        self.lists: dict[int, list[int]] = {}  # reserved worker -> chunks left, in order
        self.due: list[tuple[float, int]] = []  # (ready time, chunk) on the unbounded cloud
        self.waiting: list[int] = []  # jobs no iteration has scheduled yet
        self.next_batch: float | None = None  # time of the next iteration (geometric)
        self.origin = 0.0
        self._seen: set[int] = set()  # jobs arrived
        self._set = False

    # --- the cluster, once ---------------------------------------------------------------

    def _setup(self, view) -> None:
        tv = view.tasks
        n_jobs = tv.n_parents
        self.rate0 = np.array([tv.rate(j, 0) for j in range(n_jobs)], dtype=np.float64)
        self.rate1 = np.array([tv.rate(j, 1) for j in range(n_jobs)], dtype=np.float64)
        self.server = np.asarray(tv.worker_server)
        self.delay = np.asarray(tv.server_delay)[self.server]
        self.in_cloud = np.asarray(tv.server_cloud)[self.server]
        n_servers = np.asarray(tv.server_cloud).shape[0]
        fixed = np.concatenate([np.asarray(tv.edge_workers), np.asarray(tv.cloud_workers)])
        self.per_server = np.bincount(self.server[fixed], minlength=n_servers).astype(float)
        self.fixed = fixed
        self._set = True

    # --- options -------------------------------------------------------------------------

    def _prices(self, view) -> np.ndarray:
        """L (U/L)^u per server, u its workers busy or reserved over its workers (L = 1)."""
        busy = np.zeros(self.per_server.shape[0])
        taken = self.fixed[(view.gpu_n_jobs[self.fixed] > 0)]
        np.add.at(busy, self.server[taken], 1.0)
        for w in self.lists:
            if view.gpu_n_jobs[w] == 0:
                busy[self.server[w]] += 1.0
        with np.errstate(invalid="ignore", divide="ignore"):
            u = np.where(self.per_server > 0, busy / np.maximum(self.per_server, 1), 0.0)
        return portable.power_of(self.price_ratio, np.minimum(u, 1.0))

    def _chunk_time(self, view, j: int, zeta: int) -> float:
        rate = self.rate1[j] if zeta == 1 else self.rate0[j]
        return float(view.job_duration[view.tasks.first[j]]) / float(rate)

    def _options(self, view, j: int, now: float, prices: np.ndarray) -> list[tuple]:
        """(cost, tier, finish, workers) of each place job ``j`` could go to now."""
        tv = view.tasks
        lo, hi = int(tv.first[j]), int(tv.first[j + 1])
        d = hi - lo
        kind = int(tv.task_type[lo])
        out = []
        for pool, zeta, tier in (
            (np.asarray(tv.edge_workers), 0, 1),
            (np.asarray(tv.cloud_workers), 1, 0),
        ):
            idle = pool[(tv.worker_type[pool] == kind) & (view.gpu_n_jobs[pool] == 0)]
            idle = np.asarray([w for w in idle.tolist() if w not in self.lists], dtype=np.int64)
            limit = d if self.workers == "chunks" else min(d, int(tv.gang[j]))
            k = min(limit, idle.size)
            if k < 1:
                continue
            price = prices[self.server[idle]]
            ws = idle[np.lexsort((self.delay[idle], price))[:k]]
            p = self._chunk_time(view, j, zeta)
            per = np.bincount(np.arange(d) % k, minlength=k)  # chunks dealt round robin
            finish = now + float(self.delay[ws].max()) + int(per.max()) * p
            cost = float((prices[self.server[ws]] * per * p).sum())
            if zeta == 1 and self.cloud_price > 0:
                cost = self.cloud_price * d * p
            out.append((cost, tier, finish, ws.tolist()))
        if tv.unbounded_cloud:
            cloud = tv.cloud_worker(lo)
            p = self._chunk_time(view, j, 1)
            arrive = tv.ship_times(j, int(tv.worker_server[cloud]), now, d)
            price = self.cloud_price if self.cloud_price > 0 else 1.0  # u = 0: L
            out.append((price * d * p, 0, float(arrive.max()) + p, []))
        return out

    def _place(self, view, j: int, now: float, option: tuple, actions: list, started: set) -> None:
        """Reserve ``option``'s workers for job ``j`` and ship its chunks."""
        tv = view.tasks
        lo, hi = int(tv.first[j]), int(tv.first[j + 1])
        _, tier, _, ws = option
        chunks = list(range(lo, hi))
        if tier == 0:
            self.to_cloud.add(j)
        if not ws:  # the unbounded cloud
            server = int(tv.worker_server[tv.cloud_worker(lo)])
            arrive = tv.ship_times(j, server, now, hi - lo)
            for i, t in enumerate(chunks):
                actions.append(Dispatch(t, tv.cloud_worker(t)))
                heapq.heappush(self.due, (float(arrive[i]), t))
            return
        k = len(ws)
        for i, w in enumerate(ws):
            mine = chunks[i::k]
            actions.append(Start(mine[0], np.asarray([w])))  # ships while holding the worker
            actions += [Dispatch(t, w) for t in mine[1:]]
            self.lists[w] = mine
            started.add(mine[0])

    # --- iterations ----------------------------------------------------------------------

    def _iteration(self, view, now: float, end: float, actions: list, started: set) -> None:
        """Schedule the batch (the waiting jobs): those that fit by ``end``, earliest
        possible finish first, each at its least-cost place that fits."""
        batch, self.waiting = self.waiting, []
        prices = self._prices(view)
        ranked = []
        for j in batch:
            fits = [o for o in self._options(view, j, now, prices) if o[2] <= end + 1e-9]
            ranked.append((min((o[2] for o in fits), default=np.inf), j))
        if self.batches == "geometric":
            ranked.sort()  # the most jobs in the window: shortest first
        for first_finish, j in ranked:
            if first_finish == np.inf:
                self.waiting.append(j)
                continue
            fits = [o for o in self._options(view, j, now, prices) if o[2] <= end + 1e-9]
            if not fits:
                self.waiting.append(j)  # the jobs before it took its room
                continue
            best = min(fits, key=lambda o: (o[0], o[1]))  # least cost, the cloud on a tie
            self._place(view, j, now, best, actions, started)
            for w in best[3]:  # its servers' prices rise with what it reserved
                prices[self.server[w]] = self.price_ratio ** min(
                    1.0, self._load(view, self.server[w]) / max(self.per_server[self.server[w]], 1)
                )
        self.waiting.sort()

    def _load(self, view, s: int) -> float:
        ws = self.fixed[self.server[self.fixed] == s]
        return float(sum(1 for w in ws.tolist() if view.gpu_n_jobs[w] > 0 or w in self.lists))

    def _all_in(self, view) -> bool:
        """Has every job arrived (no iteration can find a job any more)?"""
        return int(view.tasks.parent[-1]) in self._seen if view.tasks.parent.size else True

    def decide(self, view, now: float) -> Decision:
        tv = view.tasks
        if not self._set:
            self._setup(view)
        status = view.job_status
        actions: list = []
        started: set[int] = set()
        self.to_cloud: set[int] = set()  # jobs this decision sends wholly to the cloud
        for w, mine in list(self.lists.items()):  # workers whose chunks are all done are free
            while mine and status[mine[0]] == FINISHED:
                mine.pop(0)
            if not mine:
                del self.lists[w]
        arrived = sorted({int(tv.parent[t]) for t in view.arrived.tolist()})
        self._seen.update(arrived)
        for j in arrived:
            kind = int(tv.task_type[tv.first[j]])
            if not tv.unbounded_cloud and not (tv.worker_type[self.fixed] == kind).any():
                raise PolicyError(
                    f"policy '{self.name}': job '{tv.job_id[j]}' needs workers of type "
                    f"'{tv.types[kind]}' and there are none"
                )
        self.waiting += arrived
        if self.batches == "slot":
            if self.waiting:
                self._iteration(view, now, np.inf, actions, started)
        else:
            if self.next_batch is None and self.waiting:
                self.origin = self.next_batch = now  # the first iteration: the first arrival
            if self.next_batch is not None and now + 1e-9 >= self.next_batch:
                while self.next_batch <= now + 1e-9:  # the window from now: to the next one
                    tau = self.next_batch
                    self.next_batch = tau + max((tau - self.origin) * (self.ratio - 1.0), 1.0)
                if self.waiting:
                    self._iteration(view, now, self.next_batch, actions, started)
        wake = np.inf
        for w, mine in self.lists.items():  # each reserved worker trains its chunks in turn
            t = mine[0]
            if status[t] == QUEUED and t not in started:
                ready = tv.ready[t]
                if ready > now + 1e-9:
                    wake = min(wake, float(ready))
                    continue
                actions.append(Start(t, np.asarray([w])))
                started.add(t)
        while self.due and self.due[0][0] <= now + 1e-9:
            _, t = heapq.heappop(self.due)
            actions.append(Start(t, np.asarray([tv.cloud_worker(t)])))
            started.add(t)
        if self.due:
            wake = min(wake, self.due[0][0])
        if self.next_batch is not None and (self.waiting or not self._all_in(view)):
            wake = min(wake, self.next_batch)  # every iteration is a decision point
        actions += assign_ps(view, self._rng, sorted(started), (), self.to_cloud)
        return Decision(actions=actions, wake_at=None if wake == np.inf else wake)
