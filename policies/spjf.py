"""SPJF: shortest predicted job first, strict order (blocking), Heavy-Edge placement.

Baseline (1) of Z. Luo, J. Liu, M. Lee and N. B. Shroff, "Prediction-Assisted Online
Distributed Deep Learning Workload Scheduling in GPU Clusters", IEEE INFOCOM 2025,
arXiv:2501.05563, Sec. V-A 1-d: "SPJF (Shortest Predicted Job First): This approach
schedules jobs based on their predicted durations as proposed by MLaaS [6]"; "All baselines
adopt the Heavy-Edge algorithm for GPU mapping".

Predicted duration :math:`\\tilde n_i\\tilde\\alpha_i^{min}` (predicted iterations from the
random forest, "All other baselines use random forest regression", Sec. V-B 2-d, times the
ideal per-iteration time). Non-preemptive, as every policy of the paper.
Choices (the paper gives no more detail): the queue is served in strict order, so the
first job that does not fit blocks the rest; this is what distinguishes SPJF from the
work-conserving WCS-Duration (baseline 3), which skips it. Servers: ``-p select=fewest``
(default: the fewest servers, best fit; the paper does not say, see
:mod:`gpusched.algorithms.predicted`), ``most`` or ``least``; then Heavy-Edge. Ties: earlier submission.
"""

from __future__ import annotations

from gpusched.algorithms.predicted import PredictedOrderPolicy


class SPJFPolicy(PredictedOrderPolicy):
    """Queued jobs by predicted duration n~_i alpha~_i^min ascending; head-of-line blocking."""

    name = "spjf"
    by_workload = False
    work_conserving = False
