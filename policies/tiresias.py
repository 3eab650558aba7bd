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

* periodic mode (``-p interval=S``, 0 = off, the default): the re-pack above runs only at
  multiples of ``S`` s, as the Pollux artifact's Tiresias+TunedJobs is re-run every 60 s
  (petuum/adaptdl@c793c70 ``simulator/simulator.py`` L402-403 and ``tiresias.py``; its
  two queues split at 16 GPU-hours are ``thresholds=57600``); between cycles an arrival
  waits, GPUs freed by a completion stay idle and a level crossing counts at the next
  cycle. The lists are kept as above (arrivals join in submission order). It runs on the
  Python path only (no fused rule), and cannot be combined with ``starve``.
* ``-p order=arrival`` (default ``held-first``, the list order above): the jobs holding
  GPUs are not moved to the front of their lists, so each level stays in the order jobs
  joined it and a waiting job preempts holders that joined after it, as the Pollux
  artifact's two queues (``tiresias.py`` L26-43, L59-69: queue 0 in arrival order, queue 1
  in demotion order). Python path only.

Deviations, chosen deliberately: a job is demoted at the decision point of its exact
crossing time, when a_j reaches T_k (the paper's rule); the simulator checks at
``ceil((T_k - executed_run_s) / g_j)`` s ahead, which mixes run seconds and
GPU-seconds and divides integers, so it demotes multi-GPU jobs late. A job that crosses
several thresholds between two decision points drops all of them at once (the
simulator drops one per event). The fused kernel path applies the starvation rule too
(``Fused.starve``), with the same arithmetic; a property test holds both paths to the same
schedule.

Why this module is longer than ~200 lines: ``decide`` keeps the lists up to date as jobs
arrive, start, stop, cross a threshold or starve (the lists themselves are
:class:`gpusched.algorithms.level_lists.LevelLists`), rather than sorting every job at every
decision, and ``wake`` computes the next crossing and starvation time: together the same
rule as the fused kernel's, at the cost of what changed (docs/benchmarks.md: the Python
path's decision cost).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from heapq import heappop, heappush
from typing import Annotated

import numpy as np

from gpusched.algorithms.level_lists import LevelLists
from gpusched.core.policy import KEY_LAS, Cycles, Decision, Fused, Range, parse_levels
from gpusched.core.state import QUEUED, SAVING

#: A level's list order: holders moved to the front after each re-pack (the Tiresias
#: simulator's), or arrival order kept (the Pollux artifact's queues, its tiresias.py
#: L26-43, L59-69)
ORDERS = ("held-first", "arrival")


class TiresiasPolicy:
    """Discretized 2D-LAS over attained GPU-seconds, one list per level.

    The lists are kept as such (Python lists, changed as jobs arrive, start, stop,
    cross a threshold or starve), so a decision costs what changed rather than a sort
    of every job; the order is the one of (level, place, job index) the fused kernel
    sorts by.
    """

    name = "tiresias"
    knows_duration = False
    needs_predictor = False
    work_conserving = True

    def __init__(
        self,
        *,
        thresholds: str = "3250,7200",
        starve: Annotated[float, Range(0, 1e6)] = 0.0,
        interval: Annotated[float, Range(0, 1e9)] = 0.0,
        order: str = "held-first",
        rng: np.random.Generator | None = None,
    ) -> None:
        from gpusched.errors import ParamError

        levels = parse_levels("tiresias", thresholds, "GPU-seconds")
        if len(levels) > 100:  # the kernel keeps levels in int8
            raise ParamError(f"policy 'tiresias': at most 100 thresholds, got {len(levels)}")
        self.thresholds = np.array(levels)
        # the level edges with the kernel's 1e-6 GPU-s tolerance (see _level), and the
        # next threshold of each level (inf for the last)
        self._edges = self.thresholds - 1e-6
        self._edge_list: list[float] = self._edges.tolist()
        self._thr_list: list[float] = self.thresholds.tolist()
        self._next_t = np.append(self.thresholds, np.inf)
        #: the level of no service: 0 unless a threshold is within the tolerance of 0
        self._level0 = int(self._level(np.zeros(1))[0])
        self.starve = starve
        if interval > 0 and starve > 0:
            raise ParamError("policy 'tiresias': interval and starve cannot be combined")
        self.interval = float(interval)
        if order not in ORDERS:
            raise ParamError(
                f"policy 'tiresias': order must be one of {', '.join(ORDERS)}, got {order!r}"
            )
        self.order = order
        self.prepare(None, None)

    def fused(self) -> Fused | None:
        if self.interval > 0 or self.order != ORDERS[0]:  # these run on the Python path only
            return None
        return Fused(
            KEY_LAS, preemptive=True, thresholds=tuple(self.thresholds), starve=self.starve
        )

    def prepare(self, jobs, cluster) -> None:
        """Start of a run: no job is in a list yet and none has been promoted."""
        #: attained GPU-s of each job at its last promotion (starvation; 0 until then)
        self._base = np.zeros(0)
        #: the jobs of each level in list order (none yet)
        self._lists = LevelLists(self._next_t.size, 0)
        self._n_listed = 0
        #: the holders (not saving) at the last decide, to tell in wake whether the
        #: re-pack changed them
        self._held = np.zeros(0, dtype=np.int64)
        # when each holder of the last wake (``_xt_of``) reaches its next threshold:
        # ``_xt_at + _xt`` s (None: not worked out, check every holder)
        self._xt: np.ndarray | None = None
        self._xt_of = np.zeros(0, dtype=np.int64)
        self._xt_at = 0.0
        # starvation: (due time, job, time it entered the queue) of queued jobs that can
        # starve, a heap; an entry is stale once its job left the queue (see _fresh)
        self._due: list[tuple[float, int, float]] = []
        #: the jobs holding GPUs at the last look: those that can enter the queue next
        self._seen = np.zeros(0, dtype=np.int64)
        self._no_saves = False
        self._no_loads = False
        self._cycles = Cycles(self.interval) if self.interval > 0 else None  # periodic mode

    def _begin(self, view) -> None:
        """First decision of a run: no job is placed, promoted or holds GPUs yet."""
        n = view.job_submit.size
        self.prepare(None, None)
        self._lists = LevelLists(self._next_t.size, n)
        self._base = np.zeros(n if self.starve > 0 else 0)
        self._seen = view.running
        self._no_saves = not np.count_nonzero(view.job_save_s)  # then none is ever SAVING
        self._no_loads = not np.count_nonzero(view.job_load_s)  # then none is ever LOADING

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

    def _crossed(self, holding: np.ndarray, held: set[int], now: float) -> list[int]:
        """The holders whose level may have grown since the last look (a superset)."""
        xt = self._xt
        if xt is None:
            return holding.tolist()
        # holders whose next threshold is 1 ms away or less (the rest have at least
        # 1e-3 GPU-s to go, above the 1e-6 tolerance); the holders now are some of the
        # holders of the last wake (jobs start only in the re-pack of a decision)
        near = self._xt_of[xt <= now - self._xt_at + 1e-3].tolist()
        return [j for j in near if j in held]

    # --- the policy ----------------------------------------------------------------------

    def _enter(self, view) -> None:
        """Starvation: add the jobs that entered the queue since the last look to the heap.

        Only a job that ran can starve, and it enters the queue from holding GPUs (after
        a preemption, or when its save ends), so the holders of the last look are the
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

    def _waiting(self, view, holding: np.ndarray) -> bool:
        """Does some job wait?"""
        if self._no_saves:  # listed: the queued and the holders
            return self._n_listed > holding.size
        return view.queued.size > 0

    def decide(self, view, now: float) -> Decision:
        if self._lists.n_jobs != view.job_submit.size:  # first decision of a run
            self._begin(view)
        for j in view.finished.tolist():
            self._lists.leave(j)
        self._n_listed -= view.finished.size
        t0 = float(view.job_submit[0])
        # arrivals join the back of their level (of no service: level 0)
        new = view.arrived
        if new.size:
            for j, s in zip(new.tolist(), (view.job_submit[new] - t0).tolist(), strict=True):
                self._lists.join(j, self._level0, s)
            self._n_listed += new.size
        # periodic mode: cycles fall on multiples of interval; while jobs are present every
        # decision asks to wake at the next one, so a cycle is missed only while none is,
        # and then the next is the first multiple at or after now
        cycles = self._cycles
        if cycles is not None and not cycles.due(now, restart_after=float(view.slot_s)):
            return Decision(wake_at=cycles.next)  # between cycles: nothing changes
        holding = self._held = self._holding(view)
        wake_at = cycles.next if cycles is not None else None
        if not self._waiting(view, holding):
            # (with no saves, no job enters the queue between a wake and this call)
            if self.starve > 0 and not self._no_saves:
                self._enter(view)
            return Decision(wake_at=wake_at)  # nothing waits: the re-pack keeps every holder
        held = set(holding.tolist())
        if self.order == ORDERS[0]:
            self._lists.to_front(held)
        if self.starve > 0:
            if not self._no_saves:  # (else no job entered the queue since the wake)
                self._enter(view)
            heap = self._due
            starving = self._starving(view, now) if heap and heap[0][0] <= now + 1e-9 else []
            if starving:
                back = float(np.nextafter(now - t0, np.inf))  # behind the arrivals so far
                for j in starving:
                    self._base[j] = view.job_attained[j]  # its service restarts: level 0
                    self._lists.leave(j)
                    self._lists.join(j, 0, back)
        # holders that crossed T_k since the last re-pack join the back of level k + 1
        # at the decision point of the crossing, t_x = now - (a_j - T_k) / g_j
        att, base, gpus, slot = view.job_attained, self._base, view.job_n_gpus, view.slot_s
        for j in self._crossed(holding, held, now):
            a = float(att[j]) - float(base[j]) if base.size else float(att[j])
            k = bisect_right(self._edge_list, a)
            if k > self._lists.level[j]:
                cross = now - (a - self._thr_list[k - 1]) / int(gpus[j])
                at = math.ceil((cross - 1e-9) / slot) * slot + 0.0
                self._lists.leave(j)
                self._lists.join(j, k, min(at, now) - t0)
        # the lists, level by level: the order of (level, place, job index)
        order = self._lists.order()
        if not self._no_saves:
            order = order[view.job_status[order] != SAVING]
        return Decision(order=order, preemptive=True, wake_at=wake_at)

    def wake(self, view, now: float) -> float | None:
        """Next level crossing of a holder, b_j + (T_q - a_j) / g_j (b_j: now, or the end of
        its load), or starvation due time.

        Only while some job waits: with an empty queue a crossing cannot change the
        allocation (the re-pack would select every holder again).
        """
        run = self._holding(view)
        if self.interval > 0:  # crossings count at the next cycle (decide's wake_at)
            self._held, self._xt = run, None
            return None
        held = self._held
        # did the re-pack start or preempt a job? (the view hands out the same array
        # while the holders stand)
        changed = run is not held and (run.size != held.size or bool(np.count_nonzero(run != held)))
        self._held = run
        self._xt = None
        if not self._waiting(view, run):
            if self.starve > 0:
                self._enter(view)
            return None
        wake = np.inf
        if run.size:
            a = self._service(view, run)
            # a job in the last level never crosses (inf); a loading job gains service
            # only once its load ends
            gap = self._next_t[self._level(a)] - a
            if self._no_loads:  # (a sum rounds monotonically: the same minimum)
                xt, at = gap / view.job_n_gpus[run], now
                wake = now + float(xt.min())
            else:
                begin = np.maximum(now, view.job_phase_end[run])
                xt, at = begin + gap / view.job_n_gpus[run], 0.0
                wake = float(xt.min())
            if self._level0 == 0:  # (every stored level is then its job's level)
                self._xt, self._xt_of, self._xt_at = xt, run, at
        if self.starve > 0:
            if changed or not self._no_saves:  # (else no job entered the queue)
                self._enter(view)
            heap = self._due
            while heap and not self._fresh(view, heap[0]):
                heappop(heap)
            if heap:
                wake = min(wake, heap[0][0])
        return None if wake == np.inf else wake
