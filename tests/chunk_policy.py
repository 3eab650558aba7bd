"""A test policy for jobs made of data chunks: the rule of ``tests/naive.py::simulate_tasks``.

Written with the engine's public actions only (:class:`~gpusched.core.policy.Start`,
:class:`~gpusched.core.policy.Dispatch`, :class:`~gpusched.core.policy.Preempt`,
:class:`~gpusched.core.policy.HostPS`) and what ``view.tasks`` shows, so that
``tests/test_tasks_vs_naive.py`` can run it through ``gpusched.experiments.run`` and compare the engine
with the naive simulator. At each decision:

1. each chunk that arrived and is not placed, in order, is placed on the worker of its type
   with the fewest placed unfinished chunks (lowest index on ties), or in the cloud when
   there is one and that fewest is >= ``edge_queue``: on its own cloud worker (an
   unbounded cloud), or on the bounded cloud's worker of its type with the fewest placed
   unfinished chunks (if it has one) (with ``per_job`` > 0, at most that many chunks of a
   job per decision; the policy then wakes next slot): started at once (holding the worker
   while its data ships) in the unbounded cloud or on a worker with no other chunk placed,
   else dispatched (the worker stays free until the chunk is ready and its turn comes);
2. with ``preempt``, a ready waiting chunk with strictly less work than the chunk holding
   its edge worker preempts that one (which waits there again, never migrating), unless
   that one started at this decision (a Start and a Preempt of one task in a decision
   hit an engine bug: see tests/test_tasks_vs_naive.py);
3. each free edge or bounded-cloud worker starts its first ready waiting chunk (with
   ``preempt``: the one with the least work, then the first);
4. with ``migrate`` (the policy then declares ``migrates``), each edge worker still free
   takes the first (same key) preempted chunk of its type waiting on a worker another
   chunk holds: a Start there moves it (its data ships again);
5. every job left holding a worker without a parameter server gets one: in the cloud for
   a job wholly there, else on the lowest-indexed edge server with a free PS slot, else in
   the cloud; and the policy asks to be woken when the next placed chunk becomes ready.
"""

from __future__ import annotations

import numpy as np

from gpusched.core.policy import Decision, Dispatch, HostPS, Preempt, Start
from gpusched.core.state import FINISHED, QUEUED

#: s: tolerance of "ready now" (as the engine's)
EPS_T = 1e-9


class ChunkFIFO:
    """Chunks to the least-loaded worker of their type, FIFO (or least work) per worker."""

    name = "chunk-fifo"
    knows_duration = True  # the preemptive variant compares the chunks' work
    work_conserving = False
    needs_predictor = False
    runs_tasks = True
    needs_tasks = True

    def __init__(
        self,
        *,
        preempt: bool = False,
        edge_queue: int = 1,
        per_job: int = 0,
        migrate: bool = False,
        rng: np.random.Generator | None = None,
    ) -> None:
        self.preempt = preempt
        self.edge_queue = edge_queue
        self.per_job = per_job
        self.migrates = migrate

    def decide(self, view, now: float) -> Decision:
        tv = view.tasks
        work = view.job_duration
        status = view.job_status
        edge = tv.edge_workers.tolist()
        clouds = tv.cloud_workers.tolist()  # a bounded cloud's workers
        fixed = edge + clouds
        bound = np.array(tv.bound)
        zeta = np.array(tv.zeta)
        queued = dict.fromkeys(fixed, 0)  # placed unfinished chunks per edge or cloud worker
        for t in np.flatnonzero((bound >= 0) & (status != FINISHED)).tolist():
            if int(bound[t]) in queued:
                queued[int(bound[t])] += 1
        holder = {w: int(view.gpu_job[w, 0]) for w in fixed if view.gpu_n_jobs[w] > 0}
        waiting = set(np.flatnonzero((bound >= 0) & (status == QUEUED)).tolist())
        ready = np.array(tv.ready)
        acts: list = []
        started: list[int] = []
        preempted: list[int] = []

        sent: dict[tuple[int, int], int] = {}  # chunks this decision ships per (job, server)

        def ship(t: int, w: int) -> float:
            """When chunk t placed on w now is there (serial links count this decision's)."""
            key = (int(tv.parent[t]), int(tv.worker_server[w]))
            k = sent.get(key, 0)
            sent[key] = k + 1
            return float(tv.ship_times(key[0], key[1], now, k + 1)[-1])

        # 1. place the arrivals
        unplaced = np.flatnonzero((bound < 0) & (status == QUEUED)).tolist()
        placed: dict[int, int] = {}  # chunks placed at this decision per job
        for t in unplaced:
            if self.per_job and placed.get(int(tv.parent[t]), 0) >= self.per_job:
                continue
            placed[int(tv.parent[t])] = placed.get(int(tv.parent[t]), 0) + 1
            mine = [w for w in edge if tv.worker_type[w] == tv.task_type[t]]
            mine_c = [w for w in clouds if tv.worker_type[w] == tv.task_type[t]]
            best = min(mine, key=lambda w: (queued[w], w))
            has_cloud = tv.unbounded_cloud or bool(mine_c)
            cloud = has_cloud and queued[best] >= self.edge_queue
            if not cloud:
                w = best
            elif tv.unbounded_cloud:
                w = tv.cloud_worker(t)
            else:
                w = min(mine_c, key=lambda c: (queued[c], c))
            own = cloud and tv.unbounded_cloud  # its own worker: never queued
            p = int(tv.parent[t])
            if zeta[p] == -1 or not cloud:
                zeta[p] = 1 if cloud else 0
            at = ship(t, w)
            if own or queued[w] == 0:
                acts.append(Start(t, np.asarray([w])))
                started.append(t)
                if not own:
                    holder[w] = t
            else:
                acts.append(Dispatch(t, w))
                ready[t] = at
                waiting.add(t)
            if not own:
                queued[w] += 1
            bound[t] = w

        def key(t: int) -> tuple:
            return (float(work[t]), t) if self.preempt else (t,)

        ready_on: dict[int, list[int]] = {}
        for t in sorted(waiting):
            if ready[t] <= now + EPS_T:
                ready_on.setdefault(int(bound[t]), []).append(t)
        # 2. a ready chunk with less work preempts the one holding its worker
        if self.preempt:
            for w in edge:
                if w in holder and w in ready_on and holder[w] not in started:
                    h = holder.pop(w)
                    if work[min(ready_on[w], key=key)] < work[h]:
                        acts.append(Preempt(h))
                        preempted.append(h)
                        ready_on[w].append(h)
                        waiting.add(h)
                    else:
                        holder[w] = h
        # 3. free workers take their next ready chunk
        for w in fixed:
            if w not in holder and w in ready_on:
                t = min(ready_on[w], key=key)
                acts.append(Start(t, np.asarray([w])))
                started.append(t)
                waiting.discard(t)
                holder[w] = t
        # 4. free edge workers take preempted chunks waiting on a busy worker (moving them)
        if self.migrates:
            n_pre = view.job_n_preempt
            now_pre = set(preempted)
            for w in edge:
                if w in holder:
                    continue
                movable = [
                    t
                    for t in waiting
                    if (n_pre[t] > 0 or t in now_pre)
                    and tv.worker_type[bound[t]] == tv.worker_type[w]
                    and int(bound[t]) in holder
                    and not tv.server_cloud[tv.worker_server[bound[t]]]
                ]
                if not movable:
                    continue
                t = min(movable, key=key)
                ship(t, w)
                acts.append(Start(t, np.asarray([w])))
                started.append(t)
                waiting.discard(t)
                holder[w] = t
                bound[t] = w
        acts += self._ps(view, zeta, started, preempted)
        later = [ready[t] for t in waiting if ready[t] > now + EPS_T]
        if sum(placed.values()) < len(unplaced):
            later.append(now + view.slot_s)  # chunks left to place next slot
        return Decision(actions=acts, wake_at=min(later) if later else None)

    def _ps(self, view, zeta: np.ndarray, started: list[int], preempted: list[int]) -> list:
        """A PS for every job holding a worker after this decision that has none."""
        tv = view.tasks
        gone = set(preempted)
        hold = {int(tv.parent[t]) for t in view.running.tolist() if t not in gone}
        hold |= {int(tv.parent[t]) for t in started}  # (a chunk preempted and moved holds)
        free = np.array(tv.ps_free)
        for p in np.flatnonzero(tv.ps_server >= 0).tolist():
            if p not in hold:  # it holds no worker any more: its PS is given back
                free[tv.ps_server[p]] += 1
        cloud = np.flatnonzero(tv.server_cloud).tolist()
        acts = []
        for p in sorted(hold):
            if tv.ps_server[p] >= 0:
                continue
            room = [s for s in np.flatnonzero(free >= 1).tolist() if not tv.server_cloud[s]]
            server = cloud[0] if zeta[p] == 1 or not room else room[0]
            free[server] -= 1
            acts.append(HostPS(p, server))
        return acts
