"""Tiresias discretized two-dimensional LAS: priority queues on attained GPU-seconds, no knowledge of durations.

Gu et al., "Tiresias: A GPU Cluster Manager for Distributed Deep Learning",
NSDI 2019, section 4.2 (Discretized 2D-LAS), with the semantics of the authors'
simulator (SymbioticLab/Tiresias, ``simulator/run_sim.py``, ``dlas_sim_jobs`` with
``gputime=True``, i.e. ``dlas-gpu``) so that results can be cross-checked:

* attained service a_j = g_j x (time run), in GPU-seconds; a job is in level
  q_j = #{k : a_j >= T_k} for thresholds T = (3250, 7200, 18000) GPU-s by default
  (the simulator's ``queue_limit``); level 0 is served first;
* within a level, jobs holding GPUs come before queued ones (the simulator moves
  pending jobs to the end of their queue after every pass), then FIFO by first
  start (never-started jobs by submission), as the paper's "FIFO within a queue";
* at every arrival, completion and level crossing, all unfinished jobs are
  re-packed in that order while \\sum g_j <= G, skipping jobs that do not fit;
  running jobs left out are preempted;
* starvation (``-p starve=K``, 0 = off as in ``dlas-gpu``): a queued job below
  the top level whose wait since it was last queued reaches K times its run time
  since its last promotion goes back to level 0 (its service counter restarts),
  the simulator's ``solve_starvation`` rule.

Deviations, chosen deliberately: demotion happens at the exact crossing time
(the simulator's integer division can jump early and miss it); with more than
one level crossed at once a job drops all of them (the simulator drops one per
event). The ``starve`` knob is implemented in Python only, so ``starve > 0``
runs without the fused kernel path.
"""

from __future__ import annotations

import numpy as np

from gpusched.policy import KEY_LAS, Decision, Fused
from gpusched.state import QUEUED, SAVING


class TiresiasPolicy:
    """Discretized 2D-LAS over attained GPU-seconds."""

    name = "tiresias"
    knows_duration = False
    needs_predictor = False
    work_conserving = True

    def __init__(
        self,
        *,
        thresholds: str = "3250,7200,18000",
        starve: float = 0.0,
        rng: np.random.Generator | None = None,
    ) -> None:
        from gpusched.errors import ParamError

        try:
            levels = tuple(float(x) for x in thresholds.split(",") if x.strip())
        except ValueError:
            raise ParamError(
                f"policy 'tiresias': thresholds must be comma-separated GPU-seconds, got '{thresholds}'"
            ) from None
        if any(b <= a for a, b in zip(levels, levels[1:], strict=False)) or any(
            t <= 0 for t in levels
        ):
            raise ParamError(
                f"policy 'tiresias': thresholds must be positive and increasing, got '{thresholds}'"
            )
        if starve < 0:
            raise ParamError(f"policy 'tiresias': starve must be >= 0, got {starve}")
        self.thresholds = np.array(levels)
        self.starve = starve
        self._base: dict[int, float] = {}  # attained GPU-s at each job's last promotion

    def fused(self) -> Fused | None:
        if self.starve > 0:
            return None
        return Fused(KEY_LAS, preemptive=True, thresholds=tuple(self.thresholds))

    def _service(self, view, jobs: np.ndarray) -> np.ndarray:
        a = view.job_attained[jobs].astype(np.float64)
        if self._base:
            a -= np.array([self._base.get(int(j), 0.0) for j in jobs])
        return a

    def _level(self, a: np.ndarray) -> np.ndarray:
        # q_j = #{k : a_j >= T_k}, with the kernel's 1e-6 GPU-s tolerance
        return np.searchsorted(self.thresholds - 1e-6, a, side="right")

    def decide(self, view, now: float) -> Decision:
        if self.starve > 0:
            q = view.queued
            a = self._service(view, q)
            ran = a / view.job_n_gpus[q]  # run time since the last promotion, s
            starving = (self._level(a) > 0) & (ran > 0)
            starving &= view.job_enqueued[q] + self.starve * ran <= now + 1e-9
            for j in q[starving]:
                self._base[int(j)] = float(view.job_attained[j])
        holding = view.running[view.job_status[view.running] != SAVING]
        active = np.union1d(view.queued, holding)
        level = self._level(self._service(view, active))
        queued = view.job_status[active] == QUEUED
        first = view.job_first_start[active]
        since = np.where(np.isnan(first), view.job_submit[active], first)
        key = 2.0 * level + queued  # level first, holders before waiters
        return Decision(order=active[np.lexsort((active, since, key))], preemptive=True)

    def wake(self, view, now: float) -> float | None:
        """Next level crossing of a holder, b_j + (T_q - a_j) / g_j (b_j: now, or the end of
        its load), or starvation due time.

        Only while some job waits: with an empty queue a crossing cannot change the
        allocation (the re-pack would select every holder again).
        """
        if view.queued.size == 0:
            return None
        wake = np.inf
        run = view.running[view.job_status[view.running] != SAVING]
        a = self._service(view, run)
        level = self._level(a)
        below = level < self.thresholds.size
        if below.any():
            gap = self.thresholds[level[below]] - a[below]
            # a loading job gains service only once its load ends
            begin = np.maximum(now, view.job_phase_end[run[below]])
            wake = float((begin + gap / view.job_n_gpus[run[below]]).min())
        if self.starve > 0:
            q = view.queued
            a = self._service(view, q)
            ran = a / view.job_n_gpus[q]
            waiting = (self._level(a) > 0) & (ran > 0)
            if waiting.any():
                wake = min(wake, float((view.job_enqueued[q] + self.starve * ran)[waiting].min()))
        return None if wake == np.inf else wake
