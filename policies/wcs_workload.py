"""WCS-Workload: work-conserving fill by predicted workload, Heavy-Edge placement.

Baseline (4) of Z. Luo, J. Liu, M. Lee and N. B. Shroff, "Prediction-Assisted Online
Distributed Deep Learning Workload Scheduling in GPU Clusters", IEEE INFOCOM 2025,
arXiv:2501.05563, Sec. V-A 1-d: "WCS-Workload: Variant of (3), sequencing by predicted
workload"; "All baselines adopt the Heavy-Edge algorithm".

Key :math:`g_i\\tilde n_i\\tilde\\alpha_i^{min}` (as SPWF's). Non-preemptive; a job that does
not fit is skipped. Servers by ``-p select=fewest`` (default: the fewest servers, best fit;
the paper does not say, see :mod:`gpusched.algorithms.predicted`), ``most`` or ``least``, then
Heavy-Edge; ties to the earlier submission.
"""

from __future__ import annotations

from gpusched.algorithms.predicted import PredictedOrderPolicy


class WCSWorkloadPolicy(PredictedOrderPolicy):
    """Queued jobs by predicted workload ascending, skipping those that do not fit."""

    name = "wcs-workload"
    by_workload = True
    work_conserving = True
