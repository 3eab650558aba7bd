"""WCS-Duration: work-conserving fill by predicted duration, Heavy-Edge placement.

Baseline (3) of Z. Luo, J. Liu, M. Lee and N. B. Shroff, "Prediction-Assisted Online
Distributed Deep Learning Workload Scheduling in GPU Clusters", IEEE INFOCOM 2025,
arXiv:2501.05563, Sec. V-A 1-d: "WCS-Duration (Work-Conserving Scheduler, WCS [46] by
Duration): This approach continuously schedules jobs to use available GPUs within the
cluster following the order based on their predicted duration"; "All baselines adopt the
Heavy-Edge algorithm". WCS [46]: Zheng, Shroff, Srikant, Sinha, INFOCOM 2015.

Key :math:`\\tilde n_i\\tilde\\alpha_i^{min}` (random-forest iterations, Sec. V-B 2-d).
Non-preemptive; a job that does not fit is skipped and later ones fill the idle GPUs.
Servers with the most idle GPUs first, then Heavy-Edge; ties to the earlier submission.
"""

from __future__ import annotations

import numpy as np

from gpusched.pipeline_job import PipelineJobs, start_in_order
from gpusched.policy import Decision
from gpusched.predict import KINDS, fit_predictor


class WCSDurationPolicy:
    """Queued jobs by predicted duration ascending, skipping those that do not fit."""

    name = "wcs-duration"
    knows_duration = False
    needs_predictor = True
    work_conserving = True

    def __init__(
        self, *, predictor: str = "forest", rng: np.random.Generator | None = None
    ) -> None:
        from gpusched.errors import ParamError

        if predictor not in KINDS:
            raise ParamError(
                f"policy '{self.name}': predictor must be one of {', '.join(KINDS)}, "
                f"got '{predictor}'"
            )
        self.predictor = predictor
        self.seed = int(rng.integers(2**31)) if rng is not None else 0

    def prepare(self, jobs, cluster) -> None:
        self.pj = PipelineJobs(jobs, cluster)
        self.key = (
            fit_predictor(self.predictor, jobs, self.seed) * self.pj.alpha_min
        )  # n~_i alpha~_i^min, s

    def decide(self, view, now: float) -> Decision:
        q = view.queued
        order = q[np.argsort(self.key[q], kind="stable")]  # min predicted duration first
        return Decision(actions=start_in_order(view, self.pj, order, blocking=False))
