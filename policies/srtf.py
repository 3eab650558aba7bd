"""Shortest remaining time first: preemptive; at every event all unfinished jobs are re-packed by remaining time.

Semantics of ``shortest_first_sim_jobs`` (``'shortest'``) in the Tiresias simulator
(SymbioticLab/Tiresias, ``simulator/run_sim.py``): at every arrival and completion,
all unfinished jobs in order of remaining time r_j get GPUs greedily while
\\sum g_j <= G, skipping those that do not fit; running jobs left out are
preempted. Deviation: the simulator re-places every job from scratch (free
migration); here running jobs keep their GPUs and new ones are placed
consolidated first, which selects the same jobs with GPU-count placement.
Ties go to the earlier submission.

On jobs made of data chunks (the edge-cloud family, ``view.tasks``) this is the
edge-cloud paper's SRTF baseline [16] ("jobs are scheduled in the non-decreasing order of
remaining training time"), job-level and all-or-nothing
(:class:`gpusched.algorithms.edge_cloud.JobLevel`): a job's remaining time is the work
its chunks have left over its k_j workers, at eq. 1's speed with zeta_j = 0. A job that
finds no room on the edge goes to the cloud, unless ``-p edge_only=true`` (which has no
effect on gang jobs).
"""

from __future__ import annotations

import numpy as np

from gpusched.algorithms.edge_cloud import JobLevel
from gpusched.core.policy import KEY_SRTF, Decision, Fused
from gpusched.core.state import SAVING


class SRTFPolicy:
    """All unfinished jobs by remaining time r_j ascending, preempting the rest."""

    name = "srtf"
    knows_duration = True
    needs_predictor = False
    work_conserving = True
    runs_tasks = True

    def __init__(self, *, edge_only: bool = False, rng: np.random.Generator | None = None) -> None:
        self.edge_only = edge_only
        self._rng = rng if rng is not None else np.random.default_rng(0)
        self._gang: JobLevel | None = None

    def prepare(self, jobs, cluster) -> None:
        self._gang = None

    def _job_remaining(self, view, jobs: np.ndarray) -> np.ndarray:
        """Remaining training time of each job made of chunks (see the module doc), s."""
        assert self._gang is not None
        tv = view.tasks
        rem = view.job_remaining
        out = np.empty(jobs.shape[0])
        for i, p in enumerate(jobs.tolist()):
            dur = float(view.job_duration[tv.first[p]])
            left = sum(float(rem[t]) for t in self._gang.begun[p])
            left += len(self._gang.todo[p]) * dur
            out[i] = left / self._gang.size(view, p) / tv.rate(p, 0)
        return out

    def fused(self) -> Fused:
        return Fused(KEY_SRTF, preemptive=True, blocking=False)

    def decide(self, view, now: float) -> Decision:
        if view.tasks is not None:
            if self._gang is None:
                self._gang = JobLevel(self._job_remaining, self._rng, edge_only=self.edge_only)
            return self._gang.decide(view, now)
        holding = view.running[view.job_status[view.running] != SAVING]
        active = np.union1d(view.queued, holding)  # ascending index: ties by submission
        order = active[np.argsort(view.job_remaining[active], kind="stable")]  # min r_j first
        return Decision(order=order, preemptive=True)
