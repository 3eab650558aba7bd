"""WCS-SubTime: work-conserving fill in submission order, Heavy-Edge placement.

Baseline (5) of Z. Luo, J. Liu, M. Lee and N. B. Shroff, "Prediction-Assisted Online
Distributed Deep Learning Workload Scheduling in GPU Clusters", IEEE INFOCOM 2025,
arXiv:2501.05563, Sec. V-A 1-d: "WCS-SubTime: Variant of (3), arranged by submission
time"; "All baselines adopt the Heavy-Edge algorithm".

FIFO with backfilling: non-preemptive, a job that does not fit is skipped. Needs no
prediction. Servers: ``-p select=fewest`` (default: the fewest servers, best fit; the
paper does not say, see :mod:`gpusched.algorithms.predicted`), ``most`` or ``least``, then Heavy-Edge.
"""

from __future__ import annotations

import numpy as np

from gpusched.algorithms.pipeline_placer import start_in_order
from gpusched.algorithms.predicted import check_select
from gpusched.core.policy import Decision
from gpusched.jobmodels.pipeline_jobs import PipelineJobs


class WCSSubTimePolicy:
    """Queued jobs by submission time, skipping those that do not fit."""

    name = "wcs-subtime"
    knows_duration = False
    needs_predictor = False
    work_conserving = True

    def __init__(self, *, select: str = "fewest", rng: np.random.Generator | None = None) -> None:
        self.select = check_select(self.name, select)

    def prepare(self, jobs, cluster) -> None:
        self.pj = PipelineJobs(jobs, cluster)

    def decide(self, view, now: float) -> Decision:
        # view.queued is in submission order (job index = submission order)
        actions = start_in_order(view, self.pj, view.queued, blocking=False, select=self.select)
        return Decision(actions=actions)
