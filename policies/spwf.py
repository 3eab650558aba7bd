"""SPWF: shortest predicted workload (GPUs x duration) first, strict order, Heavy-Edge.

Baseline (2) of Z. Luo, J. Liu, M. Lee and N. B. Shroff, "Prediction-Assisted Online
Distributed Deep Learning Workload Scheduling in GPU Clusters", IEEE INFOCOM 2025,
arXiv:2501.05563, Sec. V-A 1-d: "SPWF (Shortest Predicted Workload First): This policy
proposed in Tiresias [14] schedules jobs according to the product of predicted durations
and the number of required GPUs"; "All baselines adopt the Heavy-Edge algorithm".

Key :math:`g_i\\tilde n_i\\tilde\\alpha_i^{min}` (random-forest iterations, Sec. V-B 2-d).
Non-preemptive. Choices (not in the paper): strict order, the first job that does not fit
blocks the rest (what distinguishes it from the work-conserving WCS-Workload); servers by
``-p select=fewest`` (default: the fewest servers, best fit; see :mod:`gpusched.algorithms.predicted`),
``most`` or ``least``, then Heavy-Edge; ties to the earlier submission.
"""

from __future__ import annotations

from gpusched.algorithms.predicted import PredictedOrderPolicy


class SPWFPolicy(PredictedOrderPolicy):
    """Queued jobs by predicted workload g_i n~_i alpha~_i^min ascending; head-of-line blocking."""

    name = "spwf"
    by_workload = True
    work_conserving = False
