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
  chunk. :meth:`AOnlinePolicy.q_many` evaluates the same sums for all of a job's candidate
  workers at once, over arrays of their chunks (:class:`~gpusched.algorithms.edge_cloud.ChunkRows`), instead of a walk over
  each worker's queue; ``calculate_q`` stays as the readable reference, and tests check
  that both give the same schedules;
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

Why this module is longer than ~200 lines: it holds Alg. 1-4 (A_ps is in
:mod:`gpusched.algorithms.edge_cloud`, with the chunk rows ``q_many`` reads), and eq. 5
twice: ``calculate_q``, the readable reference that follows Alg. 3 line by line, and
``q_many``, the same sums over arrays that the runs use; the tests hold them equal.
"""

from __future__ import annotations

import heapq

import numpy as np

from gpusched.algorithms.edge_cloud import ChunkRows, assign_ps, tie_q, tie_q_many
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
    #: eq. 5 over all candidates at once (q_many); False: the readable walk, calculate_q
    fast = True

    def __init__(self, *, rng: np.random.Generator | None = None) -> None:
        self._rng = rng if rng is not None else np.random.default_rng(0)
        self.prepare(None, None)

    def prepare(self, jobs, cluster) -> None:
        """Start of a run: every worker's queue is empty."""
        #: per worker (edge or bounded cloud): its unfinished chunks
        self.rows: ChunkRows | None = None
        self.dirty: set[int] = set()
        #: a heap of (ready time, n, the (worker or -1 for an unbounded cloud's, chunk) pairs
        #: whose data is there then), one entry per job and ready time (n: in push order)
        self.due: list[tuple[float, int, list[tuple[int, int]]]] = []
        self._n_due = 0
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
        self.w_delay = np.asarray(tv.server_delay)[np.asarray(tv.worker_server)]
        self.serial_w = np.asarray(tv.server_serial)[np.asarray(tv.worker_server)]
        self.parent = np.asarray(tv.parent, dtype=np.int64)
        fixed = np.concatenate([np.asarray(tv.edge_workers), np.asarray(tv.cloud_workers)])
        self.rows = ChunkRows(fixed.astype(np.int64), self.in_cloud.shape[0], tv.parent.shape[0])
        #: per worker: its ready chunks holding no worker, as a heap of (key, chunk)
        self.ready_heap: dict[int, list[tuple[float, int]]] = {}

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

    def queue_of(self, w: int) -> list[int]:
        """Worker ``w``'s unfinished chunks in HAPRF order (key, then chunk)."""
        assert self.rows is not None and self.work_of is not None
        ids = self.rows.row(w)
        keys = self.work_of[self.parent[ids]]
        return [int(t) for t in ids[np.lexsort((ids, keys))]]

    def calculate_q(self, view, j: int, w: int, p: float, work: float) -> float:
        """Eq. 5 for a chunk of job ``j`` (chunk time ``p``, HAPRF key ``work``) on worker
        ``w``, walking its queue in HAPRF order (the reference for :meth:`q_many`). On a
        bounded cloud's worker the running chunk is waited for whatever its γ (no
        preemption there)."""
        tv = view.tasks
        d = float(tv.first[j + 1] - tv.first[j])
        delay = float(tv.server_delay[tv.worker_server[w]])
        holder = int(view.gpu_job[w, 0]) if view.gpu_n_jobs[w] else -1
        no_preempt = bool(self.in_cloud[w])
        wait = 0.0
        behind = 0.0
        for t in self.queue_of(w):
            k = int(tv.parent[t])
            if self.work_of[k] <= work or (no_preempt and t == holder):  # it trains first
                wait += self._p_left(view, t)
            else:  # γ' < γ_j: postponed by p
                behind += 1.0 / float(tv.first[k + 1] - tv.first[k])
        return (delay + wait + p) / d + p * behind

    def q_many(self, view, j: int, ws: list[int], p: float, work: float) -> np.ndarray:
        """Eq. 5 as :meth:`calculate_q` on every worker of ``ws`` at once."""
        assert self.rows is not None and self.work_of is not None and self.wholly is not None
        w = np.asarray(ws, dtype=np.int64)
        d = float(self.inv_d[j])
        r = self.rows.of[w]
        n = self.rows.n[r]
        width = int(n.max()) if n.size else 0
        if width == 0:
            out0: np.ndarray = (self.w_delay[w] + p) * d
            return out0
        ids = self.rows.ids[r, :width]
        valid = ids >= 0
        t = np.where(valid, ids, 0)
        par = self.parent[t]
        rate = np.where(self.wholly[par], self.rate1[par], self.rate0[par])
        left = np.asarray(view.job_remaining, dtype=np.float64)[t] / rate
        ahead = valid & (self.work_of[par] <= work)
        held = np.asarray(view.gpu_job[w, 0])  # (-1: idle)
        cloud = self.in_cloud[w]
        if cloud.any():  # no preemption in the cloud: its running chunk is waited for
            ahead |= valid & cloud[:, None] & (ids == held[:, None])
        wait = np.where(ahead, left, 0.0).sum(axis=1)
        behind = np.where(valid & ~ahead, self.inv_d[par], 0.0).sum(axis=1)
        out: np.ndarray = (self.w_delay[w] + wait + p) * d + p * behind
        return out

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
        in_cloud = self.in_cloud

        def q_of(ws: list[int], p: float) -> dict[int, float]:
            if self.fast:
                return dict(zip(ws, self.q_many(view, j, ws, p, work).tolist(), strict=True))
            return {w: self.calculate_q(view, j, w, p, work) for w in ws}

        # lines 3-8: Q of the first chunk on every candidate; a heap of (Q, cloud, worker)
        # for the least (edge first, then lowest index on ties), stale entries skipped
        q = q_of(edge, p_edge)
        wholly = True  # every chunk of j placed so far is in the cloud (zeta_j = 1)
        self.wholly[j] = True
        q.update(q_of(clouds, p_cloud))
        tq = dict(zip(q, tie_q_many(np.fromiter(q.values(), float, len(q))).tolist(), strict=True))
        heap = [(tq[w], bool(in_cloud[w]), w) for w in q]
        heapq.heapify(heap)
        q_cloud = np.inf
        if own_cloud:
            cloud_server = int(tv.worker_server[tv.cloud_worker(lo)])
            delay_c = float(tv.server_delay[cloud_server])
            q_cloud = (delay_c + p_cloud) / d_j  # Alg. 3 line 8, zeta_j = 1
        tq_cloud = tie_q(q_cloud)
        to_t: list[int] = []  # the chunks dispatched, and their workers (one action)
        to_w: list[int] = []
        sent: dict[int, int] = {}  # chunks of j shipped to each server by this decision
        due: dict[float, list[tuple[int, int]]] = {}  # ready time -> (worker, chunk) pairs
        for d in range(d_j):
            t = lo + d
            while heap and heap[0][0] != tq[heap[0][2]]:
                heapq.heappop(heap)  # stale
            best_q, cloud, best = heap[0] if heap else (np.inf, True, -1)  # line 11
            if best < 0 or tq_cloud < best_q:  # lines 12-16: this and later chunks
                if d == 0:
                    self.to_cloud.add(j)
                arrive = tv.ship_times(j, cloud_server, now, hi - t)
                for i, u in enumerate(range(t, hi)):
                    to_t.append(u)
                    to_w.append(tv.cloud_worker(u))
                    due.setdefault(float(arrive[i]), []).append((-1, u))
                break
            if not cloud and wholly:  # lines 17-20: no longer wholly in the cloud
                wholly = False
                self.wholly[j] = False
                if own_cloud:
                    q_cloud = (delay_c + p_edge) / d_j
                    tq_cloud = tie_q(q_cloud)
                for w, v in q_of(clouds, p_edge).items():  # a bounded cloud: at zeta_j = 0
                    q[w] = v
                    tq[w] = tie_q(v)
                    heapq.heappush(heap, (tq[w], True, w))
            to_t.append(t)
            to_w.append(best)
            self.rows.insert(best, t)
            self.dirty.add(best)
            if self.serial_w[best]:  # one after another behind j's chunks shipped there
                server = int(tv.worker_server[best])
                k = sent.get(server, 0)
                sent[server] = k + 1
                ready = float(tv.ship_times(j, server, now, k + 1)[-1])
            else:
                ready = now + float(self.w_delay[best])
            self.ready_at[t] = ready
            due.setdefault(ready, []).append((best, t))
            # lines 21-22: the chunk just queued is ahead of j's next one (equal γ), so Q
            # grows by p / D_j (the reference path recomputes it)
            p = p_cloud if cloud and wholly else p_edge
            q[best] = q[best] + p / d_j if self.fast else self.calculate_q(view, j, best, p, work)
            tq[best] = tie_q(q[best])
            heapq.heappush(heap, (tq[best], cloud, best))
        if wholly and clouds:
            self.to_cloud.add(j)  # wholly on the bounded cloud's workers: its PS goes there
        for ready, pairs in due.items():
            heapq.heappush(self.due, (ready, self._n_due, pairs))
            self._n_due += 1
        return [Dispatch(np.asarray(to_t, dtype=np.int64), np.asarray(to_w, dtype=np.int64))]

    # --- the schedule of Alg. 4 ---------------------------------------------------------

    def run_workers(self, view, now: float) -> tuple[list, list[int], list[int]]:
        """HAPRF on every worker whose queue or chunks changed; start cloud chunks that
        are ready. Returns the actions, the chunks started and those preempted."""
        tv = view.tasks
        status = view.job_status
        actions: list = []
        started: list[int] = []
        preempted: list[int] = []
        work_of = self.work_of
        parent = self.parent
        heaps = self.ready_heap
        to_w: list[int] = []  # the workers of ``started``'s chunks (one Start at the end)
        cloud: list[tuple[float, int]] = []  # (ready time, chunk) of the cloud's due now
        while self.due and self.due[0][0] <= now + 1e-9:
            ready, _, pairs = heapq.heappop(self.due)
            for w, u in pairs:
                if w >= 0:  # its data is on its worker: the worker may take it now
                    heapq.heappush(heaps.setdefault(w, []), (float(work_of[parent[u]]), u))
                    self.dirty.add(w)
                elif status[u] == QUEUED:
                    cloud.append((ready, u))
        for _, u in sorted(cloud):  # in order of arrival, then index
            started.append(u)
            to_w.append(tv.cloud_worker(u))
        for w in sorted(self.dirty):
            heap = heaps.get(w)
            if not heap:
                continue
            key, best = heap[0]  # HAPRF: the least key (highest average rate), then first
            holder = int(view.gpu_job[w, 0])
            if holder >= 0:
                if self.in_cloud[w]:
                    continue  # the cloud does not preempt (Sec. III)
                held = float(work_of[parent[holder]])
                if key >= held:
                    continue  # the running chunk comes first, or equal γ: it keeps its worker
                preempted.append(holder)  # postponed on the same worker
                heapq.heappush(heap, (held, holder))
            heapq.heappop(heap)
            started.append(best)
            to_w.append(w)
        self.dirty.clear()
        if preempted:  # one Preempt of them all, then one Start
            actions.append(Preempt(np.asarray(preempted, dtype=np.int64)))
        if started:  # after the Preempts, which free their workers: as if each came first
            actions.append(Start(np.asarray(started, dtype=np.int64), np.asarray(to_w)))
        return actions, started, preempted

    # --- Alg. 1 ----------------------------------------------------------------------------

    def decide(self, view, now: float) -> Decision:
        tv = view.tasks
        if self.work_of is None:
            self._setup(view)
        rows = self.rows
        assert rows is not None
        for t in view.finished.tolist():  # a chunk finished: its worker picks the next
            if rows.slot[t] >= 0:
                w = int(tv.bound[t])
                rows.remove(w, t)
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
