"""A_online: online preemptive dispatch of data chunks to edge workers or the cloud.

N. Wang, R. Zhou, L. Jiao, R. Zhang, B. Li and Z. Li, "Preemptive Scheduling for
Distributed Machine Learning Jobs in Edge-Cloud Networks", IEEE JSAC, 2022, Sec. IV.
The method names follow the paper's algorithms:

* :meth:`AOnlinePolicy.decide` is Alg. 1: at each slot, the jobs arrived in it (line 2)
  go through A_greedy (line 3), then A_ps gives every running job a PS (line 4);
* :meth:`AOnlinePolicy.greedy` is Alg. 2 (A_greedy): Q of eq. 5 is computed for the
  job's first chunk on every qualified worker and the cloud (lines 3-8, CALCULATEQ of
  Alg. 3); then each chunk d in turn goes to the worker of least Q (line 11); if that is
  the cloud, this chunk and all the job's later ones go there (lines 12-16); after the
  first chunk lands on the edge, the cloud's Q is recomputed with zeta_j = 0 (lines
  17-20), and the chosen worker's Q with the chunk in its queue (lines 21-22: the chunk
  just queued is ahead of the job's next one, so Q grows by p / D_j);
* :meth:`AOnlinePolicy.calculate_q` is Alg. 3 with eq. 5:

      Q_jdsw = Δ_js / D_j + (1 / D_j) sum_{d' in A, γ' >= γ_j} p̂_d'
               + (1 / D_j) E_j B_j / n_jsw + (E_j B_j / n_jsw) sum_{d' in A, γ' < γ_j} 1 / D_j'

  with γ_j = n_jsw / (E_j D_j B_j) the average processing rate (HAPRF's key), A the
  chunks pending on the worker and p̂ their remaining processing time; in the cloud only
  the first and third terms (no queue, no preemption), with zeta_j = 1 for the first
  chunk. :class:`_Queue` evaluates the same sums from prefix sums over a worker's queue
  (a binary search per worker instead of a walk over its chunks); ``calculate_q`` stays as
  the readable reference, and a test checks that both give the same schedules;
* :meth:`AOnlinePolicy.run_workers` is the schedule Alg. 4 (UPDATEVARIABLES) writes: each
  edge worker trains its ready chunks in highest-average-processing-rate-first order; a
  chunk of higher γ preempts a running one of lower γ, which is postponed on the same
  worker (its data stays there); cloud chunks start when their data arrives and are never
  preempted;
* A_ps (Alg. 5) is :func:`gpusched.algorithms.edge_cloud.assign_ps`.

The dual variables (alpha, beta) of Alg. 2-4 serve the competitive analysis only; they
are not computed. Choices where the paper is silent or ambiguous:

* p̂ at t0 = r_j + Δ_js (eq. 5) is taken as the chunk's remaining processing time now,
  without deducting what the worker trains during the transmission delay (a few slots
  against chunks of tens): the queue is what the worker holds when the job arrives;
* ties (equal Q, compared to 32 significant bits so that float rounding does not decide)
  go to the worker of lower index, the edge before the cloud; chunks of equal γ keep
  their order of arrival on a worker and never preempt each other;
* a job's chunks are dispatched (shipped) on arrival, as the paper's "upon its arrival,
  every data chunk d is dispatched"; a worker runs a chunk only once its data is there
  (on a server with ``ship = "serial"`` a job's chunks arrive one after another; Q keeps
  the paper's single Δ_js, the engine's ready times are the world's);
* a **bounded cloud** (a cloud of typed workers, e.g. the testbed's one machine, Sec.
  V-A) is not the paper's model: its workers are candidates like the edge's, in the cloud
  tier (delay Δ_c, zeta_j = 1 while every chunk of the job placed so far is in the cloud,
  never preempted), and Q on one of them is eq. 5 for a queue that cannot preempt its
  running chunk (that chunk counts as waited for, whatever its γ). Alg. 2's case 1 (lines
  12-16: once a chunk goes to the cloud, all later ones do) rests on "dispatching data
  chunks to the cloud has no effect on C_j", which fails when the cloud has a queue, so
  each chunk is placed by least Q on its own there. An unbounded cloud follows the paper.

``a-online-e`` (:mod:`policies.a_online_e`) is the same without the cloud.
"""

from __future__ import annotations

import bisect
import heapq
import math

import numpy as np

from gpusched.algorithms.edge_cloud import assign_ps
from gpusched.core.policy import Decision, Dispatch, Preempt, Start
from gpusched.core.state import QUEUED
from gpusched.errors import PolicyError


def _tie(x: float) -> float:
    """Q rounded to 32 significant bits, for comparisons: values equal but for the last
    bits of float rounding (eq. 5's terms summed in another order) tie, and a tie goes to
    the lower index."""
    if x == 0.0 or not math.isfinite(x):
        return x
    m, e = math.frexp(x)
    return math.ldexp(round(m * 4294967296.0), e - 32)


class _Queue:
    """One worker's unfinished chunks in HAPRF order, and eq. 5's sums over them.

    ``chunks`` and ``keys`` ((1 / γ, chunk), ascending) are kept in order. The prefix sums
    of the chunks' times left (at their rates) and of 1 / D_j' are rebuilt on the first
    query after the queue or its running chunk changed; the running chunk's time left is
    read live at each query (it is the only one that trains).
    """

    __slots__ = ("chunks", "keys", "ready", "work", "pre_p", "pre_inv", "p_at", "holder", "at")

    def __init__(self) -> None:
        self.chunks: list[int] = []
        self.keys: list[tuple[float, int]] = []
        self.ready = False
        self.holder = -1  # the running chunk when the sums were built
        self.at = -1  # its position in the queue

    def insert(self, key: tuple[float, int], t: int) -> None:
        at = bisect.bisect_right(self.keys, key)
        self.keys.insert(at, key)
        self.chunks.insert(at, t)
        self.ready = False

    def remove(self, t: int) -> None:
        i = self.chunks.index(t)
        del self.chunks[i], self.keys[i]
        self.ready = False

    def build(self, p_at: np.ndarray, inv_d: np.ndarray, holder: int) -> None:
        """Prefix sums: ``p_at`` and ``inv_d`` per queued chunk, in queue order."""
        self.work = np.asarray([k for k, _ in self.keys])
        self.p_at = p_at
        self.pre_p = np.concatenate(([0.0], np.cumsum(p_at)))
        self.pre_inv = np.concatenate(([0.0], np.cumsum(inv_d)))
        self.holder = holder
        self.at = self.chunks.index(holder) if holder >= 0 else -1
        self.ready = True


class AOnlinePolicy:
    """Alg. 1-5 of the edge-cloud paper: A_greedy dispatch, HAPRF workers, A_ps."""

    name = "a-online"
    knows_duration = True  # E_j, B_j and n_j are known on arrival (Sec. III-A)
    needs_predictor = False
    work_conserving = True
    runs_tasks = True
    needs_tasks = True
    #: A_online-E: the edge only (no cloud candidate in A_greedy)
    edge_only = False
    #: eq. 5 from prefix sums (:class:`_Queue`); False: the readable walk, calculate_q
    fast = True

    def __init__(self, *, rng: np.random.Generator | None = None) -> None:
        self._rng = rng if rng is not None else np.random.default_rng(0)
        self.prepare(None, None)

    def prepare(self, jobs, cluster) -> None:
        """Start of a run: every worker's queue is empty."""
        #: worker (edge or bounded cloud) -> its unfinished chunks in HAPRF order
        self.queues: dict[int, _Queue] = {}
        self.dirty: set[int] = set()
        self.due: list[tuple[float, int]] = []  # (ready time, worker or -1 - task in the cloud)
        self.work_of: np.ndarray | None = None  # per job, D_j x its chunk time on the edge
        self.ready_at: np.ndarray | None = None  # per chunk, when its data is on its worker
        self.wholly: np.ndarray | None = None  # per job: every chunk in the cloud (zeta_j = 1)
        self._by_kind: dict[int, tuple[list[int], list[int]]] = {}

    def _setup(self, view) -> None:
        tv = view.tasks
        n_jobs = tv.n_parents
        self.work_of = np.full(n_jobs, np.inf)
        self.ready_at = np.full(tv.parent.shape[0], np.inf)
        self.wholly = np.zeros(n_jobs, dtype=bool)
        self.inv_d = 1.0 / np.diff(np.asarray(tv.first)).astype(np.float64)
        self.rate0 = np.array([tv.rate(j, 0) for j in range(n_jobs)], dtype=np.float64)
        self.rate1 = np.array([tv.rate(j, 1) for j in range(n_jobs)], dtype=np.float64)
        self.in_cloud = np.asarray(tv.server_cloud)[np.asarray(tv.worker_server)]

    def workers_of(self, view, kind: int) -> tuple[list[int], list[int]]:
        """The edge workers and the bounded cloud's workers of a type (in index order)."""
        got = self._by_kind.get(kind)
        if got is None:
            tv = view.tasks
            edge = tv.edge_workers[tv.worker_type[tv.edge_workers] == kind].tolist()
            cloud = [] if self.edge_only else tv.cloud_workers.tolist()
            cloud = [w for w in cloud if tv.worker_type[w] == kind]
            got = self._by_kind[kind] = (edge, cloud)
        return got

    # --- Alg. 3 and eq. 5 ----------------------------------------------------------------

    def chunk_time(self, view, j: int, zeta: int) -> float:
        """E_j B_j / n_jsw: slots one chunk of job ``j`` trains on a worker (eq. 1)."""
        tv = view.tasks
        return float(view.job_duration[tv.first[j]]) / tv.rate(j, zeta)

    def _p_left(self, view, t: int) -> float:
        """p̂: the time chunk ``t`` has left on its worker, at its job's rate."""
        k = int(view.tasks.parent[t])
        rate = self.rate1[k] if self.wholly[k] else self.rate0[k]
        return float(view.job_remaining[t]) / float(rate)

    def calculate_q(self, view, j: int, w: int, p: float, work: float) -> float:
        """Eq. 5 for a chunk of job ``j`` (chunk time ``p``, HAPRF key ``work``) on worker
        ``w``, walking its queue (the reference for :meth:`fast_q`). On a bounded cloud's
        worker the running chunk is waited for whatever its γ (no preemption there)."""
        tv = view.tasks
        d = float(tv.first[j + 1] - tv.first[j])
        delay = float(tv.server_delay[tv.worker_server[w]])
        holder = int(view.gpu_job[w, 0]) if view.gpu_n_jobs[w] else -1
        no_preempt = bool(self.in_cloud[w])
        wait = 0.0
        behind = 0.0
        q = self.queues.get(w)
        for t in q.chunks if q is not None else ():
            k = int(tv.parent[t])
            if self.work_of[k] <= work or (no_preempt and t == holder):  # it trains first
                wait += self._p_left(view, t)
            else:  # γ' < γ_j: postponed by p
                behind += 1.0 / float(tv.first[k + 1] - tv.first[k])
        return (delay + wait + p) / d + p * behind

    def fast_q(self, view, j: int, w: int, p: float, work: float) -> float:
        """Eq. 5 as :meth:`calculate_q`, from the prefix sums of the worker's queue."""
        tv = view.tasks
        d = float(tv.first[j + 1] - tv.first[j])
        delay = float(tv.server_delay[tv.worker_server[w]])
        q = self.queues.get(w)
        if q is None or not q.chunks:
            return (delay + p) / d
        holder = int(view.gpu_job[w, 0]) if view.gpu_n_jobs[w] else -1
        if not q.ready or q.holder != holder:
            idx = np.asarray(q.chunks, dtype=np.int64)
            par = tv.parent[idx]
            rate = np.where(self.wholly[par], self.rate1[par], self.rate0[par])
            q.build(
                np.asarray(view.job_remaining[idx], dtype=np.float64) / rate,
                self.inv_d[par],
                holder,
            )
        n = int(np.searchsorted(q.work, work, side="right"))  # γ' >= γ_j: ahead
        wait = float(q.pre_p[n])
        behind = float(q.pre_inv[-1] - q.pre_inv[n])
        if holder >= 0:  # its time left is read now (it trains)
            live = self._p_left(view, holder)
            if q.at < n:
                wait += live - float(q.p_at[q.at])
            elif self.in_cloud[w]:  # no preemption in the cloud: waited for
                wait += live
                behind -= float(self.inv_d[int(tv.parent[holder])])
        return (delay + wait + p) / d + p * behind

    # --- Alg. 2 ----------------------------------------------------------------------------

    def greedy(self, view, j: int, now: float) -> list:
        """Dispatch job ``j``'s chunks (Alg. 2); return the Dispatch actions."""
        tv = view.tasks
        lo, hi = int(tv.first[j]), int(tv.first[j + 1])
        d_j = hi - lo
        kind = int(tv.task_type[lo])
        edge, clouds = self.workers_of(view, kind)
        own_cloud = tv.unbounded_cloud and not self.edge_only
        if not edge and not clouds and not own_cloud:
            raise PolicyError(
                f"policy '{self.name}': job '{tv.job_id[j]}' needs workers of type "
                f"'{tv.types[kind]}' and the {'edge' if self.edge_only else 'cluster'} has none"
            )
        p_edge = self.chunk_time(view, j, 0)
        p_cloud = self.chunk_time(view, j, 1)
        work = d_j * p_edge  # 1 / γ_j: HAPRF serves the least first
        self.work_of[j] = work
        q_of = self.fast_q if self.fast else self.calculate_q
        in_cloud = self.in_cloud
        # lines 3-8: Q of the first chunk on every candidate; a heap of (Q, cloud, worker)
        # for the least (edge first, then lowest index on ties), stale entries skipped
        q = {w: q_of(view, j, w, p_edge, work) for w in edge}
        wholly = True  # every chunk of j placed so far is in the cloud (zeta_j = 1)
        self.wholly[j] = True
        q.update((w, q_of(view, j, w, p_cloud, work)) for w in clouds)
        heap = [(_tie(v), bool(in_cloud[w]), w) for w, v in q.items()]
        heapq.heapify(heap)
        q_cloud = np.inf
        if own_cloud:
            cloud_server = int(tv.worker_server[tv.cloud_worker(lo)])
            delay_c = float(tv.server_delay[cloud_server])
            q_cloud = (delay_c + p_cloud) / d_j  # Alg. 3 line 8, zeta_j = 1
        actions: list = []
        sent: dict[int, int] = {}  # chunks of j shipped to each server by this decision
        for d in range(d_j):
            t = lo + d
            while heap and heap[0][0] != _tie(q[heap[0][2]]):
                heapq.heappop(heap)  # stale
            best_q, cloud, best = heap[0] if heap else (np.inf, True, -1)  # line 11
            if best < 0 or _tie(q_cloud) < best_q:  # lines 12-16: this and later chunks
                if d == 0:
                    self.to_cloud.add(j)
                arrive = tv.ship_times(j, cloud_server, now, hi - t)
                for i, u in enumerate(range(t, hi)):
                    actions.append(Dispatch(u, tv.cloud_worker(u)))
                    heapq.heappush(self.due, (float(arrive[i]), -1 - u))
                break
            if not cloud and wholly:  # lines 17-20: no longer wholly in the cloud
                wholly = False
                self.wholly[j] = False
                if own_cloud:
                    q_cloud = (delay_c + p_edge) / d_j
                for w in clouds:  # a bounded cloud's workers: Q again at zeta_j = 0
                    q[w] = q_of(view, j, w, p_edge, work)
                    heapq.heappush(heap, (_tie(q[w]), True, w))
            actions.append(Dispatch(t, best))
            queue = self.queues.get(best)
            if queue is None:
                queue = self.queues[best] = _Queue()
            queue.insert((work, t), t)
            self.dirty.add(best)
            server = int(tv.worker_server[best])
            k = sent.get(server, 0)
            sent[server] = k + 1
            ready = float(tv.ship_times(j, server, now, k + 1)[-1])
            self.ready_at[t] = ready
            heapq.heappush(self.due, (ready, best))
            # lines 21-22: the chunk just queued is ahead of j's next one (equal γ), so Q
            # grows by p / D_j (the reference path recomputes it)
            p = p_cloud if cloud and wholly else p_edge
            q[best] = q[best] + p / d_j if self.fast else q_of(view, j, best, p, work)
            heapq.heappush(heap, (_tie(q[best]), cloud, best))
        if wholly and clouds:
            self.to_cloud.add(j)  # wholly on the bounded cloud's workers: its PS goes there
        return actions

    # --- the schedule of Alg. 4 ---------------------------------------------------------

    def run_workers(self, view, now: float) -> tuple[list, list[int], list[int]]:
        """HAPRF on every worker whose queue or chunks changed; start cloud chunks that
        are ready. Returns the actions, the chunks started and those preempted."""
        tv = view.tasks
        status = view.job_status
        actions: list = []
        started: list[int] = []
        preempted: list[int] = []
        while self.due and self.due[0][0] <= now + 1e-9:
            _, who = heapq.heappop(self.due)
            if who >= 0:
                self.dirty.add(who)
            elif status[-1 - who] == QUEUED:
                u = -1 - who
                actions.append(Start(u, np.asarray([tv.cloud_worker(u)])))
                started.append(u)
        ready_at = self.ready_at
        for w in sorted(self.dirty):
            q = self.queues.get(w)
            chunks = q.chunks if q is not None else []
            holder = int(view.gpu_job[w, 0])
            best = -1
            for t in chunks:
                if ready_at[t] <= now + 1e-9:
                    best = t
                    break
            if best < 0 or best == holder:
                continue
            if holder >= 0:
                if self.in_cloud[w]:
                    continue  # the cloud does not preempt (Sec. III)
                mine = self.work_of[int(tv.parent[best])]
                if mine >= self.work_of[int(tv.parent[holder])]:
                    continue  # equal γ: the running chunk keeps its worker
                actions.append(Preempt(holder))  # postponed on the same worker
                preempted.append(holder)
            actions.append(Start(best, np.asarray([w])))
            started.append(best)
        self.dirty.clear()
        return actions, started, preempted

    # --- Alg. 1 ----------------------------------------------------------------------------

    def decide(self, view, now: float) -> Decision:
        tv = view.tasks
        if self.work_of is None:
            self._setup(view)
        for t in view.finished.tolist():  # a chunk finished: its worker picks the next
            w = int(tv.bound[t])
            q = self.queues.get(w)
            if q is not None:
                q.remove(t)
                self.dirty.add(w)
        actions: list = []
        self.to_cloud: set[int] = set()  # jobs sent wholly to the cloud by this decision
        arrived = sorted({int(tv.parent[t]) for t in view.arrived.tolist()})  # line 2
        for j in arrived:
            actions += self.greedy(view, j, now)  # line 3
        more, started, preempted = self.run_workers(view, now)
        actions += more
        actions += assign_ps(view, self._rng, started, preempted, self.to_cloud)  # line 4
        wake = self.due[0][0] if self.due else None  # run_workers popped those due now
        return Decision(actions=actions, wake_at=wake)
