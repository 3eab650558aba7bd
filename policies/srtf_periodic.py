"""SRTF run on a fixed period: the trigger behaviour of periodic schedulers (Pollux, Muri, Optimus).

Go et al., "Making Sense of Job Preemption for Distributed Deep Learning Acceleration",
DAC 2026, Sec. 3.2, "Cause 2": Pollux, Muri and Optimus "invoke their schedulers at fixed
intervals (every 60 s, 360 s, and 600 s, each)" and "do not make scheduling decisions
immediately upon job arrival or completion", so new jobs wait for the next cycle. The
paper's simulations compare against them through this trigger; this policy reproduces
only that: at every multiple of ``interval`` (s) it re-packs every unfinished job in order
of remaining time, exactly as ``srtf`` does at every event, and between two cycles it
changes nothing (an arrival waits, GPUs freed by a completion stay idle). It does not
reproduce those systems' allocation (Pollux's goodput-driven elastic resizing, Muri's
multi-resource interleaving, Optimus' performance model).

The kernel runs the same rule itself (``fused``: srtf's re-pack, due only at multiples of
``interval``), so a whole replay stays in Numba; the property tests check that both paths
give the same schedule and timeline.

Where the paper is silent: cycles fall on multiples of ``interval`` counted from time 0
(the trace's clock); a cycle whose time is not a slot boundary runs at the first decision
point after it; ties in remaining time go to the earlier submission, as in ``srtf``.
"""

from __future__ import annotations

from typing import Annotated

import numpy as np

from gpusched.core.policy import KEY_SRTF, Cycles, Decision, Fused, Range
from gpusched.core.state import SAVING


class SRTFPeriodicPolicy:
    """Every ``interval`` s: all unfinished jobs by remaining time r_j, preempting the rest."""

    name = "srtf-periodic"
    knows_duration = True
    needs_predictor = False
    work_conserving = False  # between cycles GPUs may stay idle while jobs wait

    def __init__(
        self,
        *,
        interval: Annotated[float, Range(0, 1e9, lo_open=True)] = 360.0,
        rng: np.random.Generator | None = None,
    ):
        self.interval = float(interval)
        self._cycles = Cycles(self.interval)

    def fused(self) -> Fused:
        # the same rule in the kernel: srtf's re-pack, due only at multiples of interval
        return Fused(KEY_SRTF, preemptive=True, blocking=False, period=self.interval)

    def decide(self, view, now: float) -> Decision:
        if not self._cycles.due(now):
            return Decision(wake_at=self._cycles.next)  # between cycles: nothing changes
        holding = view.running[view.job_status[view.running] != SAVING]
        active = np.union1d(view.queued, holding)  # ascending index: ties by submission
        order = active[np.argsort(view.job_remaining[active], kind="stable")]  # min r_j first
        return Decision(order=order, preemptive=True, wake_at=self._cycles.next)
