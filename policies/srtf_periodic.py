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

A cycle with no job waiting changes nothing (every unfinished job holds its GPUs or is
saving), and neither do the cycles after it until an arrival, a completion or a phase
end. Where ``interval`` is a whole number of slots (every cycle then falls on a decision
point), the policy asks for no wake-up then (:meth:`Cycles.sleep`), and the next decision
point waits for the first multiple of ``interval`` at or after it, as it would have. The
schedule is the same (a property test compares it with waking at every cycle); only the
idle decision points go: two jobs of 10^10 s each woke the engine every 360 s,
2.8 x 10^7 times.
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
        if view.queued.size == 0 and self._cycles.can_sleep(view.slot_s):
            # nothing waits: this cycle and every one before the next event keep every
            # holder where it is, so sleep until that event (no wake-up per interval)
            self._cycles.sleep()
            return Decision()
        holding = view.running[view.job_status[view.running] != SAVING]
        active = np.union1d(view.queued, holding)  # ascending index: ties by submission
        order = active[np.argsort(view.job_remaining[active], kind="stable")]  # min r_j first
        return Decision(order=order, preemptive=True, wake_at=self._cycles.next)
