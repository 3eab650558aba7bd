"""Shortest remaining time first: preemptive; at every event all unfinished jobs are re-packed by remaining time.

Semantics of ``shortest_first_sim_jobs`` (``'shortest'``) in the Tiresias simulator
(SymbioticLab/Tiresias, ``simulator/run_sim.py``): at every arrival and completion,
all unfinished jobs in order of remaining time r_j get GPUs greedily while
\\sum g_j <= G, skipping those that do not fit; running jobs left out are
preempted. Deviation: the simulator re-places every job from scratch (free
migration); here running jobs keep their GPUs and new ones are placed
consolidated first, which selects the same jobs with GPU-count placement.
Ties go to the earlier submission.
"""

from __future__ import annotations

import numpy as np

from gpusched.policy import KEY_SRTF, Decision, Fused
from gpusched.state import SAVING


class SRTFPolicy:
    """All unfinished jobs by remaining time r_j ascending, preempting the rest."""

    name = "srtf"
    knows_duration = True
    needs_predictor = False
    work_conserving = True

    def __init__(self, *, rng: np.random.Generator | None = None) -> None:
        pass

    def fused(self) -> Fused:
        return Fused(KEY_SRTF, preemptive=True, blocking=False)

    def decide(self, view, now: float) -> Decision:
        holding = view.running[view.job_status[view.running] != SAVING]
        active = np.union1d(view.queued, holding)  # ascending index: ties by submission
        order = active[np.argsort(view.job_remaining[active], kind="stable")]  # min r_j first
        return Decision(order=order, preemptive=True)
