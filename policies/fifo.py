"""First-in first-out: jobs start in submission order; the first that does not fit blocks the rest.

Semantics of ``one_queue_fifo_sim_jobs`` in the Tiresias simulator
(SymbioticLab/Tiresias, ``simulator/run_sim.py``), against which results can be
cross-checked: strict head-of-line blocking, no preemption. ``-p backfill=true``
lets later jobs that fit go ahead of a blocked head (the simulator's ``fjf``,
"fit first"), which makes the policy work-conserving.
"""

from __future__ import annotations

import numpy as np

from gpusched.core.policy import KEY_FIFO, Decision, Fused


class FIFOPolicy:
    """Submission order, blocking unless ``backfill``."""

    name = "fifo"
    knows_duration = False
    needs_predictor = False

    def __init__(self, *, backfill: bool = False, rng: np.random.Generator | None = None) -> None:
        self.backfill = backfill
        self.work_conserving = backfill

    def fused(self) -> Fused:
        return Fused(KEY_FIFO, preemptive=False, blocking=not self.backfill)

    def decide(self, view, now: float) -> Decision:
        # view.queued is in submission order: the head of line goes first
        return Decision(order=view.queued, blocking=not self.backfill)
