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
  17-20), and the chosen worker's Q with the chunk in its queue (lines 21-22);
* :meth:`AOnlinePolicy.calculate_q` is Alg. 3 with eq. 5:

      Q_jdsw = Δ_js / D_j + (1 / D_j) sum_{d' in A, γ' >= γ_j} p̂_d'
               + (1 / D_j) E_j B_j / n_jsw + (E_j B_j / n_jsw) sum_{d' in A, γ' < γ_j} 1 / D_j'

  with γ_j = n_jsw / (E_j D_j B_j) the average processing rate (HAPRF's key), A the
  chunks pending on the worker and p̂ their remaining processing time; in the cloud only
  the first and third terms (no queue, no preemption), with zeta_j = 1 for the first
  chunk;
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
* ties (equal Q) go to the worker of lower index, the edge before the cloud; chunks of
  equal γ keep their order of arrival on a worker and never preempt each other;
* a job's chunks are dispatched (shipped) on arrival, as the paper's "upon its arrival,
  every data chunk d is dispatched"; a worker runs a chunk only once its data is there.

``a-online-e`` (:mod:`policies.a_online_e`) is the same without the cloud.
"""

from __future__ import annotations

import bisect
import heapq

import numpy as np

from gpusched.algorithms.edge_cloud import assign_ps, holding_after
from gpusched.core.policy import Decision, Dispatch, Preempt, Start
from gpusched.core.state import QUEUED
from gpusched.errors import PolicyError


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

    def __init__(self, *, rng: np.random.Generator | None = None) -> None:
        self._rng = rng if rng is not None else np.random.default_rng(0)
        self.prepare(None, None)

    def prepare(self, jobs, cluster) -> None:
        """Start of a run: every worker's queue is empty."""
        #: edge worker -> its unfinished chunks in HAPRF order, with their sort keys
        self.queue: dict[int, list[int]] = {}
        self.keys: dict[int, list[tuple[float, int]]] = {}
        self.dirty: set[int] = set()
        self.due: list[tuple[float, int]] = []  # (ready time, worker or -1 - task in the cloud)
        self.work_of: np.ndarray | None = None  # per job, D_j x its chunk time on the edge
        self.ready_at: np.ndarray | None = None  # per chunk, when its data is on its worker

    # --- Alg. 3 and eq. 5 ----------------------------------------------------------------

    def chunk_time(self, view, j: int, zeta: int) -> float:
        """E_j B_j / n_jsw: slots one chunk of job ``j`` trains on a worker (eq. 1)."""
        tv = view.tasks
        return float(view.job_duration[tv.first[j]]) / tv.rate(j, zeta)

    def calculate_q(self, view, j: int, w: int, p: float, work: float) -> float:
        """Eq. 5 for a chunk of job ``j`` (chunk time ``p``, HAPRF key ``work``) on edge
        worker ``w``."""
        tv = view.tasks
        d = float(tv.first[j + 1] - tv.first[j])
        delay = float(tv.server_delay[tv.worker_server[w]])
        wait = 0.0
        behind = 0.0
        for t in self.queue.get(w, ()):
            k = int(tv.parent[t])
            if self.work_of[k] <= work:  # γ' >= γ_j: it trains first
                wait += float(view.job_remaining[t]) / tv.rate(k, 0)
            else:  # γ' < γ_j: postponed by p
                behind += 1.0 / float(tv.first[k + 1] - tv.first[k])
        return (delay + wait + p) / d + p * behind

    # --- Alg. 2 ----------------------------------------------------------------------------

    def greedy(self, view, j: int, now: float) -> list:
        """Dispatch job ``j``'s chunks (Alg. 2); return the Dispatch actions."""
        tv = view.tasks
        lo, hi = int(tv.first[j]), int(tv.first[j + 1])
        d_j = hi - lo
        kind = int(tv.task_type[lo])
        edge = tv.edge_workers
        workers = edge[tv.worker_type[edge] == kind].tolist()
        cloud = -1 if self.edge_only else tv.cloud_worker(lo)
        if not workers and cloud < 0:
            raise PolicyError(
                f"policy '{self.name}': job '{tv.job_id[j]}' needs workers of type "
                f"'{tv.types[kind]}' and the edge has none"
            )
        p_edge = self.chunk_time(view, j, 0)
        work = d_j * p_edge  # 1 / γ_j: HAPRF serves the least first
        self.work_of[j] = work
        q = {w: self.calculate_q(view, j, w, p_edge, work) for w in workers}  # lines 3-8
        q_cloud = np.inf
        if cloud >= 0:
            delay_c = float(tv.server_delay[tv.worker_server[cloud]])
            q_cloud = (delay_c + self.chunk_time(view, j, 1)) / d_j  # Alg. 3 line 8, zeta_j = 1
        actions = []
        for d in range(d_j):
            t = lo + d
            best = min(q, key=q.__getitem__) if q else -1  # line 11 (lowest index on ties)
            if best < 0 or q_cloud < q[best]:  # lines 12-16: this and every later chunk
                arrive = now + delay_c
                if d == 0:
                    self.to_cloud.add(j)
                for u in range(t, hi):
                    actions.append(Dispatch(u, tv.cloud_worker(u)))
                    heapq.heappush(self.due, (arrive, -1 - u))
                break
            if d == 0 and cloud >= 0:  # lines 17-20: no longer wholly in the cloud
                q_cloud = (delay_c + p_edge) / d_j
            actions.append(Dispatch(t, best))
            key = (work, t)
            keys = self.keys.setdefault(best, [])
            at = bisect.bisect_right(keys, key)
            keys.insert(at, key)
            self.queue.setdefault(best, []).insert(at, t)
            self.dirty.add(best)
            ready = now + float(tv.server_delay[tv.worker_server[best]])
            self.ready_at[t] = ready
            heapq.heappush(self.due, (ready, best))
            q[best] = self.calculate_q(view, j, best, p_edge, work)  # lines 21-22
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
        for w in sorted(self.dirty):
            queue = self.queue.get(w, [])
            holder = int(view.gpu_job[w, 0])
            best = -1
            for t in queue:
                if self.ready_at[t] <= now + 1e-9:
                    best = t
                    break
            if best < 0 or best == holder:
                continue
            if holder >= 0:
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
            self.work_of = np.full(tv.n_parents, np.inf)
            self.ready_at = np.full(tv.parent.shape[0], np.inf)
        for t in view.finished.tolist():  # a chunk finished: its worker picks the next
            w = int(tv.bound[t])
            if w in self.queue:
                i = self.queue[w].index(t)
                del self.queue[w][i]
                del self.keys[w][i]
                self.dirty.add(w)
        actions: list = []
        self.to_cloud: set[int] = set()  # jobs sent wholly to the cloud by this decision
        arrived = sorted({int(tv.parent[t]) for t in view.arrived.tolist()})  # line 2
        for j in arrived:
            actions += self.greedy(view, j, now)  # line 3
        more, started, preempted = self.run_workers(view, now)
        actions += more
        holding = holding_after(view, started, preempted)
        actions += assign_ps(view, self._rng, holding, self.to_cloud)  # line 4
        wake = self.due[0][0] if self.due else None  # run_workers popped those due now
        return Decision(actions=actions, wake_at=wake)
