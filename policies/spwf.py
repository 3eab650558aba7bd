"""SPWF: shortest predicted workload (GPUs x duration) first, strict order, Heavy-Edge.

Baseline (2) of Z. Luo, J. Liu, M. Lee and N. B. Shroff, "Prediction-Assisted Online
Distributed Deep Learning Workload Scheduling in GPU Clusters", IEEE INFOCOM 2025,
arXiv:2501.05563, Sec. V-A 1-d: "SPWF (Shortest Predicted Workload First): This policy
proposed in Tiresias [14] schedules jobs according to the product of predicted durations
and the number of required GPUs"; "All baselines adopt the Heavy-Edge algorithm".

Key :math:`g_i\\tilde n_i\\tilde\\alpha_i^{min}` (random-forest iterations, Sec. V-B 2-d).
Non-preemptive. Choices (not in the paper): strict order, the first job that does not fit
blocks the rest (what distinguishes it from the work-conserving WCS-Workload); servers
with the most idle GPUs first, then Heavy-Edge; ties to the earlier submission.
"""

from __future__ import annotations

import numpy as np

from gpusched.pipeline_job import PipelineJobs, start_in_order
from gpusched.policy import Decision
from gpusched.predict import KINDS, fit_predictor


class SPWFPolicy:
    """Queued jobs by predicted workload g_i n~_i alpha~_i^min ascending; head-of-line blocking."""

    name = "spwf"
    knows_duration = False
    needs_predictor = True
    work_conserving = False

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
        pred = fit_predictor(self.predictor, jobs, self.seed)
        self.key = self.pj.n_gpus * pred * self.pj.alpha_min  # g_i n~_i alpha~_i^min, GPU-s

    def decide(self, view, now: float) -> Decision:
        q = view.queued
        order = q[np.argsort(self.key[q], kind="stable")]  # min predicted workload first
        return Decision(actions=start_in_order(view, self.pj, order, blocking=True))
