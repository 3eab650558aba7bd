"""Tiresias discretized 2D-LAS: priority queues on attained GPU-seconds, no knowledge of durations.

Gu et al., "Tiresias: A GPU Cluster Manager for Distributed Deep Learning", NSDI 2019
(USENIX), section 3.2: two-dimensional attained service (2DAS) with LAS priorities,
discretized into queues. Semantics of the authors' simulator (SymbioticLab/Tiresias,
``simulator/run_sim.py``, ``dlas_sim_jobs`` with ``gputime=True``, i.e. ``dlas-gpu``),
so that results can be cross-checked:

* attained service a_j = g_j x (time run), in GPU-seconds; a job is in level
  q_j = #{k : a_j >= T_k}; level 0 is served first. Default T = (3250, 7200) GPU-s:
  three levels [0, 3250), [3250, 7200), [7200, inf), as the simulator's
  ``num_queue = 3`` uses only the first two limits of ``queue_limit = [3250, 7200, 18000]``;
* each level is a list: an arrival joins the back of level 0, a job that crosses a
  threshold joins the back of its new level (behind the jobs waiting there), and after
  every re-pack the jobs holding GPUs move to the front of their lists, in list order,
  ahead of the waiting ones (which keep their order). Simultaneous joins go in
  submission order. (This is how the simulator realises the paper's FIFO order within
  a queue; it differs from FIFO by submission or by start once jobs are preempted.)
* at every arrival, completion and level crossing (while some job waits), all unfinished
  jobs are re-packed, level by level in list order, while \\sum g_j <= G, skipping jobs
  that do not fit; running jobs left out are preempted;
* starvation (``-p starve=K``, 0 = off as in ``dlas-gpu``; K plays the paper's
  PROMOTEKNOB): a queued job below the top level whose wait since it was last queued
  reaches K times its run time since its last promotion joins the back of level 0,
  behind the jobs that arrived by then, and its service counter restarts. (The
  simulator's ``solve_starvation`` compares with all the time waited since the last
  promotion instead of the current wait.)

Deviations, chosen deliberately: a job is demoted at the decision point of its exact
crossing time, when a_j reaches T_k (the paper's rule); the simulator checks at
``ceil((T_k - executed_run_s) / g_j)`` s ahead, which mixes run seconds and
GPU-seconds and divides integers, so it demotes multi-GPU jobs late. A job that crosses
several thresholds between two decision points drops all of them at once (the
simulator drops one per event). The fused kernel path applies the starvation rule too
(``Fused.starve``), with the same arithmetic; a property test holds both paths to the same
schedule.
"""

from __future__ import annotations

from bisect import bisect_right
from heapq import heappop, heappush

import numpy as np

from gpusched.policy import KEY_LAS, Decision, Fused, parse_levels
from gpusched.state import QUEUED, SAVING


class TiresiasPolicy:
    """Discretized 2D-LAS over attained GPU-seconds, one list per level."""

    name = "tiresias"
    knows_duration = False
    needs_predictor = False
    work_conserving = True

    def __init__(
        self,
        *,
        thresholds: str = "3250,7200",
        starve: float = 0.0,
        rng: np.random.Generator | None = None,
    ) -> None:
        from gpusched.errors import ParamError

        levels = parse_levels("tiresias", thresholds, "GPU-seconds")
        if len(levels) > 100:  # the kernel keeps levels in int8
            raise ParamError(f"policy 'tiresias': at most 100 thresholds, got {len(levels)}")
        if starve < 0:
            raise ParamError(f"policy 'tiresias': starve must be >= 0, got {starve}")
        self.thresholds = np.array(levels)
        # the level edges with the kernel's 1e-6 GPU-s tolerance (see _level), and the
        # next threshold of each level (inf for the last)
        self._edges = self.thresholds - 1e-6
        self._edge_list: list[float] = self._edges.tolist()
        self._next_t = np.append(self.thresholds, np.inf)
        self.starve = starve
        self.prepare(None, None)

    def fused(self) -> Fused | None:
        return Fused(
            KEY_LAS, preemptive=True, thresholds=tuple(self.thresholds), starve=self.starve
        )

    def prepare(self, jobs, cluster) -> None:
        """Start of a run: no job is in a list yet and none has been promoted."""
        #: attained GPU-s of each job at its last promotion (starvation; 0 until then)
        self._base = np.zeros(0)
        # each job's level and place in that level's list, as the fused kernel keeps them
        # (gpusched.state: job_level, job_seq): places >= 0 are times since the first
        # submission at which the job joined the back; holders of a re-pack get places < 0
        self._level_of = np.zeros(0, dtype=np.int64)
        self._place = np.zeros(0)
        self._front = 0.0  # the smallest place handed out so far
        # starvation: (due time, job, time it entered the queue) of queued jobs that can
        # starve, a heap; an entry is stale once its job left the queue (see _due_jobs)
        self._due: list[tuple[float, int, float]] = []
        #: the jobs holding GPUs at the last call: those that can enter the queue next
        self._seen = np.zeros(0, dtype=np.int64)
        self._no_saves = False

    def _begin(self, view) -> None:
        """First decision of a run: no job is placed, promoted or holds GPUs yet."""
        n = view.job_submit.size
        self.prepare(None, None)
        self._level_of = np.zeros(n, dtype=np.int64)
        self._place = np.full(n, np.nan)
        self._base = np.zeros(n if self.starve > 0 else 0)
        self._seen = view.running
        self._no_saves = not np.count_nonzero(view.job_save_s)  # then none is ever SAVING

    def _service(self, view, jobs: np.ndarray) -> np.ndarray:
        a = view.job_attained[jobs]  # a new float64 array
        if self._base.size:
            a -= self._base[jobs]
        return a

    def _level(self, a: np.ndarray) -> np.ndarray:
        # q_j = #{k : a_j >= T_k}, with the kernel's 1e-6 GPU-s tolerance
        return self._edges.searchsorted(a, "right")

    def _holding(self, view) -> np.ndarray:
        """The jobs holding GPUs that are not saving, ascending."""
        run = view.running
        return run if self._no_saves else run[view.job_status[run] != SAVING]

    def _enter(self, view) -> None:
        """Starvation: add the jobs that entered the queue since the last call to the heap.

        Only a job that ran can starve, and it enters the queue from holding GPUs (after
        a preemption, or when its save ends), so the holders of the last call are the
        candidates. While a job waits, neither the time it entered the queue e_j nor its
        service since its last promotion a_j changes: it starves at e_j + K a_j / g_j,
        when it is below level 0 and a_j > 0 (the arithmetic of the fused kernel).
        """
        seen = self._seen
        if seen.size:
            back = seen[view.job_status[seen] == QUEUED]
            if back.size:
                att, base, gpus = view.job_attained, self._base, view.job_n_gpus
                for j in back.tolist():
                    a = float(att[j]) - float(base[j])
                    ran = a / int(gpus[j])  # run time since the last promotion, s
                    if ran > 0 and bisect_right(self._edge_list, a) > 0:
                        e = float(view.job_enqueued[j])
                        heappush(self._due, (e + self.starve * ran, j, e))
        self._seen = view.running

    def _fresh(self, view, entry: tuple[float, int, float]) -> bool:
        """The heap entry's job still waits since the time it was added."""
        j = entry[1]
        return bool(view.job_status[j] == QUEUED and view.job_enqueued[j] == entry[2])

    def _starving(self, view, now: float) -> list[int]:
        """The queued jobs whose due time is reached (removed from the heap)."""
        heap, out = self._due, []
        limit = now + 1e-9
        while heap and heap[0][0] <= limit:
            entry = heappop(heap)
            if self._fresh(view, entry):
                out.append(entry[1])
        return out

    def decide(self, view, now: float) -> Decision:
        q = view.queued
        begun = self._place.size == view.job_submit.size
        if q.size == 0:
            if begun and self.starve > 0:
                self._enter(view)
            return Decision()  # nothing waits: the re-pack would keep every holder
        if not begun:  # first decision of a run
            self._begin(view)
        lvl, place, t0 = self._level_of, self._place, view.job_submit[0]
        holding = self._holding(view)
        if holding.size:
            # the holders of the last re-pack go to the front of their lists, in its order
            h = holding[np.lexsort((holding, place[holding], lvl[holding]))]
            self._front -= h.size
            place[h] = self._front + np.arange(h.size)
        # arrivals join the back of their level (level 0: nothing attained); every other
        # queued job was placed at an earlier decision point
        new = view.arrived
        if new.size:
            new = new[np.isnan(place[new])]
            lvl[new] = self._level(self._service(view, new))
            place[new] = view.job_submit[new] - t0
        if self.starve > 0:
            self._enter(view)
            starving = self._starving(view, now)
            if starving:
                j = np.array(sorted(starving))  # back of level 0, behind the arrivals so far
                self._base[j] = view.job_attained[j]
                lvl[j], place[j] = 0, np.nextafter(now - t0, np.inf)
        if holding.size:
            # holders that crossed T_k since the last re-pack join the back of level k + 1
            # at the decision point of the crossing, t_x = now - (a_j - T_k) / g_j
            a = self._service(view, holding)
            new_lvl = self._level(a)
            down = new_lvl > lvl[holding]
            if np.count_nonzero(down):
                j, k = holding[down], new_lvl[down]
                cross = now - (a[down] - self.thresholds[k - 1]) / view.job_n_gpus[j]
                at = np.ceil((cross - 1e-9) / view.slot_s) * view.slot_s + 0.0
                lvl[j], place[j] = k, np.minimum(at, now) - t0
        # queued and holding jobs are disjoint, and the job index breaks ties: the order
        # of their sorted union
        active = np.concatenate((q, holding))
        return Decision(
            order=active[np.lexsort((active, place[active], lvl[active]))], preemptive=True
        )

    def wake(self, view, now: float) -> float | None:
        """Next level crossing of a holder, b_j + (T_q - a_j) / g_j (b_j: now, or the end of
        its load), or starvation due time.

        Only while some job waits: with an empty queue a crossing cannot change the
        allocation (the re-pack would select every holder again).
        """
        begun = self._place.size == view.job_submit.size
        if view.queued.size == 0:
            if begun and self.starve > 0:
                self._enter(view)
            return None
        if not begun:
            self._begin(view)
        wake = np.inf
        run = self._holding(view)
        if run.size:
            a = self._service(view, run)
            # a job in the last level never crosses (inf); a loading job gains service
            # only once its load ends
            gap = self._next_t[self._level(a)] - a
            begin = np.maximum(now, view.job_phase_end[run])
            wake = min((begin + gap / view.job_n_gpus[run]).tolist())
        if self.starve > 0:
            self._enter(view)
            heap = self._due
            while heap and not self._fresh(view, heap[0]):
                heappop(heap)
            if heap:
                wake = min(wake, heap[0][0])
        return None if wake == np.inf else wake
