"""Shortest job first: non-preemptive, queued jobs in order of duration, skipping those that do not fit.

The classic SJF the issue asks for (duration known in advance, an oracle). Note
that the Tiresias simulator's ``sjf`` is different ("smallest first": sorted by
GPU count and preemptive); this module follows the textbook definition used by
the SJF-BSBF and Lazer papers' baselines. Ties go to the earlier submission.
"""

from __future__ import annotations

import numpy as np

from gpusched.core.policy import KEY_SJF, Decision, Fused


class SJFPolicy:
    """Queued jobs by duration d_j ascending; never preempts."""

    name = "sjf"
    knows_duration = True
    needs_predictor = False
    work_conserving = True

    def __init__(self, *, rng: np.random.Generator | None = None) -> None:
        pass

    def fused(self) -> Fused:
        return Fused(KEY_SJF, preemptive=False, blocking=False)

    def decide(self, view, now: float) -> Decision:
        q = view.queued  # ascending index = submission order, so a stable sort breaks ties by it
        order = q[np.argsort(view.job_duration[q], kind="stable")]  # min d_j first
        return Decision(order=order)
